"""``--workers N``: a run's sessions in N worker processes sharing its run folder, its progress
display and its one summary.

The run's process indexes the specs (``engine.spec.index``: every scenario checked, then only its
name, shell and plan figures kept), plans the jobs, holds the folder's lock and deals the jobs
round-robin among the workers (``engine.run.shard.split``). Each worker (``engine.run.worker_child``)
starts with the index: forked (Linux, while the run's process has no other thread: the index is
already made) or spawned (a fresh interpreter that indexes the specs again; :func:`start_method`),
and prepares its own share's scenarios as their sessions start. It
serves its own built-in sides, runs its share of the concurrency C (the shares add up to C),
writes the scenario folders and sends the finished sessions' progress lines
(``engine.run.progress.Finished``) through a pipe, with each one's small outcome record and summary
row. The run's process shows progress,
keeps the outcomes and running totals as a one-process run does, and writes the summary at the
end without reading the result folders back.

- Small runs stay in one process: a spawned worker costs about a second to start (interpreter,
  imports, specs; a forked one a few milliseconds), so a run uses at most one worker per
  :data:`MIN_JOBS_PER_WORKER` jobs, and none when that makes one. A run whose plugins or voice
  settings cannot be sent to another process runs in one process too (a UsageError when
  ``--workers`` was given explicitly).
- Ctrl-C / SIGTERM: the run's process asks every worker to stop (SIGTERM; workers ignore SIGINT,
  the run's process decides), waits :data:`STOP_GRACE_S` for their finished writes, kills what is
  left, and writes the summary; the sessions that did not finish are missing, as in one process.
  Once every worker has reported every session, the run is complete: a stop then (a user-code
  worker still waiting at its end for threads the agent's code left running) kills the workers at
  once and says so in one line, and the run ends as complete (exit code and summary as without it).
- When the run's process itself is killed (``kill -9``), its workers get SIGTERM from the kernel
  (Linux) and stop as after Ctrl-C; forked workers share the run's lock, so it stays held until
  they have (a spawned worker does not hold it).
- A worker that dies (a crash, the OOM killer, ``kill -9``) fails its own unfinished sessions
  only: each gets the verdict ``error`` (source ``engine``, the message names the worker's exit
  code), written by the run's process; ``--resume`` runs them again. A session whose
  ``metrics.json`` was already written counts as done.
- An agent that runs the user's own code in the worker (``python:``, ``pipecat:``, ``livekit:``;
  ``runs_user_code``) is the one to answer for its process: each worker reports every session as
  it starts, and when one dies, the sessions it had in flight get the agent's ``agent_error`` (never
  an ``error`` left out of the rates: an agent must not be able to turn a hard scenario into one by
  crashing), while those it had not started run in a new worker (they were never tried, so no
  session gets a second attempt). Such an agent runs in one supervised worker even when the run is
  small enough for one process (:func:`isolated`), so its crash never takes the run and its summary.
  The same holds for a caller simulator of the user's own code (``--user python:...``), except that
  its crash is the simulator's: its sessions in flight are ``error`` results (source
  ``user_simulator``), not the agent's failures (when both sides are the user's code, the agent
  answers: an agent must not be able to pass its crash off as the caller's).
  A session whose conversation had ended is scored by the run's process with its real result. Such
  a worker also sends a sign of life every :data:`BEAT_S`; one silent for the turn timeout plus
  :data:`HANG_GRACE_S` (its event loop blocked by the agent's code, so no timeout can fire in it) is
  killed and handled as a crash: a blocked agent cannot hang the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import multiprocessing
import os
import pickle
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from engine.core.model import SessionResult, StopReason
from engine.core.options import RunOptions
from engine.core.records.common import SpentUsage
from engine.core.tools.writeset import apply_delta
from engine.results.resume import Job
from engine.results.scorer import Scorer, off_loop, release_threads
from engine.results.session_files import METRICS, read_metrics, read_session, scenario_dir
from engine.run.progress import Finished, Progress
from engine.run.shard import split
from engine.scoring import stats
from engine.session.backends.registry import parse_backend_spec, scheme_of
from engine.util import end_wait
from engine.util.aio import exit_process
from engine.util.errors import SpecError, UsageError
from engine.util.parent import stop_with_parent, watch_parent

if TYPE_CHECKING:
    from engine.session.voice.run import VoiceRun

#: A worker per this many jobs at most (fewer jobs: fewer workers; under 2 x this: one process).
MIN_JOBS_PER_WORKER = 40
#: Seconds the run's process waits for stopped workers to finish their writes before killing them.
STOP_GRACE_S = 20.0
#: Seconds between a user-code agent's worker's signs of life (its event loop runs: ``("alive", None)``).
BEAT_S = 2.0
#: Seconds beyond the run's turn timeout that such a worker may stay silent before it is killed: its
#: event loop is blocked (a synchronous call in the agent's async code), so no timeout of its own
#: can fire, and by then every turn in flight is past the turn timeout.
HANG_GRACE_S = 10.0
#: What a stop once every session was reported says (:func:`_cut_end_wait`).
CUT_END_WAIT = "the stop (Ctrl-C or SIGTERM) cut the wait for worker process"
#: The module a worker runs (``main(task, conn)``); named, not imported: it imports the runner.
CHILD = "engine.run.worker_child"

#: The thread importing scipy for the summary (:func:`engine.scoring.stats.preload`), started once
#: the workers are forked: the import (about 0.5 s of CPU) then overlaps the sessions instead of
#: delaying the summary, and no thread runs while this process forks (:func:`start_method`).
_PRELOAD: threading.Thread | None = None


@dataclass(frozen=True)
class WorkerTask:
    """One worker's share: the run's options (its concurrency already divided), folder,
    invocation id, voice settings, its jobs as ``(scenario name, trial, action, superseded)``,
    and (forked workers only) the run's scenario index (``engine.spec.index.index_domain``'s
    result: names and shells; the worker prepares its own share's scenarios)."""

    opts: RunOptions
    run_dir: Path
    invocation: str
    voice: Any
    jobs: tuple[tuple[str, int, str, tuple[SpentUsage, ...]], ...]
    number: int = 1
    loaded: Any = None  # the run's scenario index, for a forked worker (never pickled)
    report_starts: bool = False  # send ("started", (name, trial)) as each session starts


