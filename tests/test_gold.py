"""Gold traces from eva 2.1.0 with placeholders resolved per language."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from engine.gold import gold_trace, placeholder_values, resolve_placeholders, resolve_pointer
from engine.specs import load_domain
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


def test_resolution_per_language() -> None:
    trace = gold_trace(RECORD, "en")
    assert trace[0]["params"]["last_name"] == "diaz"
    assert trace[1]["utterance"] == "Ana Diaz, +1-555-0100, with Bo"
    assert trace[2]["utterance"] == "Keep <UNKNOWN_TAG> as is"
    fr = gold_trace(RECORD, "fr")
    assert fr[0]["params"]["last_name"] == "dupre"
    assert fr[1]["utterance"].startswith("Anaïs Dupré, +33-1")
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
        text = json.dumps(s.gold_trace)
        assert not re.search(r"<(FIRST|LAST)_NAME(_ROMANIZED)?>|<PHONE>", text), s.name
        tool_calls += sum(e["event_type"] == "tool_call" for e in s.gold_trace)
    assert tool_calls == 242
    first_call = next(
        e
        for e in loaded.scenario("eva_airline__voluntary_date_change").gold_trace
        if e["event_type"] == "tool_call"
    )
    assert first_call["params"] == {"confirmation_number": "ZK3FFW", "last_name": "rodriguez"}
