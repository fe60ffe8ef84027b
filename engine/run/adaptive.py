"""Adaptive trials (``evalctl run --trials auto[:MAX]``): spend trials where verdicts disagree.

Every scenario runs :data:`FIRST_TRIALS` times; then, round after round, each scenario whose
verdicts disagree (a flaky one, ``engine.scoring.noise``) and that has fewer than MAX trials
gets one more, until the overall rate's 95 % interval (``engine.scoring.stats``: the bootstrap
over scenarios) is no wider than ``--target-width`` (default :data:`DEFAULT_TARGET_WIDTH`), no
flaky scenario is left below MAX, or the run is interrupted. A scenario whose trials agree gets
no more: another trial would most likely agree again, and the interval treats the scenario as
the unit. ``adaptive.json`` (``engine.results.adaptive_record``) records the spend after every
round and the summary repeats it (``adaptive``: sessions, rounds, why it stopped).

A resume of an adaptive run keeps its MAX and target width (run settings); it completes the
first two trials and the trials a round had started, then goes on with the rounds.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from engine.core.model import Scenario
from engine.core.options import RunOptions
from engine.core.records.intervals import (
    STOP_INTERRUPTED,
    STOP_MAX,
    STOP_STABLE,
    STOP_TARGET,
    Adaptive,
)
from engine.results.adaptive_record import read_adaptive, write_adaptive
from engine.results.resume import Job, longest_first, plan_jobs
from engine.results.run_report import RunReport
from engine.results.scoring_stage import run_totals
from engine.util.errors import UsageError

#: Trials per scenario before any is spent adaptively.
FIRST_TRIALS = 2
#: ``--trials auto``: at most this many trials per scenario.
DEFAULT_MAX = 8
#: ``--target-width`` when not given: 10 points (the 95 % interval about ±5 points).
DEFAULT_TARGET_WIDTH = 0.10


def parse_trials(text: str) -> tuple[int, bool]:
    """``--trials``: ``"3"`` → (3, False); ``"auto"`` → (:data:`DEFAULT_MAX`, True); ``"auto:5"``
    → (5, True). Raises UsageError (one line) for anything else, a count below 1 or a MAX below 2."""
    value = text.strip().lower()
    if value.isdigit() and int(value) >= 1:
        return int(value), False
    if value == "auto":
        return DEFAULT_MAX, True
    head, _, most = value.partition(":")
    if head == "auto" and most.isdigit() and int(most) >= FIRST_TRIALS:
        return int(most), True
    raise UsageError(
        f"--trials {text!r}: give a number of trials (1 or more), auto, or auto:MAX with MAX of at least "
        f"{FIRST_TRIALS} (e.g. auto:{DEFAULT_MAX})"
    )


class AdaptiveRounds:
    """The rounds of one adaptive run in ``run_dir``: :meth:`first` plans the first trials,
    :meth:`next_round` (after each round) decides the next one from every result of the run (this
    invocation's in ``report.totals``, earlier ones' read from the folder) and records the spend."""

    def __init__(
        self,
        opts: RunOptions,
        run_dir: Path,
        chosen: list[Scenario],
        report: RunReport,
        info: Mapping[str, Any],
    ) -> None:
        if opts.adaptive_target_width is None:
            raise ValueError("adaptive rounds for a run with a fixed number of trials")
        self.opts, self.run_dir, self.report, self.info = opts, run_dir, report, info
        self.by_name = {s.name: s for s in chosen}
        self.target = opts.adaptive_target_width
        self.rounds = 0
        self.first_planned = 0
        self.record = Adaptive(0, 0, opts.trials, self.target, None, STOP_INTERRUPTED)

    def first(self) -> list[Job]:
        """The first jobs: every scenario's first two trials (a resume: those not done, and the
        later trials a round had started); records the run as adaptive before anything runs.

        A resume keeps the spend ``adaptive.json`` recorded (never overwritten with zeros); a
        round it cut (``stopped`` still ``interrupted``) is decided again, counted once. When
        nothing of the first trials is left (killed during an extra round), the first jobs are
        the next round's: the run goes on instead of ending with no session."""
        recorded = read_adaptive(self.run_dir) if self.opts.resume is not None else None
        if recorded is None:
            self._write(self.record)
        else:
            cut = recorded.stopped == STOP_INTERRUPTED and recorded.rounds > 0
            self.rounds = recorded.rounds - 1 if cut else recorded.rounds
            self.record = recorded
        jobs = plan_jobs(list(self.by_name.values()), self.opts, self.run_dir, upto=FIRST_TRIALS)
        self.first_planned = len(jobs)
        if not jobs and self.opts.resume is not None:
            return self.next_round()
        return jobs

    def next_round(self) -> list[Job]:
        """The next round's jobs (none: the run stops; the record says why)."""
        totals = run_totals(self.run_dir, self.report.totals, self.opts.trials)
        rows = [r for r in totals.rows() if r.scenario_name in self.by_name]
        summary = totals.summary({**self.info, "adaptive": self.record}, str(self.run_dir))
        ci = summary.overall.ci
        width = None if ci is None else ci.width
        done: dict[str, set[int]] = {}
        verdicts: dict[str, set[bool]] = {}
        for r in rows:
            done.setdefault(r.scenario_name, set()).add(r.trial)
            if not r.is_error and isinstance(r.is_successful, bool):
                verdicts.setdefault(r.scenario_name, set()).add(r.is_successful)
        flaky = [name for name in self.by_name if len(verdicts.get(name, ())) > 1]
        room = {name: self._next_trial(done.get(name, set())) for name in flaky}
        jobs = [Job(self.by_name[name], k, "run") for name, k in room.items() if k is not None]
        stopped = STOP_INTERRUPTED
        if width is not None and width <= self.target:
            stopped, jobs = STOP_TARGET, []
        elif not jobs:
            stopped = STOP_MAX if flaky else STOP_STABLE
        else:
            self.rounds += 1
        self.record = Adaptive(len(rows), self.rounds, self.opts.trials, self.target, width, stopped)
        self._write(self.record)
        return longest_first(jobs)

    def _next_trial(self, done: set[int]) -> int | None:
        """The lowest trial not yet run (a gap an interrupted round left first), None at MAX."""
        return next((k for k in range(1, self.opts.trials + 1) if k not in done), None)

    def _write(self, record: Adaptive) -> None:
        write_adaptive(self.run_dir, record)
