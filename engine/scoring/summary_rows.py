"""What the run summary needs of one result: a small row cut from its metrics record.

``engine.scoring.summary`` aggregates these rows; a run keeps one row per (scenario, trial) — a
few hundred bytes, never the verdict lists, DBs or transcripts — so its summary is built from
running totals however many results it has.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engine.core.records.common import ErrorCause, spent
from engine.core.records.fidelity import Attribution
from engine.core.records.metrics import SIGNALS, MetricsRecord
from engine.core.records.voice import VoiceSummary
from engine.util.untrusted import bounded_count, one_line


@dataclass(frozen=True)
class SummaryRow:
    """One result as the summary counts it (fields as in ``engine.core.records.metrics.MetricsRecord``):
    ``values`` maps each signal with one value per result and each diagnostic to its value;
    ``assertions`` maps each signal whose rate counts items (``db_state_assertion``,
    ``nl_assertion``, ...) to (passed, total) of its verdicts and ``units`` to what they are;
    ``signal_names`` the signals the record holds (the six, then the registered others),
    ``reported_signals`` those among them that are reported only (role ``diagnostic``); ``usage`` is
    (role, model on one line or None, prompt tokens, completion tokens, calls, calls whose tokens
    are unknown) per usage entry,
    the superseded attempts' included, counts bounded (``engine.util.untrusted.bounded_count``);
    ``voice`` an audio session's voice summary (None otherwise; ``engine.scoring.voice_figures``)."""

    scenario_name: str
    trial: int
    is_successful: bool | str
    is_task_successful: bool | str
    is_error: bool
    error_cause: ErrorCause | None
    stalled: bool
    stop_reason: str | None
    error: str | None
    duration_s: float
    failed_signals: tuple[str, ...]
    judge_error: str | None
    success_signals: tuple[str, ...]
    diagnostic_names: tuple[str, ...]
    values: dict[str, Any]
    assertions: dict[str, tuple[int, int]]
    usage: tuple[tuple[str, str | None, int, int, int, int], ...]
    #: (role, model) of the result's own usage entries that name a model (as written)
    models: tuple[tuple[str, str], ...] = ()
    min_agent_turns: int = 0
    signal_names: tuple[str, ...] = SIGNALS
    units: dict[str, str] = field(default_factory=dict)
    reported_signals: tuple[str, ...] = ()
    #: A FAIL's attribution; the reasons of the attempts a regeneration replaced.
    attribution: Attribution | None = None
    replaced: tuple[str, ...] = ()
    #: The caller's backend and its spoken turns (None: a record before version 4).
    user_backend: str = ""
    caller_turns: int | None = None
    voice: VoiceSummary | None = None

    @property
    def key(self) -> tuple[str, int]:
        return self.scenario_name, self.trial


def summary_row(m: MetricsRecord) -> SummaryRow:
    """The row of one metrics record."""
    names = m.diagnostic_names
    values: dict[str, Any] = {}
    assertions: dict[str, tuple[int, int]] = {}
    units: dict[str, str] = {}
    for name in (*m.signal_names, *names):
        items = m.signals.item_verdicts(name)
        if items is None:
            values[name] = m.signals.value(name)
            continue
        units[name], verdicts = items
        assertions[name] = (sum(1 for v in verdicts if v.get("passed") is True), len(verdicts))
    usage = tuple(
        (
            role,
            one_line(u.model, 200) if u.model else None,  # a side's text
            bounded_count(u.prompt_tokens),  # a side's numbers (also from an older metrics.json)
            bounded_count(u.completion_tokens),
            bounded_count(u.calls),
            bounded_count(u.unreported),
        )
        for role, u in [*m.usage.items(), *((e.role, e.usage) for e in spent(m.superseded_usage))]
    )
    return SummaryRow(
        scenario_name=m.scenario_name,
        trial=m.trial,
        is_successful=m.is_successful,
        is_task_successful=m.is_task_successful,
        is_error=m.is_error,
        error_cause=m.error_cause,
        stalled=m.stalled,
        stop_reason=m.stop_reason,
        error=m.error,
        duration_s=float(m.duration_s),
        failed_signals=tuple(m.success_breakdown.failed),
        judge_error=m.signals.judge_error,
        success_signals=tuple(m.success_signals),
        diagnostic_names=tuple(names),
        values=values,
        assertions=assertions,
        usage=usage,
        models=tuple((role, u.model) for role, u in m.usage.items() if u.model),
        min_agent_turns=m.min_agent_turns,
        signal_names=m.signal_names,
        units=units,
        reported_signals=tuple(n for n in m.signal_names if m.signals.role(n) == "diagnostic"),
        attribution=m.attribution,
        replaced=m.user_fidelity.replaced if m.user_fidelity is not None else (),
        user_backend=m.user_backend,
        caller_turns=m.user_fidelity.turns if m.user_fidelity is not None else None,
        voice=m.voice,
    )
