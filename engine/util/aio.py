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
import signal
import sys
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, NoReturn, TypeVar

from engine.util import end_wait

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
        loop.set_exception_handler(_quiet_exits)
        presses = len(_PRESSES)  # after the user's stop: one short wait for all; a stop in it cuts it
        budget = end_wait.Budget(grace_s, cut=lambda: len(_PRESSES) > presses)
        with _ctrl_c_watched():
            stuck, waited = _cancel_leftovers(loop, budget.next())
            if stuck:
                _LEFT_BEHIND.append("tasks")
                (say or _stderr)(_left_behind(stuck, waited))
            _close(loop, budget, say or _stderr)
            if end_wait.stopped():  # the threads too, before the summary (not after its last line)
                _threads_after_stop(budget, say or _stderr)


#: What :func:`run_to_end` left behind in this process (tasks, async generators): their code
#: would run again when the interpreter collects them at exit (a ``finally`` that never ends
#: held it there), so :func:`exit_process` ends the process at once then.
_LEFT_BEHIND: list[str] = []

#: SIGINT presses during the clean-up (:func:`_ctrl_c_watched`): a KeyboardInterrupt with no
#: press behind it was raised by code (a callback, a task), not by the user.
_PRESSES: list[float] = []


@contextlib.contextmanager
def _ctrl_c_watched() -> Iterator[None]:
    """While the clean-up runs, a Ctrl-C or a SIGTERM (a CI timeout, ``kill``) is counted in
    :data:`_PRESSES` and raised as KeyboardInterrupt: it cuts the wait, the run's outcome stands
    (before, a SIGTERM then killed the process, exit 143, with its table unprinted)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def pressed(signum: int, frame: Any) -> None:
        _PRESSES.append(time.monotonic())
        raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, pressed) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def stop_signals_interrupt() -> contextlib.AbstractContextManager[None]:
    """A Ctrl-C or a SIGTERM raises KeyboardInterrupt in the main thread while it is entered (the
    handlers before are put back on the way out), and counts as the user's stop for this
    process's end (:func:`exit_process` then waits for no thread): how ``evalctl serve`` stops,
    on either signal, even when the shell that started it in the background left SIGINT
    ignored. A no-op outside the main thread."""
    return _ctrl_c_watched()


def _quiet_exits(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The loop's exception handler from the clean-up on: a task that ended by raising SystemExit
    or KeyboardInterrupt was said already (``on_stray_exit``, or its own wait), not logged again
    with a traceback when it is collected ("Task exception was never retrieved")."""
    if isinstance(context.get("exception"), (SystemExit, KeyboardInterrupt)):
        return
    loop.default_exception_handler(context)


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _cancel_leftovers(
    loop: asyncio.AbstractEventLoop, grace_s: float
) -> tuple[list[asyncio.Task[Any]], float]:
    """Cancel the loop's pending tasks and run the loop until they end or ``grace_s`` passes;
    tasks they start meanwhile are cancelled in turn. Returns those still pending then, and the
    seconds waited for them. What a
    cancelled task does to the loop is its own and changes nothing of the run's outcome: it stops
    the loop (``loop.stop()``), raises SystemExit or KeyboardInterrupt: the wait goes on. A
    KeyboardInterrupt no task raised (the user's Ctrl-C) ends the wait."""
    deadline = loop.time() + grace_s
    cancelled: set[asyncio.Task[Any]] = set()
    while pending := _theirs(loop):
        for task in pending:
            if task not in cancelled:
                task.cancel()
                cancelled.add(task)
        left = deadline - loop.time()
        if left <= 0:
            break
        # back as one ends (it may have started another) or at the deadline
        if not _run_until(loop, lambda: not [t for t in pending if not t.done()], left, cancelled):
            break
    _retrieve(cancelled)
    return _theirs(loop), min(grace_s, grace_s - (deadline - loop.time()))


def _retrieve(tasks: set[asyncio.Task[Any]]) -> None:
    """Mark what the ended ``tasks`` raised as seen: it was theirs to handle, not reported again
    ("Task exception was never retrieved")."""
    for task in tasks:
        if task.done() and not task.cancelled():
            task.exception()


