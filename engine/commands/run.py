"""``evalctl run SPEC_DIR``: run the scenarios, score them, print the outcome, pick the exit code."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from engine.commands.console import text_console
from engine.commands.report import report
from engine.core.options import RunOptions
from engine.core.records.common import ErrorSource
from engine.core.records.error_words import error_sources, errors_line, hints_text
from engine.domains.registry import plugins
from engine.results.costs import PriceTable
from engine.results.provenance import resume_command
from engine.results.run_report import RunReport
from engine.run.interrupt import CtrlC
from engine.run.runner import run_cli
from engine.session.tracing import OTLP_GIVE_UP
from engine.util.aio import stop_signals_interrupt
from engine.util.errors import INFRASTRUCTURE_EXIT, OutputError


def run(
    opts: RunOptions,
    fail_under: float | None = None,
    prices: PriceTable | None = None,
    allow_errors: bool = False,
    ray: str | None = None,
    junit: Path | None = None,
    otel: bool = False,
    trace_file: Path | None = None,
    note: bool = True,
) -> int:
    """Run what ``opts`` selects (see ``engine.run.runner.run``), then print the outcome. Returns the
    exit code (:meth:`engine.results.run_report.RunReport.exit_code`): 130 when interrupted, 3 when
    a planned result is missing or was not scored; 1 when ``fail_under`` (0..1) is set and the
    strict rate (errors counted as failures; with ``allow_errors`` the overall rate) is below it or
    not applicable; 3 when a result has the verdict ``error`` (unless ``allow_errors``); else 0.
    Raises SpecError / UsageError / DataRootError before anything runs when the input is bad,
    InfrastructureError (exit 3) when a model endpoint fails its check. The run gets every
    registered domain plugin (``opts.plugins`` is replaced; ``engine.run.runner.run_cli`` runs with
    other plugins). With ``prices`` the report at the end shows the cost per role and per
    scenario. ``ray``: run as shards on the Ray cluster at that address and merge them
    (``engine.run.ray_run``; exit 3 when a shard failed). ``junit``: also write the run's JUnit
    XML there (``engine.results.junit``) once it is scored; ``otel`` / ``trace_file``: export one
    trace per session (``engine.results.traces``) over OTLP/HTTP (the ``OTEL_EXPORTER_OTLP_*``
    variables; the collector is checked before the first session: InfrastructureError, exit 3,
    when it does not answer) and/or as OTLP JSON lines; the exit code is the same, but an
    unwritable ``junit`` or ``trace_file`` raises OutputError (exit 2) once the results, the
    summary and the other output are written. ``note`` False leaves the caller's note out of
    the printed summary (``--conditions``: said once, with the first condition)."""
    if otel or trace_file is not None:
        from engine.session.tracing import require_otel

        require_otel()
    if otel:
        from engine.session.otlp_check import check_otlp_collector

        check_otlp_collector()  # before the first session: exit 3 when no collector answers
    opts = replace(opts, plugins=plugins())
    if ray is None:
        outcome = run_cli(opts)  # what library.run_options does: opts has every plugin
        with CtrlC.while_printing(outcome):
            code = print_outcome(outcome, fail_under, prices, allow_errors, just_written=True, note=note)
        unwritten = _write_extras(outcome.run_dir, junit, otel, trace_file, prices)
        if opts.shard is not None:  # its rates are the slice's, not the selection's
            text_console().print(
                f"shard {opts.shard} of the selection: `evalctl merge` combines the shards into one run",
                markup=False,
                highlight=False,
            )
        if unwritten is not None:
            raise unwritten
        return code
    from engine.run.ray_run import run_on_ray  # Ray is an optional extra

    done = run_on_ray(opts, ray, tuple(sys.argv[1:]))
    err = text_console(stderr=True)
    code = print_outcome(RunReport(done.run_dir, summary=done.summary), fail_under, prices, allow_errors)
    unwritten = _write_extras(done.run_dir, junit, otel, trace_file, prices)
    for shard, message in sorted(done.failed.items()):
        err.print(f"evalctl: ray shard {shard} failed: {message}", markup=False, highlight=False)
    if unwritten is not None:
        raise unwritten
    return INFRASTRUCTURE_EXIT if done.failed and code in (0, 1) else code


def _write_extras(
    run_dir: Path, junit: Path | None, otel: bool, trace_file: Path | None, prices: PriceTable | None
) -> OutputError | None:
    """Write the JUnit file and export the traces (after the results and summary are written);
    the first OutputError of the two (an unwritable path), returned for the caller to raise once
    the other is done and the run's closing lines are printed."""
    first: OutputError | None = None
    try:
        _write_junit(run_dir, junit)
    except OutputError as err:
        first = err
    try:
        _export_traces(run_dir, otel, trace_file, prices)
    except OutputError as err:
        first = first or err
    return first


def _write_junit(run_dir: Path, junit: Path | None) -> None:
    """Write the JUnit file of a finished run, and say where; nothing when no result was scored."""
    if junit is None or not (run_dir / "summary.json").is_file():
        return
    from engine.results.junit import write_junit

    n = write_junit(run_dir, junit)
    text_console().print(
        f"junit: {n.path} ({n.tests} tests, {n.failures} failures, {n.errors} errors, {n.skipped} skipped)",
        markup=False,
        highlight=False,
    )


