"""The traces of a run (``evalctl run --otel / --trace-file``): each scored result's stored session
read back from the run folder and handed to :class:`engine.session.tracing.SessionTracer` with
its verdict and, with a price table, its cost per role. Reading the folder after the run keeps
the conversation loop untouched and works the same for ``--workers``, shards and Ray."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engine.results.costs import PriceTable, run_costs
from engine.results.scoring_stage import scored_dirs
from engine.results.session_files import load_session
from engine.session.tracing import SessionTracer


@dataclass(frozen=True)
class TraceCounts:
    """What :func:`export_run_traces` did: ``results`` scored results, ``traced`` traces built
    (written to the trace file when one is given), ``otlp_failed`` of those the collector did not
    take, ``unreadable`` results whose stored session does not read (no trace); ``gave_up``: the
    collector failed ``engine.session.tracing.OTLP_GIVE_UP`` exports in a row, and the traces
    after those were not sent (counted in ``otlp_failed``)."""

    results: int
    traced: int
    otlp_failed: int
    unreadable: int
    gave_up: bool = False

    @property
    def exported(self) -> int:
        """Traces the OTLP collector took."""
        return self.traced - self.otlp_failed


def export_run_traces(
    run_dir: Path, *, otlp: bool = False, trace_file: Path | None = None, prices: PriceTable | None = None
) -> TraceCounts:
    """Export one trace per scored result of ``run_dir``; returns the counts. Raises UsageError without
    the ``[otel]`` extra, OutputError (one line, exit 2) when ``trace_file`` cannot be written."""
    rows = scored_dirs(Path(run_dir))
    costs = {(s.scenario, s.trial): s for s in run_costs([m for _, m in rows], prices).scenarios}
    skipped = 0
    with SessionTracer(otlp=otlp, trace_file=trace_file) as tracer:
        for sdir, m in rows:
            try:
                _, result = load_session(sdir)
            except (OSError, ValueError):
                skipped += 1
                continue
            cost = costs.get((m.scenario_name, m.trial))
            tracer.export(
                result,
                m.is_successful,
                m.success_breakdown.failed,
                str(m.error_cause) if m.error_cause is not None else None,
                {role: rc.cost for role, rc in cost.roles.items()} if cost is not None else None,
            )
        return TraceCounts(len(rows), tracer.sessions, tracer.failed_exports, skipped, tracer.gave_up)
