"""Complete metrics records for summary tests: every field set, the ones a test cares about given."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from engine import __version__
from engine.core.records.metrics import Breakdown, MetricsRecord, SignalFields, Usage

_SIGNALS = SignalFields(
    is_action_match="N/A",
    db_state_match=True,
    db_state_assertion_pass_rate=None,
    db_state_assertion_verdicts=(),
    nl_assertion_pass_rate=None,
    nl_assertion_verdicts=(),
    judge_passed=None,
    judge_score=None,
    judge_error=None,
    clean_exit=True,
    diagnostics={},
)


def metrics_row(
    scenario_name: str,
    trial: int = 1,
    is_successful: bool | str = True,
    *,
    failed: tuple[str, ...] = (),
    signals: dict[str, Any] | None = None,
    **changes: Any,
) -> MetricsRecord:
    """A scored result of ``scenario_name``: a clean replay session unless ``changes`` say
    otherwise; ``failed`` the breakdown's failed signals, ``signals`` changes to the signal fields."""
    record = MetricsRecord(
        scenario_name=scenario_name,
        record_id="0",
        domain="test",
        trial=trial,
        is_successful=is_successful,
        is_task_successful=is_successful,
        error_cause=None,
        success_breakdown=Breakdown((), failed, (), ()),
        success_signals=(),
        stalled=False,
        min_agent_turns=3,
        stop_reason="exit",
        signals=replace(_SIGNALS, **(signals or {})),
        db_hash=None,
        expected_db_hash=None,
        agent_turns=4,
        user_turns=4,
        num_actions=0,
        num_tool_calls=0,
        started_at="2026-01-01T00:00:00+00:00",
        duration_s=1.0,
        engine_time_s=0.0,
        agent_backend="replay",
        user_backend="replay",
        usage={"agent": Usage("replay", 0, 0, 1)},
        judge_model=None,
        judge_prompt_sha256=None,
        error=None,
        evalctl_version=__version__,
    )
    return replace(record, **changes)
