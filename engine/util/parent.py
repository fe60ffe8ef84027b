"""A child process that ends when the process that started it dies, even by ``kill -9``.

Used by the ``--workers`` processes (``engine.run.workers``) and the voice pool's workers
(``engine.session.voice.pool``): without it they are re-parented to PID 1 and run on forever.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading

_PR_SET_PDEATHSIG = 1


def stop_with_parent(parent: int) -> None:
    """On Linux, ask for SIGTERM when the parent process ends (``PR_SET_PDEATHSIG``): a worker of a
    run killed with SIGKILL stops at once, as after Ctrl-C, instead of running on until it next
    reports. When the parent (pid ``parent``) is already gone, end at once (``os._exit(1)``). Call
    it once the process's own SIGTERM action is in place (a forked worker's inherited one is the
    run's loop's). The kernel sends the signal when the parent's *thread* that started this
    process ends: start the child from a thread that lives as long as the parent process does
    (else see :func:`watch_parent`). Elsewhere than Linux: nothing."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # it died before the request: nothing was done yet, end now
        os._exit(1)


def watch_parent(parent: int, interval_s: float = 0.5, grace_s: float = 0.0) -> threading.Thread:
    """A daemon thread that ends this process (``os._exit(1)``) within about ``interval_s``
    seconds of the parent (pid ``parent``) ending, on any platform and whatever thread started
    it: the parent pid, polled (an orphan's parent becomes another process). ``grace_s``: seconds
    left first for a graceful stop (a worker's SIGTERM from :func:`stop_with_parent`), which an
    event loop blocked by the user's code cannot act on. Returns the thread."""

    def watch() -> None:
        while os.getppid() == parent:
            threading.Event().wait(interval_s)
        if grace_s > 0:
            threading.Event().wait(grace_s)
        os._exit(1)

    thread = threading.Thread(target=watch, name="evalctl-parent-watch", daemon=True)
    thread.start()
    return thread
