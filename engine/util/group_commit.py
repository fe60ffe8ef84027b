"""Group commit: one writer thread stores many result folders with one pair of syncs.

The finished sessions of a run are written by ONE background thread (a second one made the event
loop hand the GIL over more often). Before, that thread synced once per result folder and spent
most of its time waiting in ``syncfs``. Now it takes work from a queue in order:

- a *call* (:meth:`GroupCommit.call`) runs and its future is resolved at once (reading a stored
  session back, moving an old attempt aside);
- a *write* (:meth:`GroupCommit.write`) runs a stage function that writes a folder's files without
  a sync and returns ``(value, FolderWrite)``; the folder joins the open batch, and the write's
  future is resolved with ``value`` only after :func:`engine.util.artifacts.commit_folders` made
  the batch durable (files synced, markers renamed, synced again).

The batch is committed as soon as the queue is empty (a session finishing alone is made durable
at once, never held back by a timer), when it holds ``max_batch`` folders, or when its oldest
folder has waited ``max_delay_s``, whichever comes first. While one batch syncs, the sessions that
finish meanwhile queue up and form the next one, so the number of syncs follows the disk, not the
number of sessions.

Whoever waits on a write's future may therefore report the session done (a progress line, an
outcome sent to the run's process, the summary's totals): a crash after that loses nothing
reported. :class:`WriterStats` counts the thread's busy time against its active span (the
idle share a run's bench prints).
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, TypeVar

from engine.util.artifacts import FolderWrite, commit_folders

T = TypeVar("T")

#: A batch holds at most this many folders (and their sessions wait for at most one such batch).
MAX_BATCH = 64
#: A folder waits at most this long (seconds) in an open batch while more work keeps arriving.
MAX_DELAY_S = 0.05


@dataclass
class WriterStats:
    """What the writer thread did: ``busy_s`` seconds working (calls, stage functions, commits),
    ``sync_s`` of them inside the commits, over ``span_s`` seconds from the start of its first piece
    of work to the end of its last; ``folders`` written in ``batches`` batches with ``syncs`` syncs;
    ``calls`` plain calls run."""

    busy_s: float = 0.0
    sync_s: float = 0.0
    span_s: float = 0.0
    folders: int = 0
    batches: int = 0
    syncs: int = 0
    calls: int = 0
    largest_batch: int = 0
    _first: float | None = field(default=None, repr=False)

    @property
    def idle_share(self) -> float:
        """The share of the active span the thread spent waiting for work (0..1; 1.0 when idle
        throughout)."""
        return 1.0 - self.busy_s / self.span_s if self.span_s > 0 else 1.0

    def to_json(self) -> dict[str, Any]:
        return {
            "busy_s": round(self.busy_s, 4),
            "sync_s": round(self.sync_s, 4),
            "span_s": round(self.span_s, 4),
            "idle_share": round(self.idle_share, 4),
            "folders": self.folders,
            "batches": self.batches,
            "syncs": self.syncs,
            "calls": self.calls,
            "largest_batch": self.largest_batch,
        }


#: A fault-injection hook for the durability tests (tests/unit/results/test_group_commit.py):
#: ``N`` kills this process (SIGKILL: nothing cleans up) when its writer starts its N-th commit,
#: before any sync of it; ``N:markers`` once that commit's markers are renamed, before its second
#: sync. Unset in normal use.
KILL_ENV = "EVALCTL_KILL_AT_COMMIT"


def _kill_point() -> tuple[int, str] | None:
    raw = os.environ.get(KILL_ENV, "")
    number, _, phase = raw.partition(":")
    return (int(number), phase or "files") if number.isdigit() else None


def _die_if(point: tuple[int, str] | None, commit: int, phase: str) -> None:
    if point is not None and point == (commit, phase):
        os.kill(os.getpid(), signal.SIGKILL)


_STOP = object()


def _given(value: T, batch: FolderWrite) -> tuple[T, FolderWrite]:
    return value, batch


@dataclass
class _Pending:
    future: Future[Any]
    value: Any
    batch: FolderWrite


class GroupCommit:
    """The writer thread (started at construction, a daemon; stop it with :meth:`close`).

    ``max_batch`` (>= 1) folders at most per batch; ``max_delay_s`` (>= 0) the longest a folder
    waits in an open batch while more work keeps coming. Thread-safe submission from any thread.
    """

    def __init__(self, max_batch: int = MAX_BATCH, max_delay_s: float = MAX_DELAY_S) -> None:
        if max_batch < 1 or max_delay_s < 0:
            raise ValueError(f"max_batch {max_batch} must be >= 1 and max_delay_s {max_delay_s} >= 0")
        self.max_batch = max_batch
        self.max_delay_s = max_delay_s
        self.stats = WriterStats()
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._pending: list[_Pending] = []
        self._oldest = 0.0
        self._closed = False
        self._kill_at = _kill_point()
        self._thread = threading.Thread(target=self._loop, name="evalctl-write", daemon=True)
        self._thread.start()

    def call(self, func: Callable[..., T], *args: Any) -> Future[T]:
        """Run ``func(*args)`` on the writer thread; the future holds its value or exception.
        Raises RuntimeError once closed."""
        return self._put(False, func, args)

    def write(self, stage: Callable[..., tuple[T, FolderWrite]], *args: Any) -> Future[T]:
        """Run ``stage(*args)`` on the writer thread: it writes one folder's files (no sync) and
        returns ``(value, batch)``. The future gets ``value`` once a group commit made ``batch``
        durable, or the exception ``stage`` or the commit raised (OSError). Raises RuntimeError
        once closed."""
        return self._put(True, stage, args)

    def add(self, value: T, batch: FolderWrite) -> Future[T]:
        """Join ``batch`` (a folder whose files the caller already wrote, its markers pending) to
        the open batch: the future gets ``value`` once a group commit made it durable, or the
        OSError the commit raised. Raises RuntimeError once closed."""
        return self._put(True, _given, (value, batch))

    def backlog(self) -> int:
        """How many pieces of work are queued and not yet started (approximate: other threads may
        be adding or the writer taking one meanwhile)."""
        return self._queue.qsize()

    def _put(self, staged: bool, func: Callable[..., Any], args: tuple[Any, ...]) -> Future[Any]:
        if self._closed:
            raise RuntimeError("the writer thread is closed")
        future: Future[Any] = Future()
        self._queue.put((staged, func, args, future))
        return future

    def close(self) -> None:
        """Commit what is pending, run what is queued, then stop the thread (idempotent)."""
        if not self._closed:
            self._closed = True
            self._queue.put(_STOP)
        self._thread.join()

    def _loop(self) -> None:
        stats = self.stats
        while True:
            try:
                item = self._queue.get(block=not self._pending)
            except queue.Empty:  # nothing more to write now: make the batch durable
                self._commit()
                continue
            if item is _STOP:
                self._commit()
                return
            staged, func, args, future = item
            start = time.perf_counter()
            if stats._first is None:
                stats._first = start
            if future.set_running_or_notify_cancel():
                self._run(staged, func, args, future, start)
            item = func = args = future = None  # hold no finished session while waiting for work
            now = time.perf_counter()
            stats.busy_s += now - start
            stats.span_s = now - stats._first
            if self._pending and (
                len(self._pending) >= self.max_batch or now - self._oldest >= self.max_delay_s
            ):
                self._commit()

    def _run(
        self, staged: bool, func: Callable[..., Any], args: tuple[Any, ...], future: Future[Any], start: float
    ) -> None:
        try:
            value = func(*args)
        except BaseException as err:  # handed to whoever waits on it
            future.set_exception(err)
            return
        if not staged:
            self.stats.calls += 1
            future.set_result(value)
            return
        result, batch = value
        if not self._pending:
            self._oldest = start
        self._pending.append(_Pending(future, result, batch))

    def _commit(self) -> None:
        """One group commit of the open batch; resolves its futures (all with the error when it
        fails: none of them is reported done)."""
        pending, self._pending = self._pending, []
        if not pending:
            return
        stats = self.stats
        start = time.perf_counter()
        point, number = self._kill_at, stats.batches + 1
        try:
            _die_if(point, number, "files")
            marked = (lambda: _die_if(point, number, "markers")) if point is not None else None
            syncs = commit_folders([p.batch for p in pending], marked)
        except BaseException as err:
            for p in pending:
                with contextlib.suppress(Exception):
                    p.future.set_exception(err)
        else:
            stats.syncs += syncs
            stats.folders += len(pending)
            stats.batches += 1
            stats.largest_batch = max(stats.largest_batch, len(pending))
            for p in pending:
                p.future.set_result(p.value)
        now = time.perf_counter()
        stats.busy_s += now - start
        stats.sync_s += now - start
        if stats._first is not None:
            stats.span_s = now - stats._first
