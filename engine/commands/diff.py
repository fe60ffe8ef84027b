"""``evalctl diff RUN_DIR [SCENARIO]``: why failed scenarios failed, as text or JSON."""

from __future__ import annotations

import json
from pathlib import Path

import click

from engine.commands import library
from engine.commands.console import warning_of_unreadable
from engine.results.diff import RESCORE_HINT, missing_results, passing_off_gold, render_text, unscored_results
from engine.results.provenance import resume_command
from engine.results.unreadable import records_text
from engine.util.untrusted import one_line


def diff(run_dir: Path, scenario: str | None = None, *, as_json: bool = False) -> int:
    """Print the explanation of every failed (scenario, trial) of ``run_dir`` (or of every trial
    of ``scenario``, failed or not; see ``engine.results.diff.diff_run``): readable text, or with
    ``as_json`` a JSON list with one object per (scenario, trial); then, on stderr, how many planned
    results are missing when the run did not finish. A record that does not read is a warning on
    stderr and a ``note:`` line with the count (in the text; on stderr with ``as_json``: JSON stays
    JSON). A stored session without its ``metrics.json`` is a warning of its own naming it (not
    scored) and a ``note:`` line counting those. Passing results whose agent left the gold path (a
    replay-caller run) are named on a ``note:`` line. Returns 0; raises UsageError when ``run_dir``
    holds no (readable) scored results or not ``scenario``."""
    with warning_of_unreadable() as found:
        diffs = library.diff(run_dir, scenario)
        missing = missing_results(run_dir) if scenario is None else 0
    unscored = [u for u in unscored_results(run_dir) if scenario is None or scenario in u.names(run_dir)]
    for item in unscored:  # each once, on stderr with the unreadable ones
        click.echo(one_line(item.warning(), 500), err=True)
    if as_json:
        click.echo(json.dumps([d.to_json() for d in diffs], indent=2, ensure_ascii=False, default=str))
    else:
        click.echo(render_text(diffs, run_dir), nl=False)
    off_gold = passing_off_gold(run_dir) if scenario is None else []
    if off_gold:  # a pass is not "followed the gold": say which did not (a new user's finding)
        shown = ", ".join(off_gold[:5]) + (f" and {len(off_gold) - 5} more" if len(off_gold) > 5 else "")
        click.echo(
            f"note: {len(off_gold)} passing result{'s' if len(off_gold) != 1 else ''} left the gold path "
            f"(the verdict's signals allow it: a skipped read, a write that changed nothing): "
            f"{one_line(shown, 400)}; `evalctl diff {run_dir} NAME` shows where",
            err=as_json,
        )
    if len(found):  # "no failed scenarios" must not read as "all passed"
        click.echo(
            f"note: {records_text(len(found))} (warned above): left out of this diff; "
            f"`evalctl rescore {run_dir}` scores a stored session again",
            err=as_json,
        )
    if unscored:  # "no failed scenarios" must not read as "all passed"
        count = len(unscored)
        click.echo(
            f"note: {count} result{'s' if count != 1 else ''} not scored (no metrics.json, warned above): "
            f"left out of this diff; {RESCORE_HINT.format(run_dir)}",
            err=as_json,
        )
    if missing:  # "no failed scenarios" must not read as "all passed" (on stderr: JSON stays JSON)
        click.echo(
            f"note: {missing} planned result{'s are' if missing != 1 else ' is'} missing (the run did not "
            f"finish); `{resume_command(run_dir)}` completes it",
            err=True,
        )
    return 0
