"""One worker process of a ``--workers`` run (``engine.run.workers``): index the specs (or, forked,
share the run's index), serve its own built-in sides, run its share of the jobs into the shared
run folder (preparing only its share's scenarios, each for as long as its sessions run), and
report each finished session to the run's process over a pipe. SIGTERM stops it the way Ctrl-C
stops a run: the sessions in flight are cancelled, the finished ones are kept.

Messages (``(kind, body)`` tuples): ``("started", (name, trial))`` as each session starts, when
the task asks for it (``report_starts``: the user's own code runs here), then ``("talked",
(SessionResult without its DBs, their deltas))`` as its conversation ends; ``("done", [(Finished,
Outcome, SummaryRow or None), ...])`` for finished sessions (their progress line, their
``engine.results.outcomes.Outcome`` and, when scored, their row of the summary's running totals:
the run's process reads no result folder back); ``("scoring_error", (key, message))`` per session
that could not be stored or scored; ``("alive", None)`` every ``BEAT_S`` seconds (with
``report_starts``: its event loop runs); and ``("end", None)`` last, when the worker ran or was
stopped without crashing.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import signal
from multiprocessing.connection import Connection
from typing import Any

from engine.core.model import Scenario, SessionResult
from engine.core.records.metrics import MetricsRecord
from engine.core.tools.writeset import view_delta
from engine.results.outcomes import Outcome, outcome
from engine.results.resume import Job
from engine.results.run_report import RunReport
from engine.run import workers
from engine.run.process_end import release_process
from engine.run.progress import Finished
from engine.run.runner import run_here
from engine.run.workers import WorkerTask
from engine.scoring.summary_rows import SummaryRow, summary_row
from engine.session.backends.registry import parse_backend_spec
from engine.session.setup import side_for
from engine.spec.index import index_domain
from engine.util import end_wait, heap
from engine.util.aio import run_to_end

#: Seconds a finished session's progress line may wait to be sent with the next ones (a message per
#: session wakes the run's process once per session; on a busy machine that costs the worker time).
FLUSH_S = 0.1


class _Pipe:
    """The worker's progress sink: finished sessions, sent to the run in small batches (at most
    :data:`FLUSH_S` late). A session not yet sent when the worker dies is found on disk by the run."""

    def __init__(
        self, conn: Connection, report: RunReport, main: asyncio.Task[Any] | None, report_starts: bool = False
    ):
        self.conn = conn
        self.report_starts = report_starts
        self.report = report
        self.main = main
        self.batch: list[tuple[Finished, Outcome, SummaryRow | None]] = []
        self.timer: asyncio.TimerHandle | None = None

    def send(self, message: tuple[str, Any]) -> None:
        """Send ``message``; when the run's process is gone (the pipe is broken), stop this worker:
        nobody holds the run folder's lock any more."""
        try:
            self.conn.send(message)
        except OSError:
            if self.main is not None:
                self.main.cancel()

    def started(self, scenario_name: str, trial: int) -> None:
        """Sent at once (``report_starts``): should this process die, the run knows which sessions
        it was running (the agent's failures) and which it never started (run elsewhere)."""
        if self.report_starts:
            self.send(("started", (scenario_name, trial)))

    def talked(self, scenario: Scenario, result: SessionResult) -> None:
        """Sent at once (``report_starts``): should this process die before the session is scored,
        the run scores it (its verdict, not the crash's). Its DBs go as what the session changed
        (``engine.core.tools.writeset.view_delta``; a tau2 airline DB whole would cost a
        quarter of a second each way)."""
        if self.report_starts:
            self.send(
                (
                    "talked",
                    (dataclasses.replace(result, final_db=None, user_db=None), _deltas(scenario, result)),
                )
            )

    def done(self, result: SessionResult, metrics: MetricsRecord | None) -> None:
        key = f"{result.scenario_name}#{result.trial}"
        error = self.report.scoring_errors.pop(key, None)
        if error is not None:
            self.send(("scoring_error", (key, error)))
        row = summary_row(metrics) if metrics is not None else None
        self.batch.append((Finished.of(result, metrics), outcome(result, metrics), row))
        self.report.outcomes.clear()  # kept by the run's process
        if self.timer is None:
            self.timer = asyncio.get_running_loop().call_later(FLUSH_S, self.flush)

    def flush(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.batch:
            self.send(("done", self.batch))
            self.batch = []


def _deltas(scenario: Scenario, result: SessionResult) -> tuple[Any, Any]:
    """The session's final DB and user-side DB as changes to the scenario's initial ones (None:
    no such DB)."""
    db, user = result.final_db, result.user_db
    return (
        None if db is None else view_delta(scenario.initial_db, db),
        None if user is None else view_delta(scenario.user_initial_db or {}, user),
    )


def _beat(pipe: _Pipe, loop: asyncio.AbstractEventLoop) -> None:
    """Send ``("alive", None)`` now and every ``engine.run.workers.BEAT_S`` seconds."""
    pipe.send(("alive", None))
    loop.call_later(workers.BEAT_S, _beat, pipe, loop)


def _stopped(main: asyncio.Task[Any]) -> None:
    """The run's SIGTERM: the sessions in flight are cancelled, the end waits briefly
    (``engine.util.end_wait``; a second SIGTERM in that wait cuts it)."""
    end_wait.mark_stopped()
    main.cancel()


async def _work(task: WorkerTask, conn: Connection) -> None:
    opts = task.opts
    # forked: the run's scenario index (shells only); spawned: indexed here (checked again)
    loaded = task.loaded or index_domain(
        opts.spec_dir, opts.data_root, plugins=opts.plugins, language=opts.language
    )
    jobs = [
        Job(loaded.entries[name].shell, trial, action, superseded)
        for name, trial, action, superseded in task.jobs
    ]
    agent_spec, user_spec = parse_backend_spec(opts.agent), parse_backend_spec(opts.user)
    sides = {
        "agent": side_for(agent_spec, opts, loaded.live, "agent"),
        "user": side_for(user_spec, opts, loaded.live, "user"),
    }
    report = RunReport(task.run_dir)
    loop, me = asyncio.get_running_loop(), asyncio.current_task()
    pipe = _Pipe(conn, report, me, task.report_starts)
    if task.report_starts:  # signs of life: the run kills a worker whose event loop stays blocked
        _beat(pipe, loop)
    if me is not None:
        loop.add_signal_handler(signal.SIGTERM, _stopped, me)
    with heap.settled(), contextlib.suppress(asyncio.CancelledError):
        run_dir, voice = task.run_dir, task.voice
        invocation = task.invocation
        await run_here(jobs, opts, run_dir, invocation, sides, agent_spec, voice, pipe, report, None, loaded)
    pipe.flush()
    for key, message in report.scoring_errors.items():  # stores that failed before scoring
        pipe.send(("scoring_error", (key, message)))


def main(task: WorkerTask, conn: Connection) -> Any:
    """Run ``task``; the last message is ``("end", None)``."""
    try:
        run_to_end(_work(task, conn))
        with contextlib.suppress(OSError):
            conn.send(("end", None))
    finally:
        conn.close()
        # its writer's figures (``$EVALCTL_WRITER_STATS``: a worker skips atexit), and a voice run's
        # speech workers, stopped before multiprocessing joins them at this process's exit, or
        # that join waits for ever
        release_process()
