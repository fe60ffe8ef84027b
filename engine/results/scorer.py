"""The scoring stage of a run (and of ``evalctl rescore``): a session's artifacts are stored as soon
as it ends (:meth:`Scorer.store`); scoring comes after (:meth:`Scorer.score`): the judge, at most
``concurrency`` requests at once on the event loop, then the signals, the composite and
``metrics.json`` in a worker thread. A crash or Ctrl-C while judging loses no conversation: the
stored session is scored by the next ``--resume`` (or ``evalctl rescore``). Without a judge,
:meth:`Scorer.finish` stores and scores a session in one write of its folder (one durable sync).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from engine.core.model import Scenario, SessionResult
from engine.core.options import ScoringOptions
from engine.core.records.common import SpentUsage
from engine.core.records.metrics import MetricsRecord
from engine.core.records.session import SessionRecord
from engine.core.records.voice import VoiceSummary
from engine.results.scoring_stage import score_session, store_and_score
from engine.results.session_files import write_session
from engine.scoring.judge import Judge
from engine.scoring.rubric import ask_rubric

T = TypeVar("T")

#: One thread for artifact writes and scoring: it overlaps the sessions (file writes and the sync
#: release the GIL). Each write gives the GIL up and takes it back, so every extra thread makes the
#: event loop hand the GIL over more often: on 2 cores, 500 sessions at concurrency 200 ran about
#: 5% faster with one thread than with two. Started at the first use.
_WORKERS: ThreadPoolExecutor | None = None
_WORKERS_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    global _WORKERS
    with _WORKERS_LOCK:
        if _WORKERS is None:
            _WORKERS = ThreadPoolExecutor(max_workers=1, thread_name_prefix="evalctl-write")
        return _WORKERS


def release_threads() -> None:
    """Stop the write threads (after the work given to them is done; the next :func:`off_loop`
    starts new ones). A process about to fork its workers calls this: a forked child inherits no
    thread, so it must not inherit a pool that believes it has some."""
    global _WORKERS
    with _WORKERS_LOCK:
        pool, _WORKERS = _WORKERS, None
    if pool is not None:
        pool.shutdown(wait=True)


async def off_loop(func: Callable[..., T], *args: Any) -> T:
    """``func(*args)`` in a worker thread: file writes block (fsync), and the sessions still running
    must not wait for them. When the caller is cancelled meanwhile (Ctrl-C), the work still
    finishes before the cancellation goes on, so a file is never half written."""
    future = asyncio.get_running_loop().run_in_executor(_pool(), functools.partial(func, *args))
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        while not future.done():  # cancellation may come more than once: still wait for the writes
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait([future])
        raise


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
        voice: Callable[[Path], VoiceSummary | None] | None = None,
    ) -> SessionRecord:
        """Write the session's artifacts (``engine.results.session_files.write_session``; ``voice`` an audio
        session's writer). Raises OSError when the run directory cannot be written."""
        return await off_loop(
            write_session, self.run_dir, scenario, result, self.trials, self.invocation, superseded, voice
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
        return await off_loop(
            score_session,
            self.run_dir,
            scenario,
            result,
            self.trials,
            self.options,
            judge,
            superseded,
            rubric,
        )

    async def finish(
        self,
        scenario: Scenario,
        result: SessionResult,
        superseded: tuple[SpentUsage, ...] = (),
        voice: Callable[[Path], VoiceSummary | None] | None = None,
        stored: bool = False,
    ) -> tuple[MetricsRecord | None, str | None]:
        """Store (unless ``stored``: the folder already holds it) and score a session; returns its
        metrics and None, or None and why scoring failed (``Type: message``; the session stays
        stored). Without a judge a new session is stored and scored in one write of its folder
        (:func:`engine.results.scoring_stage.store_and_score`). Raises OSError when the session cannot be
        stored."""
        if not stored and self.judge is None:
            _, metrics, failure = await off_loop(
                store_and_score,
                self.run_dir,
                scenario,
                result,
                self.trials,
                self.options,
                self.invocation,
                superseded,
                voice,
            )
            return metrics, None if failure is None else f"{type(failure).__name__}: {failure}"
        if not stored:
            await self.store(scenario, result, superseded, voice)
        try:
            return await self.score(scenario, result, superseded), None
        except Exception as err:  # scoring trouble is recorded, the run goes on
            return None, f"{type(err).__name__}: {err}"

    async def aclose(self) -> None:
        if self.judge is not None:
            await self.judge.aclose()