@dataclass
class _Worker:
    task: WorkerTask
    process: Any
    conn: Connection
    reported: set[tuple[str, int]] = field(default_factory=set)
    #: sessions it reported as not written or not scored (``scoring_error``: a folder that could
    #: not be written, a disk full): accounted for, not lost with the worker
    unwritten: set[tuple[str, int]] = field(default_factory=set)
    started: set[tuple[str, int]] = field(default_factory=set)  # with ``task.report_starts``
    #: ended, not yet scored: the result without its DBs, and the DBs' deltas (``view_delta``)
    talked: dict[tuple[str, int], tuple[SessionResult, tuple[Any, Any]]] = field(default_factory=dict)
    heard: float = 0.0  # loop time of its last message (or its start)
    silent_s: float | None = None  # killed after this many seconds without a message (a blocked loop)
    stopping: bool = False  # this process asked it to stop (Ctrl-C, SIGTERM of the run)
    all_done_at: float | None = None  # loop time it reported its last session
    lingered: bool = False  # killed for not ending after its last session
    exit_fd: int | None = None  # readable once the process has ended (:func:`_exit_fd`)
    eof: bool = False  # its pipe reached end of file
    ended: bool = False  # sent its last message (it finished or was stopped)
    closed: asyncio.Future[None] | None = None


