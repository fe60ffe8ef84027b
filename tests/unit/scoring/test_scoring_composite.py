"""The composite verdict: whitelist, strict AND, N/A, float threshold, stalled rule, breakdown."""

from __future__ import annotations

import pytest

from engine.core.gold import GoldTrace, actions_trace, events_trace
from engine.scoring.composite import compute_composite, normalize_verdict, stalled_threshold

ALL_NA = {
    "is_action_match": "N/A",
    "db_state_match": None,
    "db_state_assertion": None,
    "nl_assertion": None,
    "judge_passed": None,
    "clean_exit": True,
}


def test_all_whitelisted_pass():
    c = compute_composite({**ALL_NA, "db_state_match": True}, ("db_state_match", "clean_exit"))
    assert c.is_successful is True and c.is_task_successful is True
    assert c.breakdown["passed"] == ["db_state_match", "clean_exit"]
    assert c.breakdown["excluded"] == [
        "is_action_match",
        "db_state_assertion",
        "nl_assertion",
        "judge_passed",
    ]


def test_one_whitelisted_failure_fails():
    c = compute_composite({**ALL_NA, "db_state_match": False}, ("db_state_match", "clean_exit"))
    assert c.is_successful is False and c.breakdown["failed"] == ["db_state_match"]


def test_clean_exit_failure_spares_task_success():
    c = compute_composite(
        {**ALL_NA, "db_state_match": True, "clean_exit": False}, ("db_state_match", "clean_exit")
    )
    assert c.is_successful is False and c.is_task_successful is True


def test_non_whitelisted_failure_does_not_gate():
    c = compute_composite(
        {**ALL_NA, "db_state_match": True, "is_action_match": False}, ("db_state_match", "clean_exit")
    )
    assert c.is_successful is True and "is_action_match" in c.breakdown["excluded"]


def test_not_applicable_whitelisted_signal_drops_out():
    c = compute_composite({**ALL_NA, "judge_passed": None}, ("judge_passed", "clean_exit"))
    assert c.is_successful is True and c.breakdown["not_applicable"] == ["judge_passed"]


def test_nothing_applicable_is_na():
    c = compute_composite({**ALL_NA, "clean_exit": None}, ("judge_passed", "clean_exit"))
    assert c.is_successful == "N/A" and c.is_task_successful == "N/A"


def test_empty_whitelist_is_na_with_everything_excluded():
    # specs reject an empty whitelist at validation; the composite itself must not invent a verdict
    c = compute_composite({**ALL_NA, "db_state_match": False}, ())
    assert c.is_successful == "N/A"
    assert c.breakdown["excluded"] == list(ALL_NA)


def test_only_clean_exit_whitelisted_task_is_na():
    c = compute_composite(ALL_NA, ("clean_exit",))
    assert c.is_successful is True and c.is_task_successful == "N/A"


@pytest.mark.parametrize(
    ("rate", "passed"),
    [(1.0, True), (0.95, False), (0.0, False)],
    ids=["rate-1.0-passes", "rate-0.95-fails", "rate-0-fails"],
)
def test_float_rates_pass_only_at_one(rate, passed):
    c = compute_composite({**ALL_NA, "db_state_assertion": rate}, ("db_state_assertion", "clean_exit"))
    assert c.is_successful is passed


def test_stalled_forces_failure():
    c = compute_composite({**ALL_NA, "db_state_match": True}, ("db_state_match", "clean_exit"), stalled=True)
    assert c.is_successful is False and c.is_task_successful is False and c.stalled
    assert c.breakdown["passed"] == ["db_state_match", "clean_exit"]  # the measurements stay visible


def test_normalize_verdict_rejects_garbage():
    with pytest.raises(TypeError):
        normalize_verdict("yes")


def _trace(*kinds: str) -> GoldTrace:
    return events_trace([{"event_type": k, "tool_name": "t"} for k in kinds])


@pytest.mark.parametrize(
    ("trace", "flag", "expected"),
    [
        pytest.param(None, 3, 3, id="no-gold-keeps-flag"),
        pytest.param(
            _trace("user_utterance", "agent_utterance", "user_utterance", "tool_call", "agent_utterance"),
            3,
            2,
            id="two-turn-gold-lowers-to-2",
        ),
        pytest.param(
            _trace(
                "user_utterance",
                "agent_utterance",
                "agent_utterance",
                "user_utterance",
                "agent_utterance",
                "user_utterance",
                "agent_utterance",
            ),
            3,
            3,
            id="consecutive-agent-lines-are-one-turn",
        ),
        pytest.param(_trace("user_utterance", "agent_utterance"), 0, 0, id="flag-zero-stays-zero"),
        pytest.param(_trace("user_utterance", "tool_call"), 3, 3, id="gold-without-agent-lines-keeps-flag"),
        pytest.param(actions_trace([{"name": "t"}]), 3, 0, id="gold-without-words-has-no-stall-rule"),
        pytest.param(actions_trace([]), 3, 0, id="empty-actions-gold-has-no-stall-rule"),
    ],
)
def test_stalled_threshold_follows_a_shorter_gold(trace, flag, expected):
    assert stalled_threshold(flag, trace) == expected


def test_an_error_does_not_override_a_measured_failure_or_a_stall():
    wl = ("db_state_match", "judge_passed", "clean_exit")
    failed = compute_composite({**ALL_NA, "db_state_match": False}, wl, error=True)
    assert (failed.is_successful, failed.is_task_successful) == (False, False)
    stalled = compute_composite({**ALL_NA, "db_state_match": True}, wl, stalled=True, error=True)
    assert (stalled.is_successful, stalled.is_task_successful, stalled.stalled) == (False, False, True)
    depends = compute_composite({**ALL_NA, "db_state_match": True}, wl, error=True)
    assert (depends.is_successful, depends.is_task_successful) == ("error", "error")
    cut = compute_composite({**ALL_NA, "db_state_match": False}, wl, True, error=True, measured_stand=False)
    assert (cut.is_successful, cut.is_task_successful, cut.stalled) == ("error", "error", False)
