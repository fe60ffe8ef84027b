"""Gold traces: the typed record, JSON pointers and the engine's adapters (events, actions). eva's
own adapter (2.1.0 traces, placeholders per language) is tested in tests/domains/eva_airline/."""

from __future__ import annotations

import pytest

from engine.core.gold import GoldStep, actions_trace, events_trace, resolve_pointer


def test_pointer() -> None:
    doc = {"a/b": {"c~d": [10, 20]}}
    assert resolve_pointer(doc, "/a~1b/c~0d/1") == 20
    assert resolve_pointer(doc, "") is doc
    with pytest.raises(KeyError):
        resolve_pointer(doc, "/a~1b/x")


def test_events_adapter_pairs_responses_and_counts_agent_turns() -> None:
    trace = events_trace(
        [
            {"event_type": "user_utterance", "utterance": "hi"},
            {"event_type": "tool_call", "tool_name": "t", "params": {"a": 1}},
            {"event_type": "tool_response", "response": {"status": "success"}},
            {"event_type": "agent_utterance", "utterance": "done"},
            {"event_type": "user_utterance", "utterance": "bye"},
            {"event_type": "agent_utterance", "utterance": "bye"},
        ]
    )
    assert [s.kind for s in trace] == ["user", "tool_call", "agent", "user", "agent"]
    assert trace.tool_calls()[0] == GoldStep(
        "tool_call", tool="t", arguments={"a": 1}, result={"status": "success"}
    )
    assert trace.agent_turns() == 2 and trace.lines("user") == ("hi", "bye")
    with pytest.raises(TypeError):
        events_trace({"event_type": "user_utterance"})


def test_actions_adapter_keeps_each_side() -> None:
    trace = actions_trace(
        [
            {"action_id": "0", "requestor": "assistant", "name": "get_user", "arguments": {"id": "u1"}},
            {"action_id": "1", "requestor": "user", "name": "toggle_airplane_mode", "arguments": {}},
            {"name": "transfer", "arguments": {}},
        ]
    )
    assert [(s.tool, s.side) for s in trace] == [
        ("get_user", "agent"),
        ("toggle_airplane_mode", "user"),
        ("transfer", "agent"),
    ]
    assert trace.tool_calls("user")[0].tool == "toggle_airplane_mode" and trace.agent_turns() == 0
    with pytest.raises(ValueError, match="unknown requestor"):
        actions_trace([{"name": "x", "requestor": "robot"}])
    with pytest.raises(TypeError):
        actions_trace([{"name": "x", "arguments": [1]}])