def worker_count(opts: RunOptions, jobs: int, voice: VoiceRun | None) -> int:
    """How many worker processes the run uses: ``opts.workers``, at most one per
    :data:`MIN_JOBS_PER_WORKER` jobs and at most ``opts.concurrency``; 1 (this process) for small
    runs and for runs whose plugins or voice settings cannot be sent to a worker (UsageError then
    when ``--workers`` was explicit)."""
    if opts.workers < 1:
        raise UsageError("--workers must be at least 1")
    count = min(opts.workers, jobs // MIN_JOBS_PER_WORKER, opts.concurrency)  # every worker runs one at least
    if count <= 1:
        return 1
    for what, value in (("domain plugins", opts), ("voice settings", voice)):
        try:
            pickle.dumps(value)
        except Exception as err:
            if "workers" not in opts.explicit:
                return 1
            raise UsageError(
                f"--workers {opts.workers}: the run's {what} cannot be sent to worker processes "
                f"({type(err).__name__}); leave --workers out or give --workers 1"
            ) from None
    return count


def isolated(opts: RunOptions, note: bool = True) -> bool:
    """True when a run that needs one process runs in one supervised worker instead: its agent
    or its caller simulator runs the user's own code (:func:`_user_code_here`),
    ``opts.isolate_agent_code`` is set and
    the worker can be forked (:func:`start_method`: milliseconds, nothing to pickle; where only
    spawning is possible, a second of start-up per run, the run stays in this process, and says
    so unless ``opts.quiet``). Lets this process's idle helper threads go first (an earlier run's
    writer, the statistics import): they would rule the fork out. ``note``: say so when it cannot."""
    if not (opts.isolate_agent_code and _user_code_here(opts)):
        return False
    release_threads()
    if _PRELOAD is not None:
        _PRELOAD.join()
    if start_method() == "fork":
        return True
    if note and not opts.quiet:
        print(
            "evalctl: your own code (the agent or the caller simulator) runs in this process (no "
            "worker can be forked here: other threads run, or this is not Linux); a crash in it ends the run",
            file=sys.stderr,
        )
    return False


def probe_user_code(opts: RunOptions, role: str, spec: str, build: Callable[[], Any]) -> None:
    """Load the user's own code of side ``role`` (``spec``: ``python:``, ``pipecat:``, ``livekit:``)
    once in a forked process first (``build``: what loads it), when that side will run in a
    supervised worker (:func:`isolated`): code that ends its process as it loads (``os._exit``, a
    segfault at import) ends the probe, not the run, which would otherwise stop without a word (with
    ``os._exit(0)``: exit 0, nothing run). Raises UsageError then; an ordinary error of ``build``
    (a target that does not load) is left for this process's own load to raise."""
    if not (_runs_user_code(spec) and isolated(opts, note=False)):  # the run says it, if need be
        return
    with contextlib.suppress(Exception):  # nothing of the run's left in a buffer the fork copies
        sys.stdout.flush()
    try:
        read_end, write_end = os.pipe()
        pid = os.fork()
    except OSError:  # no process to spare (EAGAIN, ENOMEM): loaded here only, as before
        return
    if pid == 0:  # the probe: load, say how it went, leave at once (no cleanup of the run's state)
        os.close(read_end)
        stdout_to_stderr()  # what the code prints as it loads: never on the run's stdout
        word = b"error"
        try:
            build()
            word = b"ok"
        except BaseException:
            pass
        os.write(write_end, word)
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as said:
        word = said.read()
    _, status = os.waitpid(pid, 0)
    if word:
        return
    code = os.waitstatus_to_exitcode(status)
    raise UsageError(
        f"--{role} {spec}: loading it ended its process ({_exit_text(code)}) before it could run: "
        "its module does that at import, or its factory's set-up does"
    )


def start_method() -> Literal["fork", "spawn"]:
    """How workers start: ``fork`` on Linux while this process runs no other thread (a worker then
    starts in milliseconds with the specs already loaded and frozen: no interpreter start, imports
    or spec loading, about a second of CPU per worker), else ``spawn`` (a fresh interpreter; the
    only safe way once threads run, and the only one on macOS and Windows)."""
    if sys.platform.startswith("linux") and threading.active_count() == 1:
        return "fork"
    return "spawn"


def stdout_to_stderr() -> None:
    """In a worker process (or the probe of :func:`probe_user_code`): file descriptor 1 and
    ``sys.stdout`` go to stderr, so what the agent's code prints (a fake ``Overall Success Rate``
    line, a terminal escape) reaches evalctl's stderr, never its stdout, which carries only the
    run's own output (its table: ``evalctl run ... | grep``). A process the agent starts inherits
    that descriptor 1. With no stderr (descriptor 2 closed) they go to ``os.devnull``. The worker
    talks to the run's process over its pipe only. Whatever the run's stdout buffer held was flushed
    before the fork (``multiprocessing`` does; so does :func:`probe_user_code`): the buffer is
    not flushed again here, where it would be printed twice."""
    try:
        os.dup2(2, 1)
    except OSError:  # no stderr
        with contextlib.suppress(OSError):
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.close(null)
    sys.stdout = sys.stderr


@contextlib.contextmanager
def loading_user_code(spec: str) -> Iterator[None]:
    """While the run's process loads side ``spec`` when it is the user's own code (``python:``,
    ``pipecat:``, ``livekit:``: its check before the sessions, even when they run in workers):
    what the code prints as it loads (at import, say) goes to stderr, descriptor 1 included, as it
    does in a worker (:func:`stdout_to_stderr`); the run's stdout is restored after. Nothing else
    runs then (one thread), so nothing of evalctl's own is sent astray."""
    if not _runs_user_code(spec):
        yield
        return
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no stdout: nothing to keep clean at the descriptor
        saved = -1
    moved = False
    if saved >= 0:
        try:
            os.dup2(2, 1)
            moved = True
        except OSError:  # no stderr
            pass
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        if saved >= 0:
            if moved:
                os.dup2(saved, 1)
            os.close(saved)


def _bootstrap(module: str, task: WorkerTask, conn: Connection, parent: int = 0) -> None:
    """A worker process's entry: ``module.main(task, conn)`` (SIGINT ignored: the run's process
    stops its workers with SIGTERM). A forked worker first leaves the run's event loop behind:
    no running loop, no signal wake-up descriptor, SIGTERM's default action until its own loop
    handles it (Python 3.12 does the first two itself at fork)."""
    import importlib

    stdout_to_stderr()  # before any code of the user's is loaded here
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if task.loaded is not None:
        asyncio._set_running_loop(None)
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    stop_with_parent(parent)
    if task.report_starts:  # the user's code runs here: it may block the loop, or start processes
        with contextlib.suppress(OSError):
            os.setpgid(0, 0)  # its own group: what the agent leaves behind is killed with it
        watch_parent(parent, grace_s=STOP_GRACE_S)  # a blocked loop cannot act on SIGTERM
    importlib.import_module(module).main(task, conn)
    if task.report_starts:  # a thread of the agent's that never ends is named, not waited for
        exit_process(0)


def _tasks(
    jobs: list[Job], count: int, opts: RunOptions, run_dir: Path, invocation: str, voice: Any
) -> list[WorkerTask]:
    """The jobs dealt round-robin into ``count`` shares (``count`` at most the run's concurrency
    C), each with the run's options for one worker: no display of its own, and a share of C (the
    shares differ by one at most and add up to C: ``--concurrency`` bounds the whole run)."""
    share_of_c = [opts.concurrency // count + (n < opts.concurrency % count) for n in range(count)]
    shares = split(jobs, count)
    return [
        WorkerTask(
            dataclasses.replace(opts, concurrency=c, progress=False, quiet=True, workers=1),
            run_dir,
            invocation,
            voice,
            tuple((j.scenario.name, j.trial, j.action, j.superseded) for j in share),
            number=n,
        )
        for n, (share, c) in enumerate(zip(shares, share_of_c, strict=True), start=1)
    ]


async def run_in_workers(
    jobs: list[Job],
    count: int,
    opts: RunOptions,
    run_dir: Path,
    invocation: str,
    voice: Any,
    progress: Progress,
    report: Any,
    loaded: Any = None,
) -> bool:
    """Run ``jobs`` in ``count`` worker processes (module docstring); each finished session goes
    to ``progress``, its outcome to ``report.outcomes`` and its summary row to ``report.totals``;
    scoring errors the workers report go to ``report.scoring_errors``.
    Cancellation stops the workers (then re-raises); a worker that dies fails its own sessions
    (those a user-code agent's worker had not started run again in new workers: each round runs
    fewer jobs than the one before, since its dead workers had finished or failed one at least).
    Returns True when a stop (Ctrl-C, SIGTERM) came once every session had been reported: the
    workers were killed at once, nothing was lost, and the caller starts no further work."""
    while jobs:
        jobs, stopped = await _round(jobs, count, opts, run_dir, invocation, voice, progress, report, loaded)
        if stopped:
            return True
        count = max(1, min(count, len(jobs) // MIN_JOBS_PER_WORKER))
    return False


async def _round(
    jobs: list[Job],
    count: int,
    opts: RunOptions,
    run_dir: Path,
    invocation: str,
    voice: Any,
    progress: Progress,
    report: Any,
    loaded: Any = None,
) -> tuple[list[Job], bool]:
    """One round of :func:`run_in_workers`: ``jobs`` in ``count`` workers; returns the jobs to run
    again (those a dead user-code agent's worker never started), and whether a stop came once
    every session had been reported (:func:`_cut_end_wait`)."""
    global _PRELOAD
    loop = asyncio.get_running_loop()
    release_threads()  # idle write threads would make forking unsafe
    if _PRELOAD is not None:  # an earlier batch's (adaptive rounds) ends before this one forks
        _PRELOAD.join()  # no helper thread to wait in: it would be running at the fork
    method = start_method()
    # one literal per call: typeshed types a context with Process() only for a literal method name
    ctx = multiprocessing.get_context("fork") if method == "fork" else multiprocessing.get_context("spawn")
    workers: list[_Worker] = []
    by_key = {(j.scenario.name, j.trial): j for j in jobs}
    own_code = _user_code_here(opts)
    tasks = _tasks(jobs, count, opts, run_dir, invocation, voice)
    stopped = False
    try:
        for task in tasks:
            task = dataclasses.replace(task, report_starts=own_code)
            if method == "fork":  # the worker starts with this process's loaded specs
                task = dataclasses.replace(task, loaded=loaded)
            recv, send = ctx.Pipe(duplex=False)
            proc = ctx.Process(
                target=_bootstrap,
                args=(CHILD, task, send, os.getpid()),
                name=f"evalctl-worker-{task.number}",
                # not daemonic: a voice run's worker starts its own speech pool (a daemonic
                # process may start none); this process joins or kills every worker itself
                daemon=False,
            )
            proc.start()
            send.close()  # the worker holds the only writing end: its exit closes the pipe
            worker = _Worker(task, proc, recv, closed=loop.create_future(), heard=loop.time())
            read = _reader(worker, progress, report)
            loop.add_reader(recv.fileno(), read)
            worker.exit_fd = _exit_fd(proc)
            loop.add_reader(worker.exit_fd, _exited(worker, read))
            workers.append(worker)
        _PRELOAD = stats.preload()  # every worker is forked: the summary's statistics load meanwhile
        limit = opts.turn_timeout_s + HANG_GRACE_S + (0.0 if method == "fork" else 60.0)  # spawn: imports
        watch = asyncio.create_task(_watch(workers, limit)) if own_code else None
        try:
            await asyncio.gather(*(asyncio.shield(w.closed) for w in workers if w.closed is not None))
        finally:
            if watch is not None:
                watch.cancel()
    except asyncio.CancelledError:
        if not _all_reported(workers, len(tasks)):
            await _stop(workers)
            raise
        current = asyncio.current_task()
        if current is not None:  # the run is complete: no cancellation left for the caller to see
            current.uncancel()
        await _cut_end_wait(workers)
        stopped = True
    finally:
        for w in workers:
            with contextlib.suppress(Exception):
                loop.remove_reader(w.conn.fileno())
    again: list[Job] = []
    for w in workers:
        _kill_group(w)  # first: a process it left holding its sentinel would hold up the join
        await off_loop(w.process.join, STOP_GRACE_S)
        if w.lingered and not opts.quiet:
            print(
                f"evalctl: worker process {w.task.number} (pid {w.process.pid}) did not end within "
                f"{STOP_GRACE_S:.0f} s of its last session (something of the agent's that does not "
                "end: an asyncio task ignoring cancellation, or a blocking call in a thread): killed; "
                "every session had been reported",
                file=sys.stderr,
            )
        # a session it reported as not written (its folder could not be written) is accounted for
        unfinished = len(w.reported | w.unwritten) < len(w.task.jobs)
        if not w.ended or (unfinished and not w.stopping):  # died, or stopped by someone else
            # its untried sessions run again only when it finished or failed one at least
            untried = [k for k in _keys(w) if k not in w.started] if w.started else []
            await _fail_unfinished(w, by_key, opts, run_dir, invocation, progress, report, loaded, untried)
            again += [by_key[k] for k in untried]
    return again, stopped


def _all_reported(workers: list[_Worker], count: int) -> bool:
    """True when all ``count`` workers were started and each has reported every one of its
    sessions (the run's process has read them): the results are complete, whatever the workers
    still do at their end."""
    return len(workers) == count and all(len(w.reported) >= len(w.task.jobs) for w in workers)


async def _cut_end_wait(workers: list[_Worker]) -> None:
    """A stop (Ctrl-C, SIGTERM) once every session was reported: kill the workers still running
    at once (a user-code worker may wait up to ``engine.util.aio.GRACE_S`` at its end for threads
    the agent's code left running: ``exit_process``) and say so in one line; nothing is lost."""
    lingering = [w for w in workers if w.process.is_alive()]
    for w in lingering:
        _kill_group(w)
        with contextlib.suppress(OSError):
            w.process.kill()
    waiting = [w.closed for w in workers if w.closed is not None and not w.closed.done()]
    if waiting:  # killed: their exit descriptors say so at once
        with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.gather(*waiting), STOP_GRACE_S)
    if lingering:
        which = ", ".join(f"{w.task.number} (pid {w.process.pid})" for w in lingering)
        print(
            f"evalctl: {CUT_END_WAIT} {which} to end (threads or tasks the agent's code left running): "
            "killed; every session had been reported, nothing is lost",
            file=sys.stderr,
        )


async def _watch(workers: list[_Worker], limit: float) -> None:
    """Kill each worker silent for more than ``limit`` seconds (its event loop is blocked)."""
    loop = asyncio.get_running_loop()
    while True:
        await asyncio.sleep(min(BEAT_S, limit / 2))
        now = loop.time()
        for w in workers:
            running = w.closed is not None and not w.closed.done() and w.process.is_alive()
            if running and now - w.heard > limit:
                w.silent_s = now - w.heard
                w.process.kill()
            elif running and w.all_done_at is not None and now - w.all_done_at > STOP_GRACE_S:
                w.lingered = True  # every session reported, yet it does not end: nothing is lost
                w.process.kill()


def _kill_group(worker: _Worker) -> None:
    """Kill what is left of a user-code worker's process group (it leads its own:
    :func:`_bootstrap`): processes the agent's code started and left behind, which would outlive
    the run."""
    pid = worker.process.pid
    if worker.task.report_starts and pid is not None and sys.platform.startswith("linux"):
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)


def _keys(worker: _Worker) -> list[tuple[str, int]]:
    return [(name, trial) for name, trial, _, _ in worker.task.jobs]


def _reader(worker: _Worker, progress: Progress, report: Any) -> Callable[[], None]:
    """The pipe's read callback: one message per call; EOF closes the worker."""

    def read() -> None:
        loop = asyncio.get_running_loop()
        worker.heard = loop.time()
        try:
            kind, body = worker.conn.recv()
        except (EOFError, OSError):
            worker.eof = True
            if worker.exit_fd is not None and worker.exit_fd != worker.process.sentinel:
                with contextlib.suppress(Exception):
                    loop.remove_reader(worker.conn.fileno())  # its pidfd says when it has ended
                return
            _close(worker)
            return
        if kind == "done":
            for fin, done, row in body:
                worker.reported.add((fin.scenario_name, fin.trial))
                worker.talked.pop((fin.scenario_name, fin.trial), None)
                report.add_reported(done, row)
                progress.show(fin)
            if len(worker.reported) >= len(worker.task.jobs):
                worker.all_done_at = loop.time()
        elif kind == "started":
            worker.started.add(body)
            worker.talked.pop(body, None)  # a new attempt (a broken caller's session run again)
        elif kind == "talked":
            worker.talked[(body[0].scenario_name, body[0].trial)] = body
        elif kind == "scoring_error":
            key, message = body
            report.scoring_errors[key] = message
            name, _, trial = key.rpartition("#")  # ``name#trial``
            if trial.isdigit():
                worker.unwritten.add((name, int(trial)))
        elif kind == "end":
            worker.ended = True

    return read


def _close(worker: _Worker) -> None:
    """The worker is gone (its pipe's EOF, or its process ended: :func:`_exited`)."""
    with contextlib.suppress(Exception):
        asyncio.get_running_loop().remove_reader(worker.conn.fileno())
    if worker.exit_fd is not None:
        with contextlib.suppress(Exception):
            asyncio.get_running_loop().remove_reader(worker.exit_fd)
        if worker.exit_fd != worker.process.sentinel:
            with contextlib.suppress(OSError):
                os.close(worker.exit_fd)
        worker.exit_fd = None
    if worker.closed is not None and not worker.closed.done():
        worker.closed.set_result(None)


def _exit_fd(proc: Any) -> int:
    """A descriptor readable once ``proc`` has ended: a pidfd (Linux), which no other process
    holds (the process's sentinel pipe is inherited by what it forks, and stays open while they
    live), else the sentinel."""
    with contextlib.suppress(AttributeError, OSError):
        return os.pidfd_open(proc.pid)
    return int(proc.sentinel)


def _exited(worker: _Worker, read: Callable[[], None]) -> Callable[[], None]:
    """The exit descriptor's callback: the worker ended. What it sent is read first; its pipe may
    never reach EOF (a process the agent forked holds its writing end), so this closes it."""

    def done() -> None:
        with contextlib.suppress(OSError, EOFError):
            while (
                not worker.eof
                and worker.closed is not None
                and not worker.closed.done()
                and worker.conn.poll(0)
            ):
                read()
        _close(worker)

    return done


async def _stop(workers: list[_Worker]) -> None:
    """Ask every live worker to stop (SIGTERM), wait for them (:data:`STOP_GRACE_S`; each waits
    briefly at its end for what the agent's code left running: ``engine.util.end_wait``), kill the
    rest. A second stop (Ctrl-C) meanwhile is passed on (SIGTERM again): it cuts their end waits."""

    def again() -> None:
        for w in workers:
            if w.process.is_alive():
                with contextlib.suppress(OSError):
                    w.process.terminate()

    for w in workers:
        w.stopping = True
    again()
    waiting = [w.closed for w in workers if w.closed is not None and not w.closed.done()]
    if waiting:
        end_wait.add_cut(again)
        try:
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.gather(*waiting), STOP_GRACE_S)
        finally:
            end_wait.remove_cut(again)
    for w in workers:
        if w.process.is_alive():
            w.process.kill()
        await off_loop(w.process.join, STOP_GRACE_S)


def _exit_text(code: int | None) -> str:
    if code is None:
        return "did not end"
    return f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"


async def _fail_unfinished(
    worker: _Worker,
    by_key: dict[tuple[str, int], Job],
    opts: RunOptions,
    run_dir: Path,
    invocation: str,
    progress: Progress,
    report: Any,
    loaded: Any = None,
    untried: list[tuple[str, int]] | None = None,
) -> None:
    """The sessions of a worker that died without finishing, except ``untried`` (run again): this
    run's stored verdict counts as done; a folder holding a stored conversation (an earlier
    attempt's, or this run's not yet scored) is left as it is and the session counts as not scored
    (``--resume`` completes it); the others get the verdict ``error`` (source ``engine``). When the
    agent's own code ran in the worker, nothing the worker left in a folder is taken: a session
    whose conversation had ended (its ``talked`` message came) is stored and scored here from it,
    every other one is the agent's FAIL (``agent_error``), written over its folder. A folder that
    cannot be written is counted as not scored too: the run still writes its summary."""
    proc = worker.process
    why = f"worker process {worker.task.number} (pid {proc.pid}) {_exit_text(proc.exitcode)}"
    if worker.ended and not worker.stopping:
        why = (
            f"worker process {worker.task.number} (pid {proc.pid}) stopped before its sessions finished, "
            "not asked to by the run (a SIGTERM from elsewhere: the agent's own code?)"
        )
    if worker.silent_s is not None:
        why = (
            f"worker process {worker.task.number} (pid {proc.pid}) was killed after {worker.silent_s:.0f} s "
            "without a sign of life (its event loop was blocked: a synchronous call in async code?)"
        )
    skip = set(untried or ())
    if not opts.quiet and len(worker.reported) < len(worker.task.jobs):
        unreported = len([k for k in _keys(worker) if k not in worker.reported]) - len(skip)
        again = f"; its {len(skip)} session(s) not yet started run in a new worker" if skip else ""
        print(f"evalctl: {why} before reporting {unreported} session(s){again}", file=sys.stderr)
    # an agent whose own code runs in the worker (python:, pipecat:, livekit:) took its process
    # with it: its failure, never an error left out of the rates (the engine cannot tell its
    # crash from ours, and the agent must not be able to turn a hard scenario into an error)
    scoring = dataclasses.replace(opts.scoring, judge_model=None)  # nothing to judge
    scorer = Scorer(run_dir, opts.trials, scoring, 1, invocation)
    judged = Scorer(run_dir, opts.trials, opts.scoring, 1, invocation) if worker.talked else scorer
    async with contextlib.AsyncExitStack() as stack:
        stack.push_async_callback(scorer.aclose)
        if judged is not scorer:
            stack.push_async_callback(judged.aclose)
        own_code = _agent_runs_here(opts)
        callers_code = _runs_user_code(opts.user)  # a crash with only the caller's own code: the caller's
        for name, trial, _, superseded in worker.task.jobs:
            if (name, trial) in worker.reported or (name, trial) in skip:
                continue
            key = f"{name}#{trial}"
            sdir = scenario_dir(run_dir, name, trial, opts.trials)
            metrics = read_metrics(sdir / METRICS)
            stored = read_session(sdir)
            lost = f"{why} before this session finished"
            talked = worker.talked.get((name, trial))
            if own_code:
                # the process that ran the agent's code died before it reported this session: what
                # it left in the folder is not taken (the agent's code could have written it); the
                # session is stored here from its conversation, when that had ended, else it is
                # the agent's FAIL, written over the folder by this process
                stored = metrics = None
            if stored is not None and metrics is not None and stored.invocation == invocation:
                # it had: the reason this run's own session wrote in its metrics.json
                result = SessionResult(
                    name, trial, cast(StopReason, metrics.stop_reason), error=metrics.error
                )
            elif talked is not None:  # its conversation had ended: stored and scored here, as it went
                result, deltas = talked
                job = by_key[(name, trial)]
                metrics = await _store(judged, job, result, superseded, loaded, report, lost, deltas)
                if metrics is None:
                    progress.show(Finished.of(result, None))
                    continue
            elif stored is not None:  # a stored conversation (an earlier attempt's, or unscored): kept
                result = SessionResult(name, trial, "error", error=lost, error_source="engine")
                report.scoring_errors[key] = f"{lost}; the conversation stored in its folder is kept"
                progress.show(Finished.of(result, None))
                continue
            else:
                if own_code:
                    when = (
                        "while this session ran"
                        if (name, trial) in worker.started
                        else "before this session finished"
                    )
                    lost = f"{why} {when}: the agent's own code runs in that process"
                    result = SessionResult(name, trial, "agent_error", error=lost)
                elif callers_code:
                    lost = f"{why} before this session finished: the caller simulator's own code runs there"
                    result = SessionResult(name, trial, "error", error=lost, error_source="user_simulator")
                else:
                    result = SessionResult(name, trial, "error", error=lost, error_source="engine")
                metrics = await _store(
                    scorer, by_key[(name, trial)], result, superseded, loaded, report, lost
                )
                if metrics is None:
                    progress.show(Finished.of(result, None))
                    continue
            report.add(result, metrics)
            progress.show(Finished.of(result, metrics))


async def _store(
    scorer: Scorer,
    job: Job,
    result: SessionResult,
    superseded: Any,
    loaded: Any,
    report: Any,
    lost: str,
    deltas: tuple[Any, Any] | None = None,
) -> Any:
    """Store and score ``result`` (the job's session) in the run's process; its metrics, or None
    when its folder cannot be written or scored (then in ``report.scoring_errors``). ``deltas``:
    its final DB and user-side DB as changes to the scenario's initial ones (``view_delta``)."""
    name, key = job.scenario.name, f"{job.scenario.name}#{job.trial}"
    scenario = job.scenario
    try:
        if loaded is not None:  # a shell of the run's index: its folder needs the whole scenario
            scenario = loaded.prepare(name)
        try:
            if deltas is not None:
                db, user = deltas
                result = dataclasses.replace(
                    result,
                    final_db=None if db is None else apply_delta(scenario.initial_db, db),
                    user_db=None if user is None else apply_delta(scenario.user_initial_db or {}, user),
                )
            metrics, failure = await scorer.finish(scenario, result, superseded)
        finally:
            if loaded is not None:
                loaded.release(name)
    except (OSError, SpecError) as err:  # e.g. the disk is full: the run still ends with its summary
        report.scoring_errors[key] = f"{lost}; its result could not be written: {err}"
        return None
    if failure is not None:
        report.scoring_errors[key] = failure
    return metrics


def _agent_runs_here(opts: RunOptions) -> bool:
    """True when the run's agent side runs the user's code in the worker's process
    (``engine.session.backends.registry`` ``runs_user_code``)."""
    return _runs_user_code(opts.agent)


def _user_code_here(opts: RunOptions) -> bool:
    """True when either side (the agent, or the caller simulator: ``--user python:...``) runs the
    user's code in the worker's process."""
    return _runs_user_code(opts.agent) or _runs_user_code(opts.user)


def _runs_user_code(spec: str) -> bool:
    try:
        return scheme_of(parse_backend_spec(spec)).runs_user_code
    except (UsageError, ValueError):
        return False


def cpu_count() -> int:
    """The CLI's default ``--workers``: the cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1
