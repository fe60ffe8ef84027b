"""``evalctl report RUN_DIR``: the run summary as a table (rich), failures by name, a diff hint.

Reads ``summary.json`` (written by ``finish_run``); nothing is recomputed here.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from engine.results import load_summary
from engine.scoring.summary import failure_reason
from engine.untrusted import one_line

if TYPE_CHECKING:
    from engine.runner import RunReport


def _pct(rate: float | None) -> str:
    return "n/a" if rate is None else f"{100 * rate:.1f}%"


def summary_table(summary: dict[str, Any]) -> Table:
    """Headline rates then per-signal rates, each with its own count and unit."""
    unit = summary["unit"]
    table = Table(title=f"evalctl run: {escape(str(summary.get('run_dir', '')))}", title_justify="left")
    for col, justify in (
        ("metric", "left"),
        ("rate", "right"),
        ("passed / total", "right"),
        ("role", "left"),
    ):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for label, key in (("Overall success", "overall"), ("Task success (excl. clean_exit)", "task")):
        t = summary[key]
        na = f" (+{t['not_applicable']} N/A)" if t["not_applicable"] else ""
        table.add_row(label, _pct(t["rate"]), f"{t['passed']}/{t['total']} {unit}{na}", "composite")
    table.add_section()
    for name, s in summary["signals"].items():
        label = f"{name} (clean; {s.get('sum')} found)" if s.get("kind") == "count" else name
        table.add_row(label, _pct(s["rate"]), f"{s['passed']}/{s['total']} {s['unit']}", s["role"])
    if "pass_hat_k" in summary:
        table.add_section()
        per = summary["pass_hat_k"].get("per_scenario") or {}
        for k, v in summary["pass_hat_k"]["overall"].items():
            n = sum(1 for row in per.values() if k in row) if per else summary["scenarios"]
            table.add_row(f"pass^{k}", f"{v:.3f}", f"{n} scenarios", "trials")
    return table


def print_report(run_dir: Path, console: Console | None = None) -> int:
    """Print the report of ``run_dir``; returns the number of unsuccessful results.

    Raises UsageError when ``run_dir`` has no ``summary.json``.
    """
    # long lines stay whole when piped (grep); no emoji codes (":m:" in "openai:m: HTTP 401" is one)
    console = console or Console(soft_wrap=True, emoji=False)
    summary = load_summary(run_dir)
    console.print(summary_table(summary))
    st = summary["stalled"]
    if st["count"]:
        console.print(
            f"[yellow]stalled:[/] {st['count']} with fewer than {st['min_agent_turns']} agent turns "
            f"({escape(', '.join(st['scenarios']))}) - counted as failures, left out of signal rates"
        )
    if summary.get("missing"):
        console.print(
            f"[yellow]missing:[/] {len(summary['missing'])} results; "
            f"`evalctl run ... --resume {escape(str(run_dir))}` completes them"
        )
    reasons = ", ".join(f"{k} {v}" for k, v in summary.get("stop_reasons", {}).items())
    console.print(f"stop reasons: {reasons}", markup=False, highlight=False)
    if summary.get("judge_errors"):
        console.print(
            f"[yellow]judge errors:[/] {summary['judge_errors']} (recorded as N/A); "
            f"first: {escape(one_line(summary['first_judge_error']))}"  # a server's text: '[/INST]', newlines
        )
    failed = summary["failed"]
    if failed:
        console.print(f"[bold]Not successful ({len(failed)}):[/]")
        for f in failed:
            trial = f" trial {f['trial']}" if summary["trials"] > 1 else ""
            console.print(f"  {f['scenario']}{trial}: {failure_reason(f)}", markup=False, highlight=False)
        console.print(f"hint: `evalctl diff {run_dir}` shows why, field by field", markup=False)
    return len(failed)


def print_run_outcome(report: RunReport, fail_under: float | None = None) -> int:
    """What ``evalctl run`` prints when it ends: the headline lines of ``all_summary.txt``, the
    report table with failures and the diff hint, scoring errors, where the results are, and why
    the exit code is not 0. Returns the exit code (130 interrupted, 1 under ``fail_under``, else 0)."""
    out = Console(soft_wrap=True, emoji=False)
    err = Console(stderr=True, soft_wrap=True, emoji=False)
    for line in report.summary_text().splitlines():
        if line.startswith(("Overall Success Rate", "Task Success Rate")):
            out.print(line, markup=False, highlight=False)
    if (report.run_dir / "summary.json").is_file():
        print_report(report.run_dir, out)
    for key, message in sorted(report.scoring_errors.items()):
        err.print(f"evalctl: scoring failed for {key}: {message}", markup=False, highlight=False)
    if report.skipped:
        out.print(f"{report.skipped} already complete (skipped)", markup=False, highlight=False)
    out.print(f"results: {report.run_dir}", markup=False, highlight=False)
    if report.interrupted:
        err.print(f"evalctl: interrupted; finished results kept in {report.run_dir}", markup=False)
    code = report.exit_code(fail_under)
    if code == 1 and fail_under is not None:
        rate = report.overall_rate()
        got = "not applicable" if rate is None else f"{100 * rate:.1f}%"
        err.print(
            f"evalctl: overall success rate {got} is below --fail-under {100 * fail_under:.1f}%",
            markup=False,
            highlight=False,
        )
    return code
