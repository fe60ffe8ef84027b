"""``evalctl load SPEC_DIR --ramp 10,50,100``: drive an agent with a ramp of concurrent callers
(``engine.run.load``), print the table, write ``load.json`` and ``load.html``, pick the exit code."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from dataclasses import replace

from engine.commands.console import text_console
from engine.core.options import RunOptions
from engine.core.records.load import LoadStep
from engine.domains.registry import plugins
from engine.report_html.load_page import load_page
from engine.results.load_figures import left_out, load_table
from engine.run.load import LoadOutcome, LoadPlan, run_load
from engine.util.aio import run_to_end
from engine.util.artifacts import dumps_json, write_text
from engine.util.errors import BELOW_BAR_EXIT, INFRASTRUCTURE_EXIT, INTERRUPTED_EXIT, OK_EXIT, OutputError


def load(opts: RunOptions, plan: LoadPlan) -> int:
    """Run the ramp ``plan`` with the run settings ``opts`` (every registered domain plugin), print
    one line per finished step on stderr (with the selected scenarios it left out, if any), then
    the table; write ``OUT/load.json`` and
    ``OUT/load.html`` (OUT: ``plan.output_dir``, by default a fresh ``runs/<UTC stamp>``).
    Returns 130 when interrupted, 3 when a step after the first could not run (its endpoint
    gone: the finished steps are still printed and written), 1 (``BELOW_BAR_EXIT``) when a step's
    failure share exceeded ``--fail-above`` (the ramp stopped after it), else 0. Raises what
    ``engine.run.load.run_load`` raises (exit 2, or 3 for an endpoint that fails its check) and
    OutputError when the load folder cannot be written."""
    opts = replace(opts, plugins=plugins())
    err = text_console(stderr=True)

    def said(step: LoadStep) -> None:
        missing = left_out(step)
        err.print(
            f"evalctl load: {step.callers} callers, {step.sessions} sessions in {step.wall_s:.1f}s: "
            f"failures and errors {100 * step.failure_share:.1f}%" + (f"; {missing}" if missing else ""),
            markup=False,
            highlight=False,
        )

    async def main() -> LoadOutcome:
        loop, task = asyncio.get_running_loop(), asyncio.current_task()
        assert task is not None
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):  # not the main thread
            loop.add_signal_handler(signal.SIGINT, task.cancel)
            loop.add_signal_handler(signal.SIGTERM, task.cancel)
        try:
            return await run_load(opts, plan, said)
        finally:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(signal.SIGINT)
                loop.remove_signal_handler(signal.SIGTERM)

    try:
        done = run_to_end(main())
    except asyncio.CancelledError:
        raise KeyboardInterrupt from None
    out = text_console()
    for line in load_table(done.record):
        out.print(line, markup=False, highlight=False, soft_wrap=True)
    folder = done.output_dir
    try:
        write_text(folder / "load.json", dumps_json(done.record.to_json()))
        write_text(folder / "load.html", load_page(done.record))
    except OSError as error:
        raise OutputError(f"cannot write {folder}/load.json: {error.strerror or error}") from None
    out.print(
        "overhead: evalctl's CPU time over the step's wall time (an in-process agent's included)",
        markup=False,
        highlight=False,
    )
    out.print(f"load: {folder / 'load.json'}, {folder / 'load.html'}", markup=False, highlight=False)
    if done.interrupted:
        err.print(f"evalctl: interrupted; the finished steps are in {folder}", markup=False)
        return INTERRUPTED_EXIT
    if done.failure is not None:
        err.print(f"evalctl: {done.failure}; the finished steps are in {folder}", markup=False)
        return INFRASTRUCTURE_EXIT
    return BELOW_BAR_EXIT if done.record.stopped_at is not None else OK_EXIT