def _run_until(
    loop: asyncio.AbstractEventLoop,
    done: Callable[[], bool],
    timeout_s: float,
    watched: set[asyncio.Task[Any]],
) -> bool:
    """Run ``loop`` until ``done()`` (checked as each step of the loop ends, at least every 50
    ms) or ``timeout_s`` seconds pass. A ``loop.stop()``, SystemExit or KeyboardInterrupt that
    code raised (a task, a callback: ``watched`` gets the tasks started meanwhile, what they raised
    marked as seen) ends one run of the loop only. Returns False when the user's Ctrl-C (a SIGINT,
    :func:`_ctrl_c_watched`) stopped it."""
    deadline = time.monotonic() + timeout_s
    presses = len(_PRESSES)
    while not done() and time.monotonic() < deadline:
        tick = loop.create_task(_tick(min(0.05, max(0.0, deadline - time.monotonic()))), name=_TICK)
        try:
            loop.run_until_complete(tick)
        except KeyboardInterrupt:
            tick.cancel()
            watched.update(t for t in asyncio.all_tasks(loop) if t not in watched)
            _retrieve(watched)
            if presses < len(_PRESSES):  # the user's Ctrl-C; a task's or a callback's goes on
                return False
        except (RuntimeError, SystemExit):  # "Event loop stopped before Future completed.", a task's exit
            tick.cancel()
    return True


#: The name of :func:`_run_until`'s own timer tasks: never counted as left behind.
_TICK = "evalctl-cleanup-tick"


def _theirs(loop: asyncio.AbstractEventLoop) -> list[asyncio.Task[Any]]:
    """The loop's pending tasks, but :func:`_run_until`'s own timers."""
    return [t for t in asyncio.all_tasks(loop) if not t.done() and t.get_name() != _TICK]


async def _tick(seconds: float) -> None:
    await asyncio.sleep(seconds)


