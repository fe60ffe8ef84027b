"""What a run did (``RunReport``): the small record of each finished session, the summary's running
totals, the summary once written, and the exit code that follows from them."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from engine.core.model import SessionResult
from engine.core.records.metrics import MetricsRecord
from engine.core.records.summary import SummaryRecord
from engine.results.outcomes import Outcome, outcome, stored_results
from engine.scoring.summary import SummaryTotals
from engine.scoring.summary_rows import SummaryRow
from engine.util.errors import BELOW_BAR_EXIT, INFRASTRUCTURE_EXIT, INTERRUPTED_EXIT, OK_EXIT


@dataclass
class RunReport:
    """What a run did: ``outcomes`` holds a small record per finished session
    (``engine.results.outcomes.Outcome``: never its DB or transcript; ``scored`` False when scoring
    failed, see ``scoring_errors``) and ``totals`` the summary's running totals of the results
    scored; :meth:`results` reads the whole sessions back from the run folder (laid out for
    ``trials``). ``skipped`` were already complete (``--resume``)."""

    run_dir: Path
    outcomes: list[Outcome] = field(default_factory=list, repr=False)
    scoring_errors: dict[str, str] = field(default_factory=dict)
    summary: SummaryRecord | None = None
    interrupted: bool = False
    skipped: int = 0
    wall_s: float = 0.0
    trials: int = 1
    totals: SummaryTotals = field(default_factory=SummaryTotals, repr=False)
    #: Ctrl-C presses the run took (``engine.run.runner.CtrlC``): the outcome is printed counting on.
    ctrl_c_presses: int = 0
    #: A voice run's cache line (``engine.session.voice.cache.VoiceCache.line``: hits and misses of
    #: synthesis and recognition in this process), printed with the summary; None otherwise.
    voice_cache: str | None = None
    #: Why the summary's statistics could not be computed (``engine.scoring.stats.unavailable``:
    #: scipy cannot be imported); its intervals are then left out and the run exits 3.
    statistics_unavailable: str | None = None
    #: ``time.perf_counter()`` when the last session was added (None: none yet): where the sessions'
    #: work ended, before a worker's shutdown (``evalctl load`` times its steps to it).
    last_added_at: float | None = None
    #: The sessions the run plans while a stop, once they are all in :attr:`outcomes`, only cuts
    #: the end-of-run wait and the run ends complete (its sessions in worker processes:
    #: ``engine.run.workers``); None otherwise (one process, adaptive rounds, the wind-down).
    planned: int | None = None

    def all_reported(self) -> bool:
        """True when every session of :attr:`planned` has been reported: a stop now cuts no session
        (``engine.run.interrupt.CtrlC`` says so)."""
        return self.planned is not None and len(self.outcomes) >= self.planned

    def add(self, result: SessionResult, metrics: MetricsRecord | None) -> None:
        """Keep what the report needs of a finished session (its small record, and its metrics in
        the running totals); the session itself is let go."""
        self.outcomes.append(outcome(result, metrics))
        self.last_added_at = time.perf_counter()
        if metrics is not None:
            self.totals.add(metrics)

    def add_reported(self, done: Outcome, row: SummaryRow | None) -> None:
        """Keep a session a worker process stored and scored: its small record and its summary
        row (``SummaryTotals.add_row``; None when it was not scored)."""
        self.outcomes.append(done)
        self.last_added_at = time.perf_counter()
        if row is not None:
            self.totals.add_row(row)

    def results(self) -> Iterator[tuple[SessionResult, MetricsRecord | None]]:
        """Each finished session and its metrics as stored, read back one at a time (in the order
        of ``outcomes``; ``engine.results.outcomes.stored_results``)."""
        return stored_results(self.run_dir, self.outcomes, self.trials)

    def overall_rate(self) -> float | None:
        """The composite success rate over the run directory (0..1; the ``error`` results left
        out), None when not applicable."""
        if self.summary is None:
            return None
        rate = self.summary.overall.rate
        return None if rate is None else float(rate)

    def strict_rate(self) -> float | None:
        """The composite rate with the ``error`` results counted as failures (0..1), None when
        not applicable (``engine.core.records.summary.StrictTally``)."""
        if self.summary is None:
            return None
        rate = self.summary.strict_tally.rate
        return None if rate is None else float(rate)

    @property
    def composite_rate(self) -> float:
        """The composite (overall) success rate, 0..1, the ``error`` results left out; NaN when not
        applicable or not summarised (every comparison with NaN is False: an assertion fails)."""
        rate = self.overall_rate()
        return float("nan") if rate is None else rate

    @property
    def strict_success_rate(self) -> float:
        """The strict rate (``error`` results counted as failures; what ``--fail-under`` judges),
        0..1; NaN when not applicable or not summarised."""
        rate = self.strict_rate()
        return float("nan") if rate is None else rate

    def judged_rate(self, allow_errors: bool) -> float | None:
        """The rate ``--fail-under`` judges: the strict rate, or with ``allow_errors`` the overall
        rate (the ``error`` results left out)."""
        return self.overall_rate() if allow_errors else self.strict_rate()

    @property
    def errors(self) -> int:
        """Results of the run directory with the verdict ``error`` (no verdict: infrastructure)."""
        return self.summary.errors if self.summary is not None else 0

    @property
    def missing(self) -> int:
        """Planned results of the run directory that have no ``metrics.json`` (never run, or not
        scored: a stored session that could not be read back)."""
        return len(self.summary.missing) if self.summary is not None else 0

    def exit_code(self, fail_under: float | None = None, allow_errors: bool = False) -> int:
        """130 when interrupted; 3 (``INFRASTRUCTURE_EXIT``) when some planned result is missing
        or could not be scored, or when the summary's statistics could not be computed
        (:attr:`statistics_unavailable`; whatever ``allow_errors``); 1 when ``fail_under`` (0..1) is set
        and the rate it judges (:meth:`judged_rate`: the strict rate, errors counted as failures,
        unless ``allow_errors``) is below it or not applicable; else 3 when some result has the
        verdict ``error`` unless ``allow_errors``; else 0. A run below its bar counting its
        errors as failures is below it whatever they were hiding: errors cannot turn a 1 into a 3."""
        if self.interrupted:
            return INTERRUPTED_EXIT
        if self.missing or self.scoring_errors or self.statistics_unavailable:
            return INFRASTRUCTURE_EXIT
        if fail_under is not None:
            rate = self.judged_rate(allow_errors)
            if rate is None or rate < fail_under:
                return BELOW_BAR_EXIT
        if self.errors and not allow_errors:
            return INFRASTRUCTURE_EXIT
        return OK_EXIT

    def summary_text(self) -> str:
        """The run's ``all_summary.txt`` (empty when it was not written)."""
        path = self.run_dir / "all_summary.txt"
        return path.read_text(encoding="utf-8") if path.is_file() else ""
