"""``evalctl report RUN_DIR``: the run summary as a table (rich), tokens (and with a price file
the cost) per role and per scenario, failures by name, a diff hint; with ``--html`` one
self-contained HTML file instead (``engine.report_html``).

Reads ``summary.json`` (written by ``finish_run``) and every result's ``metrics.json`` (for tokens
and cost, ``engine.results.costs``, and to say which no longer read); nothing else is recomputed
here. A record that does not read is a warning on stderr and a count in the report (exit 0); a
run with no readable result at all is bad input (UsageError, exit 2).
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from engine.commands.console import size_text, text_console, warning_of_unreadable
from engine.core.records.error_words import error_sources, errors_line, hints_text
from engine.core.records.intervals import Interval
from engine.core.records.metrics import MetricsRecord
from engine.core.records.summary import COUNT, FailedResult, SummaryRecord
from engine.results.costs import PriceTable, RunCost, money, run_costs
from engine.results.provenance import resume_command
from engine.results.scoring_stage import load_run_metrics, load_summary
from engine.results.unreadable import records_text, watching
from engine.scoring.passk import failed_every_trial
from engine.scoring.summary import failure_reason, headline_not_applicable, noise_lines, outcome_lines
from engine.util.errors import UsageError
from engine.util.untrusted import one_line


def _pct(rate: float | None) -> str:
    return "n/a" if rate is None else f"{100 * rate:.1f}%"


def _ci(ci: Interval | None) -> str:
    return "-" if ci is None else f"{100 * ci.low:.1f}-{100 * ci.high:.1f}%"


def _errors(n: int) -> str:
    return f" ({n} error{'' if n == 1 else 's'} left out)" if n else ""


def summary_table(summary: SummaryRecord) -> Table:
    """Headline rates then per-signal rates, each with its 95 % interval, its own count and unit
    (the errors left out), then pass^k with its interval and the scenarios it is over."""
    unit = summary.unit
    caption = None
    if summary.trials > 1:  # the rates count sessions; their intervals resample scenarios
        caption = (
            f"95% CI: by scenario (each of the {summary.scenarios} scenarios is one unit: its "
            f"{summary.trials} trials are not independent draws)"
        )
    table = Table(
        title=f"run: {escape(summary.run_dir)}",  # a run's and `evalctl report`'s table
        title_justify="left",
        caption=caption,
        caption_justify="left",
    )
    for col, justify in (
        ("metric", "left"),
        ("rate", "right"),
        ("95% CI", "right"),
        ("passed / total", "right"),
        ("role", "left"),
    ):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for label, t in (("Overall success", summary.overall), ("Task success (excl. clean_exit)", summary.task)):
        na = f" (+{t.not_applicable} N/A)" if t.not_applicable else ""
        counts = f"{t.passed}/{t.total} {unit}{na}{_errors(t.errors)}"
        table.add_row(label, _pct(t.rate), _ci(t.ci), counts, "composite")
        if t is summary.overall:  # the errors counted as failures: what --fail-under judges
            st = summary.strict_tally
            counts = f"{st.passed}/{st.total} {unit}; {st.errors} error{'' if st.errors == 1 else 's'}"
            table.add_row(
                "Strict success (errors count as failures)", _pct(st.rate), _ci(st.ci), counts, "composite"
            )
    table.add_section()
    for name, s in summary.signals.items():
        label = f"{name} (clean; {s.sum:g} found)" if s.kind == COUNT else name
        out = _errors(s.errors_left_out)
        table.add_row(label, _pct(s.rate), _ci(s.ci), f"{s.passed}/{s.total} {s.unit}{out}", s.role)
    phk = summary.pass_hat_k
    if phk is not None:
        table.add_section()
        per, cis = phk.per_scenario, phk.ci or {}
        for k, v in phk.overall.items():
            n = (phk.scenarios or {}).get(k)
            if n is None:  # a version 1 summary
                n = sum(1 for row in per.values() if k in row) if per else summary.scenarios
            table.add_row(
                f"pass^{k}",
                _pct(v),
                _ci(cis.get(k)),
                f"{n} scenarios{_errors(phk.errors_left_out)}",
                "trials",
            )
    return table


def usage_table(cost: RunCost) -> Table:
    """Tokens and requests per role, and the cost when a price table was given."""
    table = Table(
        title="tokens and cost per role" if cost.priced else "tokens per role", title_justify="left"
    )
    for col in (
        "role",
        "models",
        "prompt tokens",
        "completion tokens",
        "requests",
        *(("cost",) if cost.priced else ()),
    ):
        table.add_column(col, justify="left" if col in ("role", "models") else "right")
    for role, rc in cost.roles.items():
        priced = (money(rc.cost) + (f" (unpriced: {', '.join(rc.unpriced)})" if rc.unpriced else ""),)
        row = (
            role,
            ", ".join(rc.models) or "?",
            *rc.token_cells(),
            f"{rc.calls:,}",
        )
        table.add_row(*(escape(c) for c in (*row, *(priced if cost.priced else ()))))
    return table


def scenario_cost_table(cost: RunCost, trials: int) -> Table:
    """Cost per (scenario, trial), most expensive first, with its tokens."""
    table = Table(title=f"cost per scenario (prices: {escape(cost.source)})", title_justify="left")
    for col, justify in (("scenario", "left"), ("tokens", "right"), ("cost", "right")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for s in sorted(cost.scenarios, key=lambda s: (-(s.cost or 0.0), s.scenario, s.trial)):
        tokens = sum(r.prompt_tokens + r.completion_tokens for r in s.roles.values())
        name = s.scenario + (f" trial {s.trial}" if trials > 1 else "")
        unpriced = f" (unpriced: {', '.join(s.unpriced)})" if s.unpriced else ""
        table.add_row(escape(name), f"{tokens:,}", escape(money(s.cost) + unpriced))
    table.add_section()
    table.add_row("total", f"{cost.tokens:,}", escape(money(cost.cost)))
    return table


def report(
    run_dir: Path,
    console: Console | None = None,
    *,
    prices: PriceTable | None = None,
    html: Path | None = None,
    junit: Path | None = None,
    markdown: bool = False,
    baseline: Path | None = None,
    failed_every_trial: bool = False,
    just_written: bool = False,
    voice_cache: str | None = None,
    note: bool = True,
) -> int:
    """Print the report of ``run_dir`` on ``console`` (default: stdout, long lines unwrapped);
    with ``prices`` also the cost per role and per scenario; with ``html`` write the HTML report
    there instead and print its path and size; with ``markdown`` print the pull-request summary
    instead (``engine.results.markdown``; the flips against ``baseline`` when given); with
    ``junit`` also write the JUnit XML there (``engine.results.junit``) and say so on stderr.
    ``failed_every_trial``: the unsuccessful results listed (and the HTML scenario table) are only
    those of the scenarios that failed in every trial with a verdict (pass^k 0 for every k;
    ``engine.scoring.passk.failed_every_trial``). Each record that does not read is a warning line
    on stderr and counted in the report. ``just_written``: this process has just written every
    result of the run (``evalctl run`` printing its own report): the text report reads the
    ``metrics.json`` files back only for what needs more than ``summary.json`` (token costs,
    ``failed_every_trial``). The text report starts with the lines ``evalctl run`` prints
    (``engine.scoring.summary.outcome_lines``: headline rates, voice figures, the caller's note
    unless ``note`` is False, failures by cause), ``voice_cache`` (the run's own voice cache
    line) in its voice block. Returns 0. Raises UsageError when ``run_dir`` has no readable
    ``summary.json`` or no readable result, OSError when ``html`` or ``junit`` cannot be written.
    """
    console = console or text_console()
    with warning_of_unreadable():
        if junit is not None:
            from engine.results.junit import write_junit

            n = write_junit(run_dir, junit)
            text_console(stderr=True).print(
                f"junit: {n.path} ({n.tests} tests, {n.failures} failures, {n.errors} errors, "
                f"{n.skipped} skipped)",
                markup=False,
                highlight=False,
            )
        if markdown:
            from engine.results.markdown import markdown_summary

            console.out(markdown_summary(run_dir, baseline), end="", highlight=False)
            return 0
        if html is not None:
            return _html(run_dir, html, prices, console, failed_every_trial)
        return _text(run_dir, prices, console, failed_every_trial, just_written, voice_cache, note)


def _html(
    run_dir: Path, html: Path, prices: PriceTable | None, console: Console, failed_every_trial: bool = False
) -> int:
    from engine.report_html import write_report  # only for --html: it imports the diff machinery

    written = write_report(run_dir, html, prices, failed_every_trial=failed_every_trial)
    bad = f", {records_text(written.unreadable)}" if written.unreadable else ""
    console.print(
        f"report: {written.path} ({written.results} results{bad}, {size_text(written.size)})",
        markup=False,
        highlight=False,
    )
    return 0


def _text(
    run_dir: Path,
    prices: PriceTable | None,
    console: Console,
    failed_every_trial: bool = False,
    just_written: bool = False,
    voice_cache: str | None = None,
    note: bool = True,
) -> int:
    with watching() as found:
        summary = load_summary(run_dir)
        spent = any(u.prompt_tokens or u.completion_tokens for u in summary.usage.values())
        read_back = not just_written or prices is not None or spent or failed_every_trial
        metrics = load_run_metrics(run_dir) if read_back else []
    if read_back and not metrics and len(found):
        raise UsageError(f"{run_dir}: no readable results ({records_text(len(found))}, warned above)")
    for line in outcome_lines(summary, voice_cache, note):
        console.print(line, markup=False, highlight=False)
    console.print(summary_table(summary))
    if (why := headline_not_applicable(summary)) is not None:
        console.print(f"overall success not applicable: {why}", markup=False, highlight=False)
    # replay sides spend no tokens: no table to show
    if prices is not None or spent:
        cost = run_costs(metrics, prices)
        if cost.tokens or prices is not None:
            console.print(usage_table(cost))
        if prices is not None:
            console.print(scenario_cost_table(cost, summary.trials))
    if summary.errors:
        console.print(
            f"[red]errors:[/] {escape(errors_line(summary.errors, summary.failed))}; "
            f"{escape(hints_text(error_sources(summary.failed)))}; "
            f"first: {escape(one_line(summary.first_error or ''))}"
        )
    st = summary.stalled
    if st.count:
        console.print(
            f"[yellow]stalled:[/] {st.count} with fewer than {st.min_agent_turns} agent turns "
            "(or than the gold's) "
            f"({escape(', '.join(st.scenarios))}) - counted as failures, left out of signal rates"
        )
    if summary.missing:
        console.print(
            f"[yellow]missing:[/] {len(summary.missing)} results; "
            f"`{escape(resume_command(run_dir))}` completes them"
        )
    if len(found):
        console.print(
            f"[red]warning:[/] {records_text(len(found))} (warned above): left out of the tokens and "
            "costs read here; summary.json's rates count them only if it was written before they broke"
        )
    for line in noise_lines(summary):  # the noise floor of a run with trials, adaptive trials' spend
        console.print(one_line(line, None), markup=False, highlight=False)
    reasons = ", ".join(f"{k} {v}" for k, v in summary.stop_reasons.items()) or "none (no session ended)"
    console.print(f"stop reasons: {reasons}", markup=False, highlight=False)
    if summary.judge_errors:
        console.print(
            f"[yellow]judge errors:[/] {summary.judge_errors} (an error verdict where the judge gates); "
            f"first: {escape(one_line(summary.first_judge_error))}"  # a server's text: '[/INST]', newlines
        )
    failed = summary.failed
    if failed_every_trial:
        return _always_failed(run_dir, summary, metrics, console)
    if failed:
        console.print(f"[bold]Not successful ({len(failed)}):[/]")
        for f in failed:
            trial = f" trial {f.trial}" if summary.trials > 1 else ""
            console.print(f"  {f.scenario}{trial}: {failure_reason(f)}", markup=False, highlight=False)
        console.print(f"hint: `evalctl diff {run_dir}` shows why, field by field", markup=False)
    return 0


def _always_failed(
    run_dir: Path, summary: SummaryRecord, metrics: list[MetricsRecord], console: Console
) -> int:
    """The ``--failed-every-trial`` list: each scenario that failed in every trial with a verdict,
    with the failure reason of each of its failed trials."""
    outcomes: dict[str, list[bool | str]] = {}
    for m in metrics:
        outcomes.setdefault(m.scenario_name, []).append(m.is_successful)
    names = failed_every_trial(outcomes)
    trials = f" (all {summary.trials} trials)" if summary.trials > 1 else ""
    console.print(
        f"[bold]Failed in every trial{escape(trials)}: {len(names)} of {len(outcomes)} scenarios[/]"
    )
    by_name: dict[str, list[FailedResult]] = {}
    for f in summary.failed:
        by_name.setdefault(f.scenario, []).append(f)
    for name in names:
        reasons = sorted({failure_reason(f) for f in by_name.get(name, []) if f.verdict is False})
        console.print(f"  {name}: {'; '.join(reasons) or 'failed'}", markup=False, highlight=False)
    if names:
        console.print(f"hint: `evalctl diff {run_dir}` shows why, field by field", markup=False)
    return 0
