"""Gold traces: the typed record and its adapters (events, actions, eva 2.1.0 with placeholders
resolved per language)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from engine.domains.eva_airline.gold import eva_trace, placeholder_values, resolve_placeholders
from engine.domains.registry import load_domain
from engine.gold import GoldStep, actions_trace, events_trace, resolve_pointer
from tests.conftest import SPEC_DIR

RECORD = {
    "culture_overrides": {
        "en": {
            "first_name": "Ana",
            "last_name": "Diaz",
            "phone": "+1-555-0100",
            "companion": {"first_name": "Bo"},
        },
        "fr": {"first_name": "Anaïs", "last_name": "Dupré", "phone": "+33-1"},
    },
    "romanized_culture_overrides": {"fr": {"first_name": "Anais", "last_name": "Dupre"}},
    "ground_truth": {
        "expected_trace": {
            "trace": [
                {
                    "event_type": "tool_call",
                    "tool_name": "get_reservation",
                    "params": {"confirmation_number": "AB12CD", "last_name": "<LAST_NAME_ROMANIZED>"},
                },
                {
                    "event_type": "user_utterance",
                    "utterance": "<FIRST_NAME> <LAST_NAME>, <PHONE>, with <COMPANION_FIRST_NAME>",
                },
                {"event_type": "agent_utterance", "utterance": "Keep <UNKNOWN_TAG> as is"},
            ]
        }
    },
}


POINTER = "/ground_truth/expected_trace/trace"


def gold_trace(record: dict, language: str):
    return eva_trace(resolve_pointer(record, POINTER), record, language)


def test_resolution_per_language() -> None:
    trace = gold_trace(RECORD, "en").steps
    assert trace[0].arguments["last_name"] == "diaz"
    assert trace[1].text == "Ana Diaz, +1-555-0100, with Bo"
    assert trace[2].text == "Keep <UNKNOWN_TAG> as is"
    fr = gold_trace(RECORD, "fr").steps
    assert fr[0].arguments["last_name"] == "dupre"
    assert fr[1].text.startswith("Anaïs Dupré, +33-1")
    with pytest.raises(ValueError, match="language 'de' has no person values"):
        gold_trace(RECORD, "de")
    assert placeholder_values(RECORD, "de") == {}
    assert resolve_placeholders(["<FIRST_NAME>", 3, None], RECORD) == ["Ana", 3, None]


def test_record_is_not_mutated() -> None:
    before = json.dumps(RECORD, sort_keys=True)
    gold_trace(RECORD, "en")
    assert json.dumps(RECORD, sort_keys=True) == before


def test_pointer() -> None:
    doc = {"a/b": {"c~d": [10, 20]}}
    assert resolve_pointer(doc, "/a~1b/c~0d/1") == 20
    assert resolve_pointer(doc, "") is doc
    with pytest.raises(KeyError):
        resolve_pointer(doc, "/a~1b/x")


def test_real_traces_have_no_placeholders_left(data_root: Path) -> None:
    loaded = load_domain(SPEC_DIR, data_root)
    tool_calls = 0
    for s in loaded.scenarios:
        assert s.gold_trace, s.name
        assert s.gold_trace.format == "eva_trace"
        text = json.dumps([[st.text, dict(st.arguments)] for st in s.gold_trace])
        assert not re.search(r"<(FIRST|LAST)_NAME(_ROMANIZED)?>|<PHONE>", text), s.name
        tool_calls += len(s.gold_trace.tool_calls())
        assert all(st.result is not None for st in s.gold_trace.tool_calls())  # eva records responses
    assert tool_calls == 242
    first_call = loaded.scenario("eva_airline__voluntary_date_change").gold_trace.tool_calls()[0]
    assert first_call.arguments == {"confirmation_number": "ZK3FFW", "last_name": "rodriguez"}


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