def _left_behind(stuck: list[asyncio.Task[Any]], waited_s: float) -> str:
    names = ", ".join(_where(t) for t in stuck[:3])
    if len(stuck) > 3:
        names += f" and {len(stuck) - 3} more"
    count = f"{len(stuck)} task{'s' if len(stuck) != 1 else ''}"
    return (
        f"evalctl: {count} still running at the end did not end within {round(waited_s, 1):g} s of being "
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


def _close(loop: asyncio.AbstractEventLoop, budget: end_wait.Budget, say: Callable[[str], None]) -> None:
    """Close ``loop`` as ``Runner.close`` does, but without waiting for stuck tasks again
    (``Runner.close`` gathers every task), with a limit on the async generators' closing
    (``loop.shutdown_asyncgens``: a generator whose ``finally`` waits for ever held it for ever)
    and on the default executor's shutdown."""
    try:
        before = set(asyncio.all_tasks(loop))
        gens = asyncio.ensure_future(loop.shutdown_asyncgens(), loop=loop)
        began = time.monotonic()
        watched = {gens, *before}
        grace_s = budget.next()
        _run_until(loop, gens.done, grace_s, watched)
        _retrieve(watched - before - {gens})  # the tasks the generators' closing started
        if not gens.done():
            gens.cancel()
            _LEFT_BEHIND.append("async generators")
            waited = min(grace_s, time.monotonic() - began)  # less when a Ctrl-C ended it
            say(
                f"evalctl: async generators still closing {waited:.1f} s after the end (a `finally` "
                "that waits on and on) were left behind (what was written is complete)"
            )
        _stop_executor(loop, budget.next(), say)
    finally:
        for task in asyncio.all_tasks(loop):
            # asyncio's own flag: a task destroyed while pending is not logged at exit ("Task was
            # destroyed but it is pending!"): it was named above, or started while closing
            task._log_destroy_pending = False  # type: ignore[attr-defined]
            if task.get_name() == _TICK:  # a timer of ours a Ctrl-C cut: closed, never "not awaited"
                task.get_coro().close()
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
    with contextlib.suppress(KeyboardInterrupt):  # the user's stop (:func:`_ctrl_c_watched`) cuts it
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
    end_wait.NAMED.update(t for t in threads if t.is_alive())
    if alive := sum(t.is_alive() for t in threads):
        say(
            f"evalctl: {alive} thread{'s' if alive != 1 else ''} of asyncio's default executor "
            "(blocking calls given to asyncio.to_thread or run_in_executor) still running at the end "
            "(what was written is complete)"
        )


def stuck_threads(
    grace_s: float = GRACE_S, skip: set[threading.Thread] | None = None
) -> list[threading.Thread]:
    """The threads that would hold this process at its exit (alive, not daemon, not the main
    thread) once each was given up to ``grace_s`` seconds in all to end; [] when none. Those in
    ``skip`` (waited for and named already) are not waited for again."""
    deadline = time.monotonic() + grace_s
    for thread in threading.enumerate():
        if _holds_exit(thread) and thread not in (skip or ()):
            thread.join(max(0.0, deadline - time.monotonic()))
    return [t for t in threading.enumerate() if _holds_exit(t)]


def _holds_exit(thread: threading.Thread) -> bool:
    return (
        thread is not threading.main_thread()
        and thread is not threading.current_thread()
        and not thread.daemon
        and thread.is_alive()
    )


def _threads_after_stop(budget: end_wait.Budget, say: Callable[[str], None]) -> None:
    """After the user's stop, the threads that would hold the exit get what is left of the end's
    short wait now, and those still running are named here, before the run's summary: the exit
    (:func:`exit_process`) waits for them no more. A Ctrl-C or SIGTERM meanwhile cuts the wait."""
    presses = len(_PRESSES)
    with contextlib.suppress(KeyboardInterrupt):
        stuck_threads(budget.next(), skip=end_wait.NAMED)
    end_wait.THREADS_WAITED.append(True)
    new = [t for t in threading.enumerate() if _holds_exit(t) and t not in end_wait.NAMED]
    if new:
        cut = presses < len(_PRESSES)
        when = "when the stop cut the wait" if cut else f"{budget.total():g} s after the stop"
        say(_threads_line(new, when))
        end_wait.NAMED.update(new)


def _threads_line(stuck: list[threading.Thread], when: str) -> str:
    names = ", ".join(t.name for t in stuck[:3]) + (f" and {len(stuck) - 3} more" if len(stuck) > 3 else "")
    return (
        f"evalctl: {len(stuck)} thread{'s' if len(stuck) != 1 else ''} still running {when} "
        f"left behind: {names} (what was written is complete)"
    )


def exit_process(code: int, grace_s: float = GRACE_S, say: Callable[[str], None] | None = None) -> None:
    """End this process with ``code``. The interpreter joins every thread that is not a daemon
    before it exits, without a limit: a thread of the agent's code that never ends (an in-process
    agent, ``--workers 1``) held the process for ever after its summary was written. Such threads
    get ``grace_s`` seconds (:func:`stuck_threads`), then are named by ``say`` (default: a line on
    stderr) and left: the exit handlers run and the process ends at once (``os._exit``), as
    it does when :func:`run_to_end` left tasks or async generators behind (collected at the
    exit, their code would run again: a ``finally`` that never ends held the interpreter); a
    Ctrl-C or SIGTERM meanwhile ends the wait (``code`` stands, as after the tasks' wait), and
    one that already cut the tasks' wait (:func:`run_to_end`) leaves no thread wait at all.

    Without them the process ends the same way, once every thread has ended: the exit handlers,
    the output flushed, ``os._exit``. The interpreter's own teardown (every module and object
    freed one by one) would add nothing a finished run needs and costs time: 0.1-0.2 s once
    scipy is loaded (``import scipy.stats`` alone: 0.63-0.74 s against 0.52 s ending so), about
    5 % of the latency case of ``make bench`` (docs/performance.md)."""
    _wake_idle_pools()
    cut = bool(_PRESSES)  # the user already stopped the end of the run's wait once
    waited = cut or bool(end_wait.THREADS_WAITED)  # or a stopped run's end waited for them already
    try:
        with _ctrl_c_watched():
            stuck = stuck_threads(0.0 if waited else grace_s, skip=end_wait.NAMED)
    except KeyboardInterrupt:  # Ctrl-C while they are waited for: wait no more (the code stands)
        stuck, cut = [t for t in threading.enumerate() if _holds_exit(t)], True
    if not stuck:  # and what was left behind (tasks, generators) must not run again at the exit
        _exit_now(code)
    new = [t for t in stuck if t not in end_wait.NAMED]  # those named already are not named again
    if new:
        when = "when the stop cut the wait" if cut else f"{grace_s:g} s after the end"
        (say or _stderr)(_threads_line(new, when))
    _exit_now(code)


def _wake_idle_pools() -> None:
    """Tell the idle threads of every ``concurrent.futures.ThreadPoolExecutor`` of this process
    (an agent's module-level pool) to end, as the interpreter's own exit does before it joins
    the threads (``concurrent.futures.thread._python_exit``), without its join that has no limit:
    :func:`exit_process` gives them its grace. An idle pool thread then ends at once; before, it
    held the end for the whole grace (5 s) and was named as left behind. A thread still running
    a task finishes that task first, as at a normal exit. Uses that module's private state (the
    same in Python 3.9 to 3.13); nothing is done when it is not loaded or not as expected."""
    pools = sys.modules.get("concurrent.futures.thread")
    if pools is None:
        return
    with contextlib.suppress(Exception):
        with pools._global_shutdown_lock:
            vars(pools)["_shutdown"] = True  # the module's own flag (no typed attribute)
        for queue in list(pools._threads_queues.values()):
            queue.put(None)


def _exit_now(code: int) -> NoReturn:
    """Run the exit handlers (trace exporters' flush), flush the output, end the process at once."""
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)
