"""``evalctl report RUN_DIR``: the run summary as a table (rich), failures by name, a diff hint.

Reads ``summary.json`` (written by ``finish_run``); nothing is recomputed here.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from engine.records.summary import COUNT, SummaryRecord
from engine.results import load_summary
from engine.scoring.summary import failure_reason
from engine.untrusted import one_line


def _pct(rate: float | None) -> str:
    return "n/a" if rate is None else f"{100 * rate:.1f}%"


def summary_table(summary: SummaryRecord) -> Table:
    """Headline rates then per-signal rates, each with its own count and unit."""
    unit = summary.unit
    table = Table(title=f"evalctl run: {escape(summary.run_dir)}", title_justify="left")
    for col, justify in (
        ("metric", "left"),
        ("rate", "right"),
        ("passed / total", "right"),
        ("role", "left"),
    ):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for label, t in (("Overall success", summary.overall), ("Task success (excl. clean_exit)", summary.task)):
        na = f" (+{t.not_applicable} N/A)" if t.not_applicable else ""
        table.add_row(label, _pct(t.rate), f"{t.passed}/{t.total} {unit}{na}", "composite")
    table.add_section()
    for name, s in summary.signals.items():
        label = f"{name} (clean; {s.sum:g} found)" if s.kind == COUNT else name
        table.add_row(label, _pct(s.rate), f"{s.passed}/{s.total} {s.unit}", s.role)
    if summary.pass_hat_k is not None:
        table.add_section()
        per = summary.pass_hat_k.per_scenario
        for k, v in summary.pass_hat_k.overall.items():
            n = sum(1 for row in per.values() if k in row) if per else summary.scenarios
            table.add_row(f"pass^{k}", f"{v:.3f}", f"{n} scenarios", "trials")
    return table


def report(run_dir: Path, console: Console | None = None) -> int:
    """Print the report of ``run_dir`` on ``console`` (default: stdout, long lines unwrapped);
    returns 0. Raises UsageError when ``run_dir`` has no readable ``summary.json``.
    """
    # long lines stay whole when piped (grep); no emoji codes (":m:" in "openai:m: HTTP 401" is one)
    console = console or Console(soft_wrap=True, emoji=False)
    summary = load_summary(run_dir)
    console.print(summary_table(summary))
    st = summary.stalled
    if st.count:
        console.print(
            f"[yellow]stalled:[/] {st.count} with fewer than {st.min_agent_turns} agent turns "
            f"({escape(', '.join(st.scenarios))}) - counted as failures, left out of signal rates"
        )
    if summary.missing:
        console.print(
            f"[yellow]missing:[/] {len(summary.missing)} results; "
            f"`evalctl run ... --resume {escape(str(run_dir))}` completes them"
        )
    reasons = ", ".join(f"{k} {v}" for k, v in summary.stop_reasons.items())
    console.print(f"stop reasons: {reasons}", markup=False, highlight=False)
    if summary.judge_errors:
        console.print(
            f"[yellow]judge errors:[/] {summary.judge_errors} (recorded as N/A); "
            f"first: {escape(one_line(summary.first_judge_error))}"  # a server's text: '[/INST]', newlines
        )
    failed = summary.failed
    if failed:
        console.print(f"[bold]Not successful ({len(failed)}):[/]")
        for f in failed:
            trial = f" trial {f.trial}" if summary.trials > 1 else ""
            console.print(f"  {f.scenario}{trial}: {failure_reason(f)}", markup=False, highlight=False)
        console.print(f"hint: `evalctl diff {run_dir}` shows why, field by field", markup=False)
    return 0
