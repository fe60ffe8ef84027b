"""``evalctl compare RUN_A RUN_B``: flipped verdicts, rate changes and whether the runs are
comparable, as text, JSON or a self-contained HTML page (``engine.results.compare``)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from engine.commands.console import size_text, warning_of_unreadable
from engine.report_html.compare_page import write_compare
from engine.results.compare import compare_runs, render_text
from engine.results.costs import PriceTable


def compare_page_path(run_a: Path, run_b: Path) -> Path:
    """Where ``--html`` without a path writes the page: beside run B's results, named after run A
    (``RUN_B/compare-A.html``: comparisons of B with different baselines do not overwrite each
    other; a run's ``--conditions`` pages are ``RUN_DIR/compare-<label>.html`` too)."""
    return run_b / f"compare-{run_a.resolve().name}.html"


def compare(
    run_a: Path,
    run_b: Path,
    *,
    as_json: bool = False,
    html: Path | None = None,
    prices: PriceTable | None = None,
) -> int:
    """Print how run B differs from run A (text, or with ``as_json`` one JSON object); with
    ``html`` write the page there and print its path. ``prices`` adds the cost per role. Returns
    0 (whatever changed; a record that does not read is a warning line on stderr and a note);
    raises UsageError when either folder is not a finished run or has no readable result."""
    with warning_of_unreadable():
        comparison = compare_runs(run_a, run_b, prices)  # library.compare without prices
    if html is not None:
        size = write_compare(comparison, html)
        click.echo(f"compare: {html} ({size_text(size)})")
    elif as_json:
        click.echo(json.dumps(comparison.to_json(), indent=2, ensure_ascii=False, default=str))
    else:
        click.echo(render_text(comparison), nl=False)
    return 0
