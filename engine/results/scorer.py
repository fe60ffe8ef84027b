"""The scoring stage of a run (and of ``evalctl rescore``): a session's artifacts are stored as soon
as it ends (:meth:`Scorer.store`); scoring comes after (:meth:`Scorer.score`): the judge, at most
``concurrency`` requests at once on the event loop, then the signals, the composite and
``metrics.json`` in a worker thread. A crash or Ctrl-C while judging loses no conversation: the
stored session is scored by the next ``--resume`` (or ``evalctl rescore``). Without a judge,
:meth:`Scorer.finish` stores and scores a session in one write of its folder. Every folder write is
group-committed (:func:`committed`, ``engine.util.group_commit``): the call returns once the folder
is durable, so the session may then count as done.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import orjson

from engine.core.model import Scenario, SessionResult
from engine.core.options import ScoringOptions
from engine.core.records.common import SpentUsage
from engine.core.records.metrics import MetricsRecord
from engine.core.records.session import SessionRecord
from engine.core.records.voice import VoiceSummary
from engine.results.scoring_stage import stage_score_session, stage_store_and_score
from engine.results.session_files import stage_write_session
from engine.scoring.judge import Judge
from engine.scoring.rubric import ask_rubric
from engine.util.artifacts import FolderWrite
from engine.util.group_commit import GroupCommit, WriterStats

T = TypeVar("T")

#: One thread for artifact writes and scoring (``engine.util.group_commit``): it overlaps the
#: sessions (file writes and the syncs release the GIL) and commits the finished sessions' folders
#: in groups. Each write gives the GIL up and takes it back, so every extra thread makes the event
#: loop hand the GIL over more often: on 2 cores, 500 sessions at concurrency 200 ran about 5%
#: faster with one thread than with two. Started at the first use.
_WRITER: GroupCommit | None = None
_WRITER_LOCK = threading.Lock()
#: When set, the file each process appends its writer's :class:`WriterStats` to (one JSON line,
#: when the writer stops: :func:`release_threads`, or the process's exit); ``make bench`` reads it.
STATS_ENV = "EVALCTL_WRITER_STATS"
_AT_EXIT: list[Callable[[], None]] = []  # release_threads once registered to run at exit


def _writer() -> GroupCommit:
    global _WRITER
    with _WRITER_LOCK:
        if _WRITER is None:
            _WRITER = GroupCommit()
            if os.environ.get(STATS_ENV) and not _AT_EXIT:
                _AT_EXIT.append(atexit.register(release_threads))
        return _WRITER


def release_threads() -> None:
    """Stop the write thread (after the work given to it is done and committed; the next
    :func:`off_loop` starts a new one). A process about to fork its workers calls this: a forked
    child inherits no thread, so it must not inherit a writer that believes it has one."""
    global _WRITER
    with _WRITER_LOCK:
        writer, _WRITER = _WRITER, None
    if writer is not None:
        writer.close()
        _record_stats(writer.stats)


def _record_stats(stats: WriterStats) -> None:
    """Append ``stats`` to the file ``$EVALCTL_WRITER_STATS`` names (a bench's figure; nothing
    when unset, or when this writer wrote no folder)."""
    path = os.environ.get(STATS_ENV)
    if not path or not stats.folders:
        return
    line = orjson.dumps({"pid": os.getpid(), **stats.to_json()}) + b"\n"
    with contextlib.suppress(OSError), open(path, "ab") as fh:
        fh.write(line)


class WrittenStop(asyncio.CancelledError):
    """The cancellation (Ctrl-C, SIGTERM) of a task that was waiting for the writer thread: the
    work finished first, and succeeded; ``value`` is what it returned. For a folder write that
    means the folder is durable: a session whose ``metrics.json`` was committed so is done, and
    the run reports it before the cancellation goes on (``engine.run.runner``), rather than
    leaving a complete folder it never counted (which the end of the run then set aside as
    written by someone else). Anything that does not look for it sees a CancelledError."""

    def __init__(self, value: Any) -> None:
        super().__init__("cancelled once the writer's work was done")
        self.value = value


async def _awaited(future: concurrent.futures.Future[T], written: bool = False) -> T:
    """The value of the writer's ``future``. When the caller is cancelled meanwhile (Ctrl-C), the
    work still finishes (and is committed) before the cancellation goes on, so a file is never
    half written and a session reported done is durable. ``written`` (a folder write): the
    cancellation then goes on as :class:`WrittenStop` (with the value) when the write succeeded;
    otherwise as it came."""
    waiting = asyncio.wrap_future(future)
    try:
        return await asyncio.shield(waiting)
    except asyncio.CancelledError:
        while not waiting.done():  # cancellation may come more than once: still wait for the writes
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait([waiting])
        if not written or waiting.cancelled() or waiting.exception() is not None:
            raise
        raise WrittenStop(waiting.result()) from None


async def off_loop(func: Callable[..., T], *args: Any) -> T:
    """``func(*args)`` on the writer thread: file writes block, and the sessions still running must
    not wait for them. Cancellation: as :func:`committed`."""
    return await _awaited(_writer().call(func, *args))


#: ``committed(here=None)`` stages a folder on the writer thread while fewer than this many
#: pieces of work wait there, else on the caller's thread (the event loop).
STAGE_BACKLOG = 64


async def committed(stage: Callable[..., tuple[T, FolderWrite]], *args: Any, here: bool | None = False) -> T:
    """``stage(*args)`` (it writes one result folder without a sync and returns ``(value,
    batch)``) and a group commit of its folder (``engine.util.group_commit``); returns ``value``
    once the folder is durable: only then may the session count as done. ``here``: True, run
    ``stage`` in the caller's thread (the event loop) and leave only the commit to the writer
    thread; False, run both there; None, on the writer thread unless :data:`STAGE_BACKLOG`
    pieces of work already wait for it (see below). Raises what ``stage`` raised, or OSError
    when the commit failed. When the caller is cancelled meanwhile, the write and its commit
    still finish before the cancellation goes on (as :class:`WrittenStop`, holding ``value``,
    when they succeeded).

    Which thread: the files of a folder are a dozen small writes, each giving the GIL up and
    taking it back, and on the writer thread every take-back may wait for the busy event loop
    (up to the interpreter's switch interval, 5 ms): once, with more work per folder, that kept
    the writer busy 81-88 % of the latency case of ``make bench``. Today a finished session is
    stored and scored on the writer (:meth:`Scorer.finish`): the stage's CPU work then runs
    while the loop waits for the sides, instead of delaying every session's next step, and the
    writer stays idle 60-71 % of the time (4 December, medians of six alternating rounds:
    3.67 s against 3.85 s with the loop staging and writing the folder; docs/performance.md,
    "Writes").
    ``here`` is for a stage that is short next to its session (the verdict of a judged one).

    Why a bound (``here=None``): sessions that end faster than the writer stages them (a run
    of fast sides at a high concurrency) would queue there by the hundred, and a Ctrl-C, which
    lets every queued write finish, then waited seconds for them (2.0-2.9 s at concurrency 300,
    against 0.4 s with the loop staging; found by a hostile tester). Past the bound the loop
    stages the folder itself, which also slows the sessions down to what the writes keep up
    with: a stop waits for at most :data:`STAGE_BACKLOG` stages (0.33 s in the same run, 4
    December). A bound of 16 cost the latency case 0.07 s (3.65 s against 3.58 s, medians of
    four alternating rounds); 64, one group commit's worth, nothing measurable (3.58 s)."""
    writer = _writer()
    if here or (here is None and writer.backlog() >= STAGE_BACKLOG):
        value, batch = stage(*args)
        return await _awaited(writer.add(value, batch), written=True)
    return await _awaited(writer.write(stage, *args), written=True)


class Scorer:
    """Stores and scores the sessions of one run directory (``trials`` fixes its layout) with
    ``options``; ``invocation`` is the id recorded in each stored session. Close with
    :meth:`aclose` (the judge's connections)."""

    def __init__(
        self, run_dir: Path, trials: int, options: ScoringOptions, concurrency: int, invocation: str
    ):
        self.run_dir = Path(run_dir)
        self.trials = trials
        self.options = options
        self.invocation = invocation
        self.judge = Judge(options) if options.judge_model else None
        self.gate = asyncio.Semaphore(max(1, concurrency))

    async def store(
        self,
        scenario: Scenario,
        result: SessionResult,
        superseded: tuple[SpentUsage, ...] = (),
        voice: Callable[[FolderWrite], VoiceSummary | None] | None = None,
    ) -> SessionRecord:
        """Write the session's artifacts (``engine.results.session_files.write_session``; ``voice`` an audio
        session's writer). Raises OSError when the run directory cannot be written."""
        return await committed(
            stage_write_session,
            self.run_dir,
            scenario,
            result,
            self.trials,
            self.invocation,
            superseded,
            voice,
            here=voice is None,  # an audio session's files are large: written off the event loop
        )

    async def score(
        self, scenario: Scenario, result: SessionResult, superseded: tuple[SpentUsage, ...] = ()
    ) -> MetricsRecord:
        """Judge (when on: the verdict, then the caller rubric of a model caller,
        ``engine.scoring.rubric``) and score a stored session; returns its metrics. Judge
        failures are recorded, never raised; raises OSError when the folder cannot be written."""
        judge = rubric = None
        if self.judge is not None:
            async with self.gate:
                judge = await self.judge.ask(scenario, result)
                rubric = await ask_rubric(self.judge, scenario, result)  # None: not a model caller
        return await committed(
            stage_score_session,
            self.run_dir,
            scenario,
            result,
            self.trials,
            self.options,
            judge,
            superseded,
            rubric,
            here=True,
        )

    async def finish(
        self,
        scenario: Scenario,
        result: SessionResult,
        superseded: tuple[SpentUsage, ...] = (),
        voice: Callable[[FolderWrite], VoiceSummary | None] | None = None,
        stored: bool = False,
    ) -> tuple[MetricsRecord | None, str | None]:
        """Store (unless ``stored``: the folder already holds it) and score a session; returns its
        metrics and None, or None and why scoring failed (``Type: message``; the session stays
        stored). Without a judge a new session is stored and scored in one write of its folder
        (:func:`engine.results.scoring_stage.store_and_score`). Raises OSError when the session cannot be
        stored.

        A stop (cancellation) while the folder was being written lets the write finish; once
        the session's folder is complete (stored and scored, or stored with its scoring failure
        recorded) it goes on as :class:`WrittenStop` with what this call would have returned as
        its value; a judged session stopped between its store and its verdict goes on as a plain
        CancelledError (stored unscored: ``--resume`` scores it)."""
        if not stored and self.judge is None:
            try:
                _, metrics, failure = await committed(
                    stage_store_and_score,
                    self.run_dir,
                    scenario,
                    result,
                    self.trials,
                    self.options,
                    self.invocation,
                    superseded,
                    voice,
                    here=None if voice is None else False,  # an audio session's files: never the loop
                )  # on the writer thread, within a bound: see committed()
            except WrittenStop as stop:
                _, metrics, failure = stop.value
                raise WrittenStop((metrics, _failure_text(failure))) from None
            return metrics, _failure_text(failure)
        if not stored:
            try:
                await self.store(scenario, result, superseded, voice)
            except WrittenStop:  # stored, not scored: --resume scores it
                raise asyncio.CancelledError from None
        try:
            return await self.score(scenario, result, superseded), None
        except WrittenStop as stop:
            raise WrittenStop((stop.value, None)) from None
        except Exception as err:  # scoring trouble is recorded, the run goes on
            return None, f"{type(err).__name__}: {err}"

    async def aclose(self) -> None:
        if self.judge is not None:
            await self.judge.aclose()


def _failure_text(failure: Exception | None) -> str | None:
    """``Type: message`` of a scoring failure (None: none)."""
    return None if failure is None else f"{type(failure).__name__}: {failure}"
