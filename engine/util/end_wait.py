"""How long a process's end waits for what is still running (``engine.util.aio``) once the user
stopped it (Ctrl-C, SIGTERM), and what a second stop cuts.

Without a stop, each of the end's waits (tasks, async generators, the default executor's
threads, the threads that would hold the interpreter) gets ``engine.util.aio.GRACE_S``. After a
stop the sessions were cancelled already: what is left is what the agent's code leaves running
(a task ignoring its cancellation, a blocking call in a thread), so all of the end's waits share
:data:`STOPPED_GRACE_S` in all, each ending as soon as what it waits for has ended; before, such
an agent held a stopped run 10 s (5 s for the executor's threads, 5 s more for the same threads at
the exit). A second stop cuts the wait at once (``engine.util.aio``; in a ``--workers`` run the
run's process passes it on to its workers: :func:`add_cut`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

#: Seconds, in all, the end of a stopped process waits for what is left running.
STOPPED_GRACE_S = 1.0

#: Seconds each wait gets at least, once the others used the stopped end's share: what ends as
#: soon as it is given the chance (async generators closing) is not named as left behind.
MIN_STEP_S = 0.1

_STOPPED: list[float] = []  # the monotonic time of the user's stop
_CUTS: list[Callable[[], None]] = []  # what a second stop calls (:func:`cut`)
#: Threads already named as left behind: neither waited for nor named again at the exit.
NAMED: set[threading.Thread] = set()
#: Set once the end of a stopped run waited for the threads: the exit waits for them no more.
THREADS_WAITED: list[bool] = []


def mark_stopped() -> None:
    """The user stopped this process (the first Ctrl-C or SIGTERM): its end waits briefly."""
    if not _STOPPED:
        _STOPPED.append(time.monotonic())


def stopped() -> bool:
    return bool(_STOPPED)


def reset() -> None:
    """Forget an earlier run's stop (a process that runs again: the Python API, a notebook, the
    tests): each run's end waits by its own stop only."""
    _STOPPED.clear()
    _CUTS.clear()
    NAMED.clear()
    THREADS_WAITED.clear()


class Budget:
    """The end's waits: ``grace_s`` each, or :data:`STOPPED_GRACE_S` for all of them together
    once the process was stopped (:func:`stopped`, checked at each wait); :data:`MIN_STEP_S`
    once ``cut()`` (a stop during the waits)."""

    def __init__(self, grace_s: float, cut: Callable[[], bool] = lambda: False) -> None:
        self.grace_s = grace_s
        self.cut = cut
        self.deadline: float | None = None

    def next(self) -> float:
        """The seconds the next wait may take."""
        if self.cut():
            return MIN_STEP_S
        if not stopped():
            return self.grace_s
        if self.deadline is None:
            self.deadline = time.monotonic() + min(self.grace_s, STOPPED_GRACE_S)
        return max(MIN_STEP_S, self.deadline - time.monotonic())  # a step gets the loop turning once

    def total(self) -> float:
        """What the waits get: for the lines naming what was left behind."""
        return min(self.grace_s, STOPPED_GRACE_S) if stopped() else self.grace_s


def add_cut(callback: Callable[[], None]) -> None:
    """Call ``callback`` on a second stop (until :func:`remove_cut`): e.g. pass it on to workers."""
    _CUTS.append(callback)


def remove_cut(callback: Callable[[], None]) -> None:
    if callback in _CUTS:
        _CUTS.remove(callback)


def cut() -> None:
    """A second stop: every registered callback (a signal handler's: each must be quick)."""
    for callback in list(_CUTS):
        callback()
