"""``evalctl diff RUN_DIR [SCENARIO]``: why failed scenarios failed, as text or JSON."""

from __future__ import annotations

import json
from pathlib import Path

import click

from engine.results.diff import diff_run, missing_results, render_text


def diff(run_dir: Path, scenario: str | None = None, *, as_json: bool = False) -> int:
    """Print the explanation of every failed (scenario, trial) of ``run_dir`` (or of every trial
    of ``scenario``, failed or not; see ``engine.results.diff.diff_run``): readable text, or with
    ``as_json`` a JSON list with one object per (scenario, trial); then, on stderr, how many planned
    results are missing when the run did not finish. Returns 0; raises UsageError
    when ``run_dir`` holds no scored results or not ``scenario``."""
    diffs = diff_run(run_dir, scenario)
    if as_json:
        click.echo(json.dumps([d.to_json() for d in diffs], indent=2, ensure_ascii=False, default=str))
    else:
        click.echo(render_text(diffs, run_dir), nl=False)
    missing = missing_results(run_dir) if scenario is None else 0
    if missing:  # "no failed scenarios" must not read as "all passed" (on stderr: JSON stays JSON)
        click.echo(
            f"note: {missing} planned result{'s are' if missing != 1 else ' is'} missing (the run did not "
            f"finish); `evalctl run ... --resume {run_dir}` completes it",
            err=True,
        )
    return 0
