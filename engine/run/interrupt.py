"""What each Ctrl-C (and a SIGTERM) does to a run (``engine.run.runner.run_cli``), and to the printing of an
interrupted run's outcome."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Callable, Iterator
from typing import Any

from engine.results.run_report import RunReport
from engine.util import end_wait


class CtrlC:
    """What each Ctrl-C does to a run (the ``task`` running it): the first cancels it (the sessions
    in flight stop, the finished ones and the summary are written) and says so; the second only
    says the summary is coming (it used to quit without one); the third quits at once
    (KeyboardInterrupt), the results written so far kept."""

    FIRST = "stopping: the sessions in flight are cut; the finished ones are kept"
    #: The first press once every session has been reported (``RunReport.all_reported``): the run
    #: is in its end-of-run wait (a worker waiting for a thread the agent's code left running).
    FIRST_REPORTED = "stopping: every session has been reported; cutting the end-of-run wait"
    SECOND = "still writing; Ctrl-C once more quits without the summary (the results written so far are kept)"

    def __init__(self, task: asyncio.Task[Any]) -> None:
        self.task = task
        self.presses = 0
        self.report: RunReport | None = None  # the run's, once it is planned (:meth:`watch`)

    def watch(self, report: RunReport) -> None:
        """The run's report, read at the first press: once every session has been reported the
        first press says it cuts the end-of-run wait, not sessions (:data:`FIRST_REPORTED`)."""
        self.report = report

    def first(self) -> str:
        """What the first press says: :data:`FIRST`, or :data:`FIRST_REPORTED` once every session
        has been reported (nothing is in flight)."""
        if self.report is not None and self.report.all_reported():
            return self.FIRST_REPORTED
        return self.FIRST

    QUIT = "quitting without the summary (the results written so far are kept)"

    def on_signal(self, loop: asyncio.AbstractEventLoop) -> Callable[[int, Any], None]:
        """A SIGINT handler (``signal.signal``) counting the presses as :meth:`press` does, that
        works while the event loop is busy or blocked: Python runs it between two bytecodes of the
        main thread, wherever that is (a turn of an in-process agent that never awaits, the
        run's synchronous wind-down). The first press cancels the run's task through the loop
        (``call_soon_threadsafe``), the second says the summary is coming, the third quits there
        and then (exit 130, ``os._exit``: nothing the stuck loop would have to run). Before, the
        presses went through the loop (``add_signal_handler``): a loop that did not turn never
        saw them, and the ones made during the wind-down were dropped with the handler."""

        def handler(signum: int, frame: Any) -> None:
            self.presses += 1
            if self.presses > 2:
                with contextlib.suppress(Exception):
                    sys.stdout.flush()
                os.write(2, f"evalctl: {self.QUIT}\n".encode())
                os._exit(130)
            if self.presses == 1:
                end_wait.mark_stopped()  # the end then waits briefly for what is left running
                loop.call_soon_threadsafe(self.task.cancel)
            else:
                end_wait.cut()  # workers still ending after the stop: they end now
            # on a terminal the progress bar holds the cursor's line: the message starts a new one
            lead = "\n" if os.isatty(2) else ""
            os.write(2, f"{lead}evalctl: {self.first() if self.presses == 1 else self.SECOND}\n".encode())

        return handler

    def press(self) -> None:
        self.presses += 1
        if self.presses > 2:
            raise KeyboardInterrupt
        if self.presses == 1:
            end_wait.mark_stopped()
            self.task.cancel()
        else:
            end_wait.cut()
        print(f"evalctl: {self.first() if self.presses == 1 else self.SECOND}", file=sys.stderr, flush=True)

    def terminate(self) -> None:
        """SIGTERM (a CI timeout, ``kill``; through the loop): stops the run as a first Ctrl-C does
        and says so with the same line (:meth:`first`), counted as that press (a Ctrl-C after it
        is a second). A SIGTERM after a stop cancels again, silently. Before, a SIGTERM stopped
        the run without a word until its closing ``interrupted`` line."""
        end_wait.mark_stopped()
        self.task.cancel()
        if self.presses == 0:
            self.presses = 1
            print(f"evalctl: {self.first()}", file=sys.stderr, flush=True)

    @staticmethod
    @contextlib.contextmanager
    def while_printing(report: RunReport) -> Iterator[None]:
        """Ctrl-C while the outcome of an interrupted run is printed (the run's loop and its
        handler are gone by then) counts on from the run's presses: a second only says the rest is
        coming, a third quits. Before, the default handler quit at once and cut the table and the
        resume hint (``interrupted; finished results kept in ...``)."""
        if not report.interrupted:
            yield
            return
        presses = max(report.ctrl_c_presses, 1)

        def press(signum: int, frame: Any) -> None:
            nonlocal presses
            presses += 1
            if presses > 2:
                raise KeyboardInterrupt
            print(f"evalctl: {CtrlC.SECOND}", file=sys.stderr, flush=True)

        try:
            previous = signal.signal(signal.SIGINT, press)
        except ValueError:  # not the main thread
            yield
            return
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)
