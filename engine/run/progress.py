"""Run progress: a live rich display on a terminal, one plain line per scenario otherwise.

In plain lines (a log, CI), a run that shows nothing for :data:`QUIET_LINE_S` seconds (a long
session: a real model, a cold voice run's speech recognition) prints one ``still running`` line
then, and again after each such stretch, so a log never looks hung (a timer on the run's event
loop, not a thread: worker processes are forked only while no other thread runs); the live
display shows its clock instead.
"""

from __future__ import annotations

import asyncio
import sys
import time
from dataclasses import dataclass
from types import TracebackType
from typing import Protocol

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.progress import Progress as RichProgress

from engine.core.model import Scenario, SessionResult
from engine.core.records.metrics import MetricsRecord
from engine.util.untrusted import one_line


def passed(metrics: MetricsRecord | None, result: SessionResult) -> bool:
    """Whether a finished session counts as passing: its composite verdict is True (False when
    scoring failed: ``metrics`` None)."""
    return metrics is not None and metrics.is_successful is True


class Sink(Protocol):
    """Where a run's finished sessions go: a :class:`Progress`, or a worker's pipe to its run."""

    def started(self, scenario_name: str, trial: int) -> None:
        """The session ``scenario_name`` #``trial`` is about to talk to the sides (each attempt)."""

    def talked(self, scenario: Scenario, result: SessionResult) -> None:
        """That session's conversation is over (``result``, of ``scenario``); storing and scoring
        it come next."""

    def done(self, result: SessionResult, metrics: MetricsRecord | None) -> None: ...


#: Seconds without a plain progress line after which one ``still running`` line is printed.
QUIET_LINE_S = 30.0


class Progress:
    """Counts done / passing / failing sessions out of ``total``; a context manager.

    ``enabled`` None = live display when stderr is a terminal, plain lines on stderr otherwise;
    False = plain lines; True = live display. ``quiet`` shows nothing. ``quiet_line_s``: seconds
    of silence before a plain ``still running`` line (default :data:`QUIET_LINE_S`; module doc).
    """

    def __init__(
        self,
        total: int,
        enabled: bool | None = None,
        quiet: bool = False,
        trials: int = 1,
        quiet_line_s: float | None = None,
    ):
        self.total = total
        self.trials = trials
        self.done_count = self.passing = self.failing = 0
        self.t0 = time.perf_counter()
        self._quiet_line_s = QUIET_LINE_S if quiet_line_s is None else quiet_line_s
        self._last_line = self.t0
        self._timer: asyncio.TimerHandle | None = None
        self.console = Console(stderr=True)
        live = self.console.is_terminal if enabled is None else enabled
        self.quiet = quiet
        self._bar: RichProgress | None = None
        if live and not quiet:
            self._bar = RichProgress(
                TextColumn("[bold]run"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("[green]{task.fields[passing]} passing [red]{task.fields[failing]} failing"),
                TimeElapsedColumn(),
                console=self.console,
                transient=False,
            )
            self._task = self._bar.add_task("run", total=total, passing=0, failing=0)

    def __enter__(self) -> Progress:
        if self._bar is not None:
            self._bar.start()
        elif not self.quiet:
            self._arm()
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._bar is not None:
            self._bar.stop()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _arm(self) -> None:
        """Schedule :meth:`_quiet_check` for when ``quiet_line_s`` will have passed since the last
        line (nothing without a running event loop)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        delay = max(0.0, self._last_line + self._quiet_line_s - time.perf_counter())
        self._timer = loop.call_later(delay, self._quiet_check)

    def _quiet_check(self) -> None:
        """Print a ``still running`` line when no line was printed for ``quiet_line_s``; re-arm."""
        now = time.perf_counter()
        silent = now - self._last_line
        if silent >= self._quiet_line_s and self.done_count < self.total:
            done = "no session has ended yet" if not self.done_count else f"none ended for {silent:.0f}s"
            self._print(f"[{self.done_count}/{self.total} {now - self.t0:6.1f}s] still running: {done}")
        self._arm()

    def _print(self, line: str) -> None:
        """One plain line on stderr, in one write: a Ctrl-C's message (written by the signal
        handler between two bytecodes) lands before or after it, never inside it."""
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
        self._last_line = time.perf_counter()

    def grow(self, more: int) -> None:
        """``more`` sessions were added to the run (a round of adaptive trials)."""
        if more <= 0:
            return
        self.total += more
        if self._bar is not None:
            self._bar.update(self._task, total=self.total)

    def started(self, scenario_name: str, trial: int) -> None:
        """Nothing to show until the session ends."""

    def talked(self, scenario: Scenario, result: SessionResult) -> None:
        """Nothing to show until the session is scored."""

    def done(self, result: SessionResult, metrics: MetricsRecord | None) -> None:
        """Record one finished session and show it."""
        self.show(Finished.of(result, metrics))

    def show(self, fin: Finished) -> None:
        """Record one finished session (from this process or a worker's) and show it."""
        self.done_count += 1
        if fin.ok:
            self.passing += 1
        else:
            self.failing += 1
        if self._bar is not None:
            self._bar.update(self._task, advance=1, passing=self.passing, failing=self.failing)
            return
        if self.quiet:
            return
        label = fin.scenario_name + (f"#{fin.trial}" if self.trials > 1 else "")
        elapsed = time.perf_counter() - self.t0
        self._print(
            f"[{self.done_count}/{self.total} {elapsed:6.1f}s] {fin.verdict} {label}"
            f" stop={fin.stop_reason} turns={fin.agent_turns} {fin.duration_s:.2f}s{fin.note}"
        )


#: The most characters of an error the progress line shows (the full text is in the records).
NOTE_LIMIT = 200


@dataclass(frozen=True)
class Finished:
    """What the progress display shows of one finished session (small: worker processes send it
    to the run's process). ``verdict`` PASS / FAIL / ERROR; ``note`` the error, with a leading
    space, or ""."""

    scenario_name: str
    trial: int
    ok: bool
    verdict: str
    stop_reason: str
    agent_turns: int
    duration_s: float
    note: str

    @classmethod
    def of(cls, result: SessionResult, metrics: MetricsRecord | None) -> Finished:
        ok = passed(metrics, result)
        note = f" ({one_line(result.error, NOTE_LIMIT)})" if result.error else ""
        cause = metrics.error_cause if metrics is not None else None
        if cause is not None and (cause.source == "judge" or not result.error):
            note = f" ({one_line(cause, NOTE_LIMIT)})"  # the judge, a gating installed signal
        verdict = "PASS" if ok else "ERROR" if cause is not None else "FAIL"
        if metrics is None:  # stored but not scored (or not even stored): no verdict to show
            verdict, note = "ERROR", f"{note} (not scored: see the end of the run)"
        return cls(
            result.scenario_name,
            result.trial,
            ok,
            verdict,
            str(result.stop_reason),
            result.agent_turns,
            result.duration_s,
            note,
        )