def _export_traces(run_dir: Path, otel: bool, trace_file: Path | None, prices: PriceTable | None) -> None:
    """Export the run's traces when asked, and say how many (on stderr when some failed)."""
    if not (otel or trace_file) or not (run_dir / "summary.json").is_file():
        return
    from engine.results.traces import export_run_traces

    try:  # a collector that stopped answering holds each export for its timeout: a stop cuts it
        with stop_signals_interrupt():
            n = export_run_traces(run_dir, otlp=otel, trace_file=trace_file, prices=prices)
    except KeyboardInterrupt:
        text_console(stderr=True).print(
            "evalctl: trace export stopped (Ctrl-C or SIGTERM); the run's results are all written",
            markup=False,
            highlight=False,
        )
        return
    done = [f"exported {n.exported} of {n.results} session(s) to OTLP"] if otel else []
    done += [f"wrote {n.traced} of {n.results} session(s) to {trace_file}"] if trace_file else []
    text_console().print(f"traces: {'; '.join(done)}", markup=False, highlight=False)
    why = [f"{n.unreadable} stored session(s) unreadable"] if n.unreadable else []
    why += [f"{n.otlp_failed} refused or lost by the OTLP collector"] if otel and n.otlp_failed else []
    if otel and n.gave_up:
        why[-1] += f" (after {OTLP_GIVE_UP} failed exports in a row the rest were not sent)"
    if why:
        text_console(stderr=True).print(
            f"evalctl: not every session trace exported: {', '.join(why)}", markup=False, highlight=False
        )


def print_outcome(
    outcome: RunReport,
    fail_under: float | None = None,
    prices: PriceTable | None = None,
    allow_errors: bool = False,
    just_written: bool = False,
    note: bool = True,
) -> int:
    """What ``evalctl run`` (and ``evalctl rescore``) prints when it ends: the run's report
    (``engine.commands.report.report``: the headline rates, the voice block with this process's
    voice cache line, the caller's note unless ``note`` is False, the table, failures and the
    diff hint), scoring errors, where the results are, and why the exit code is not 0.
    ``just_written``: this process wrote every result of the run. Returns the exit code (see
    ``run``)."""
    out = text_console()
    err = text_console(stderr=True)
    if (outcome.run_dir / "summary.json").is_file():  # the lines `evalctl report` prints too, then the table
        report(
            outcome.run_dir,
            out,
            prices=prices,
            just_written=just_written,
            voice_cache=outcome.voice_cache,
            note=note,
        )
    for key, message in sorted(outcome.scoring_errors.items()):
        err.print(f"evalctl: scoring failed for {key}: {message}", markup=False, highlight=False)
    if outcome.skipped:
        out.print(f"{outcome.skipped} already complete (skipped)", markup=False, highlight=False)
    out.print(f"results: {outcome.run_dir}", markup=False, highlight=False)
    if outcome.interrupted:
        err.print(f"evalctl: interrupted; finished results kept in {outcome.run_dir}", markup=False)
    code = outcome.exit_code(fail_under, allow_errors)
    if outcome.statistics_unavailable:
        err.print(
            f"evalctl: statistics unavailable: {outcome.statistics_unavailable}; the summary's 95% "
            "intervals are left out (results and summary are written), exit 3",
            markup=False,
            highlight=False,
        )
    if code == INFRASTRUCTURE_EXIT and (outcome.missing or outcome.scoring_errors):
        what = [f"{outcome.missing} result(s) missing"] if outcome.missing else []
        what += [f"{len(outcome.scoring_errors)} not scored"] if outcome.scoring_errors else []
        err.print(
            f"evalctl: {' and '.join(what)} (never run, or a stored session that cannot be read "
            f"back); `{resume_command(outcome.run_dir)}` runs them again",
            markup=False,
            highlight=False,
        )
    elif outcome.errors and not allow_errors and code in (1, INFRASTRUCTURE_EXIT):
        summary = outcome.summary
        first = f"; first: {summary.first_error}" if summary is not None and summary.first_error else ""
        sources = error_sources(summary.failed) if summary is not None else []
        resume = (
            f"`{resume_command(outcome.run_dir)}` runs them again, "
            if not sources or set(sources) - {ErrorSource.USER_SIMULATOR, ErrorSource.JUDGE}
            else ""
        )
        err.print(
            f"evalctl: {errors_line(outcome.errors, summary.failed if summary is not None else ())}"
            f"{first}; {hints_text(sources) + '; ' if sources else ''}{resume}--allow-errors exits 0",
            markup=False,
            highlight=False,
        )
    if code == 1 and fail_under is not None:
        rate = outcome.judged_rate(allow_errors)
        got = (
            "is not applicable (nothing measured), so not at least"
            if rate is None
            else f"{100 * rate:.1f}% is below"
        )
        which = (
            "overall success rate (errors left out: --allow-errors)"
            if allow_errors
            else "strict success rate"
        )
        err.print(
            f"evalctl: {which} {got} --fail-under {100 * fail_under:.1f}%",
            markup=False,
            highlight=False,
        )
    return code
