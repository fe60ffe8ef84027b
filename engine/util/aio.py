"""Running a command's coroutine to its end: what ``asyncio.run`` does, except that tasks left
running when the coroutine is done get a bounded time to finish their cancellation.

``asyncio.run`` cancels every task still pending when its coroutine returns and then waits for
them all, without a limit: one task that catches its ``CancelledError`` and goes on (an in-process
agent's background task, a library's watchdog) held ``evalctl run --workers 1`` for ever after its
summary was written. Here such a task is named in one line and left behind, and the process ends.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from engine.util.errors import INTERRUPTED_EXIT

T = TypeVar("T")

#: Seconds the tasks left running get to finish once cancelled.
GRACE_S = 5.0


def run_to_end(
    main: Coroutine[Any, Any, T],
    *,
    grace_s: float = GRACE_S,
    say: Callable[[str], None] | None = None,
    on_stray_exit: Callable[[BaseException], BaseException] | None = None,
) -> T:
    """Run ``main`` on a new event loop (``asyncio.Runner``: Ctrl-C cancels it, as with
    ``asyncio.run``) and return its value or raise what it raises. Then every task still pending
    is cancelled and given ``grace_s`` seconds to end; one that has not ended by then is left
    behind, suspended for good, and named by ``say`` (default: a line on stderr), as are the
    default executor's threads if they do not stop in that time. ``on_stray_exit``: what to raise
    instead of a SystemExit or KeyboardInterrupt that did not come from ``main`` (a callback or
    another task of code running in this process raised it: ``main`` is then cancelled with the
    rest); None: raise it as it is."""
    runner = asyncio.Runner()
    finished = False

    async def tracked() -> T:
        nonlocal finished
        try:
            return await main
        finally:
            finished = True

    try:
        return runner.run(tracked())
    except (SystemExit, KeyboardInterrupt) as exc:
        if finished or on_stray_exit is None:
            raise
        raise on_stray_exit(exc) from None
    finally:
        loop = runner.get_loop()
        stuck = _cancel_leftovers(loop, grace_s)
        if stuck:
            (say or _stderr)(_left_behind(stuck, grace_s))
        _close(loop, grace_s, say or _stderr)


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _cancel_leftovers(loop: asyncio.AbstractEventLoop, grace_s: float) -> list[asyncio.Task[Any]]:
    """Cancel the loop's pending tasks and run the loop until they end or ``grace_s`` passes;
    tasks they start meanwhile are cancelled in turn. Returns those still pending then. What a
    cancelled task does to the loop is its own and changes nothing of the run's outcome: it stops
    the loop (``loop.stop()``: the wait goes on) or raises SystemExit (ignored), or
    KeyboardInterrupt (the wait ends: it may be the user's Ctrl-C)."""
    deadline = loop.time() + grace_s
    cancelled: set[asyncio.Task[Any]] = set()
    own: set[asyncio.Future[Any]] = set()  # this function's waits: never counted as left behind
    while pending := [t for t in asyncio.all_tasks(loop) if not t.done()]:
        for task in pending:
            if task not in cancelled:
                task.cancel()
                cancelled.add(task)
        left = deadline - loop.time()
        if left <= 0:
            break
        # back as one ends (it may have started another) or at the deadline
        waiting = asyncio.ensure_future(
            asyncio.wait(pending, timeout=left, return_when=asyncio.FIRST_COMPLETED), loop=loop
        )
        own.add(waiting)
        if not _run_briefly(loop, waiting):
            break
    for task in cancelled:  # what the ended ones raised was theirs to handle: not reported twice
        if task.done() and not task.cancelled():
            task.exception()
    return [t for t in asyncio.all_tasks(loop) if not t.done() and t not in own]


def _run_briefly(loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any]) -> bool:
    """Run the loop until ``future`` is done; False when a KeyboardInterrupt stopped it (the
    future is then cancelled). A leftover task's ``loop.stop()`` or SystemExit ends this run
    of the loop early (True: the caller goes on, within its deadline)."""
    try:
        loop.run_until_complete(future)
    except KeyboardInterrupt:
        future.cancel()
        return False
    except (RuntimeError, SystemExit):  # "Event loop stopped before Future completed.", a task's exit
        if not future.done():
            future.cancel()
    return True


def _left_behind(stuck: list[asyncio.Task[Any]], grace_s: float) -> str:
    names = ", ".join(_where(t) for t in stuck[:3])
    if len(stuck) > 3:
        names += f" and {len(stuck) - 3} more"
    count = f"{len(stuck)} task{'s' if len(stuck) != 1 else ''}"
    return (
        f"evalctl: {count} still running at the end did not end within {grace_s:g} s of being "
        f"cancelled (ignoring cancellation, or starting others as they end) and "
        f"{'were' if len(stuck) != 1 else 'was'} left behind: {names} (what was written is complete)"
    )


