"""``evalctl run SPEC_DIR``: run the scenarios, score them, print the outcome, pick the exit code."""

from __future__ import annotations

from dataclasses import replace

from rich.console import Console

from engine.commands.report import report
from engine.domains.registry import plugins
from engine.options import RunOptions
from engine.runner import RunReport, run_cli


def run(opts: RunOptions, fail_under: float | None = None) -> int:
    """Run what ``opts`` selects (see ``engine.runner.run``), then print the outcome. Returns the
    exit code: 130 when interrupted, 1 when ``fail_under`` (0..1) is set and the overall rate is
    below it or not applicable, else 0. Raises SpecError / UsageError / DataRootError before
    anything runs when the input is bad. The run gets every registered domain plugin
    (``opts.plugins`` is replaced; ``engine.runner.run_cli`` runs with other plugins)."""
    opts = replace(opts, plugins=plugins())
    return print_outcome(run_cli(opts), fail_under)


def print_outcome(outcome: RunReport, fail_under: float | None = None) -> int:
    """What ``evalctl run`` prints when it ends: the headline lines of ``all_summary.txt``, the
    report table with failures and the diff hint, scoring errors, where the results are, and why
    the exit code is not 0. Returns the exit code (130 interrupted, 1 under ``fail_under``, else 0)."""
    out = Console(soft_wrap=True, emoji=False)
    err = Console(stderr=True, soft_wrap=True, emoji=False)
    for line in outcome.summary_text().splitlines():
        if line.startswith(("Overall Success Rate", "Task Success Rate")):
            out.print(line, markup=False, highlight=False)
    if (outcome.run_dir / "summary.json").is_file():
        report(outcome.run_dir, out)
    for key, message in sorted(outcome.scoring_errors.items()):
        err.print(f"evalctl: scoring failed for {key}: {message}", markup=False, highlight=False)
    if outcome.skipped:
        out.print(f"{outcome.skipped} already complete (skipped)", markup=False, highlight=False)
    out.print(f"results: {outcome.run_dir}", markup=False, highlight=False)
    if outcome.interrupted:
        err.print(f"evalctl: interrupted; finished results kept in {outcome.run_dir}", markup=False)
    code = outcome.exit_code(fail_under)
    if code == 1 and fail_under is not None:
        rate = outcome.overall_rate()
        got = "not applicable" if rate is None else f"{100 * rate:.1f}%"
        err.print(
            f"evalctl: overall success rate {got} is below --fail-under {100 * fail_under:.1f}%",
            markup=False,
            highlight=False,
        )
    return code
