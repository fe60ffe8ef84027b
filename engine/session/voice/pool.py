"""The worker processes of a voice run: speech synthesis and recognition, off the event loop.

One :class:`concurrent.futures.ProcessPoolExecutor` per engine process, as many workers as the
machine has cores (``os.cpu_count()``), spawned, not forked (the engine holds threads and an
event loop), started on first use and shut down at interpreter exit or by :func:`shutdown_pool`.
The workers ignore SIGINT: a terminal's Ctrl-C reaches the whole process group, and the run's own
cancellation ends the work (a worker killed by it would break the pool with a traceback).
The workers end when the process that started them dies, even by ``kill -9``
(``engine.util.parent.watch_parent``: a thread in each worker polling the parent pid; not
``PR_SET_PDEATHSIG``, which fires when the *thread* that spawned the worker ends, and Python 3.11
spawns pool workers from whichever thread submits), instead of running on under PID 1;
multiprocessing's resource tracker then ends too (its last user gone).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from engine.util.parent import watch_parent

T = TypeVar("T")

_POOL: ProcessPoolExecutor | None = None


def _worker_init(parent: int) -> None:
    """A worker's start: SIGINT ignored, and ended within about half a second of its parent (pid
    ``parent``) by a thread watching the parent pid."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    watch_parent(parent)


def worker_count() -> int:
    """How many workers the pool has: one per core."""
    return os.cpu_count() or 1


def pool() -> ProcessPoolExecutor:
    """The voice workers (see the module docstring)."""
    global _POOL
    if _POOL is None:
        ctx = multiprocessing.get_context("spawn")
        _POOL = ProcessPoolExecutor(
            max_workers=worker_count(),
            mp_context=ctx,
            initializer=_worker_init,
            initargs=(os.getpid(),),
        )
    return _POOL


def shutdown_pool() -> None:
    """Stop the workers, dropping queued work (they start again on the next :func:`in_worker`);
    once they have ended, their CPU time (and that of the programs they ran) is in this
    process's ``RUSAGE_CHILDREN``."""
    global _POOL
    if _POOL is not None:
        _POOL.shutdown(wait=True, cancel_futures=True)
        _POOL = None


async def in_worker(func: Callable[..., T], *args: Any) -> T:
    """``func(*args)`` in a worker process (``func`` and ``args`` are pickled to it), awaited
    without blocking the event loop; raises what ``func`` raises. A pool broken by a worker that
    died (BrokenProcessPool: seen once under load in the test suite) is started anew and the work
    tried once more (synthesis and recognition are deterministic); a second break is raised."""
    loop = asyncio.get_running_loop()
    try:
        return await loop.run_in_executor(pool(), func, *args)
    except BrokenProcessPool:
        shutdown_pool()
        return await loop.run_in_executor(pool(), func, *args)