def _where(task: asyncio.Task[Any]) -> str:
    """``name() at FILE:LINE`` of the task's coroutine where it waits."""
    coro = task.get_coro()
    name = getattr(coro, "__qualname__", None) or task.get_name()
    frame = getattr(coro, "cr_frame", None)
    if frame is None:
        return f"{name}()"
    return f"{name}() at {frame.f_code.co_filename}:{frame.f_lineno}"


def _close(loop: asyncio.AbstractEventLoop, grace_s: float, say: Callable[[str], None]) -> None:
    """Close ``loop`` as ``Runner.close`` does, but without waiting for stuck tasks again
    (``Runner.close`` gathers every task), with a limit on the async generators' closing
    (``loop.shutdown_asyncgens``: a generator whose ``finally`` waits for ever held it for ever)
    and on the default executor's shutdown."""
    try:
        gens = asyncio.ensure_future(loop.shutdown_asyncgens(), loop=loop)
        began = time.monotonic()
        _run_briefly(loop, asyncio.ensure_future(asyncio.wait([gens], timeout=grace_s), loop=loop))
        if not gens.done():
            gens.cancel()
            waited = min(grace_s, time.monotonic() - began)  # less when a KeyboardInterrupt ended it
            say(
                f"evalctl: async generators still closing {waited:.1f} s after the end (a `finally` "
                "that waits on and on) were left behind (what was written is complete)"
            )
        _stop_executor(loop, grace_s, say)
    finally:
        for task in asyncio.all_tasks(loop):
            # asyncio's own flag: a task destroyed while pending is not logged at exit ("Task was
            # destroyed but it is pending!"): it was named above, or started while closing
            task._log_destroy_pending = False  # type: ignore[attr-defined]
        asyncio.set_event_loop(None)
        loop.close()


def _stop_executor(loop: asyncio.AbstractEventLoop, grace_s: float, say: Callable[[str], None]) -> None:
    """Shut the loop's default executor down (``to_thread`` / ``run_in_executor(None, ...)``),
    waiting at most ``grace_s`` for its threads. ``loop.shutdown_default_executor`` cannot be
    bounded: cancelled, it still joins its thread, so a blocking call of the agent's held the
    loop for as long as it blocked. Threads still running are said; the interpreter joins them
    at exit, as it joins every non-daemon thread."""
    executor = getattr(loop, "_default_executor", None)  # asyncio's own; None when never used
    if executor is None:
        return
    executor.shutdown(wait=False, cancel_futures=True)
    threads = list(getattr(executor, "_threads", ()))
    deadline = time.monotonic() + grace_s
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    if alive := sum(t.is_alive() for t in threads):
        say(
            f"evalctl: {alive} thread{'s' if alive != 1 else ''} of asyncio's default executor "
            "(blocking calls given to asyncio.to_thread or run_in_executor) still running at the end "
            "(what was written is complete)"
        )


def stuck_threads(grace_s: float = GRACE_S) -> list[threading.Thread]:
    """The threads that would hold this process at its exit (alive, not daemon, not the main
    thread) once each was given up to ``grace_s`` seconds in all to end; [] when none."""
    deadline = time.monotonic() + grace_s
    for thread in threading.enumerate():
        if _holds_exit(thread):
            thread.join(max(0.0, deadline - time.monotonic()))
    return [t for t in threading.enumerate() if _holds_exit(t)]


def _holds_exit(thread: threading.Thread) -> bool:
    return thread is not threading.main_thread() and not thread.daemon and thread.is_alive()


def exit_process(code: int, grace_s: float = GRACE_S, say: Callable[[str], None] | None = None) -> None:
    """End this process with ``code``. The interpreter joins every thread that is not a daemon
    before it exits, without a limit: a thread of the agent's code that never ends (an in-process
    agent, ``--workers 1``) held the process for ever after its summary was written. Such threads
    get ``grace_s`` seconds (:func:`stuck_threads`), then are named by ``say`` (default: a line on
    stderr) and left: the exit handlers run and the process ends at once (``os._exit``); a
    Ctrl-C meanwhile ends the wait (exit 130 unless ``code`` is not 0). Without them,
    ``sys.exit(code)``."""
    try:
        stuck = stuck_threads(grace_s)
    except KeyboardInterrupt:  # Ctrl-C while they are waited for: wait no more
        stuck, code = [t for t in threading.enumerate() if _holds_exit(t)], code or INTERRUPTED_EXIT
    if not stuck:
        sys.exit(code)
    names = ", ".join(t.name for t in stuck[:3]) + (f" and {len(stuck) - 3} more" if len(stuck) > 3 else "")
    (say or _stderr)(
        f"evalctl: {len(stuck)} thread{'s' if len(stuck) != 1 else ''} still running {grace_s:g} s "
        f"after the end left behind: {names} (what was written is complete)"
    )
    atexit._run_exitfuncs()  # what a normal exit runs after the threads (trace exporters' flush)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)
