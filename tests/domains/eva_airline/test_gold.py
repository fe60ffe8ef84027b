"""eva_airline's gold adapter (eva 2.1.0 traces): placeholders resolved per language, the real
traces without placeholders left, and the languages the dataset has person values for."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from engine.core.gold import resolve_pointer
from engine.domains.eva_airline.gold import eva_trace, placeholder_values, resolve_placeholders
from engine.domains.registry import plugins
from engine.spec.loader import load_domain
from engine.util.errors import SpecError
from tests.conftest import SPEC_DIR


def _spec_copy(tmp_path: Path) -> Path:
    target = tmp_path / "spec"
    shutil.copytree(SPEC_DIR, target)
    return target


def test_language_without_person_values_is_a_spec_problem(tmp_path: Path, data_root: Path) -> None:
    # the gold trace would keep <LAST_NAME> placeholders and replay/user sides would say them
    spec = _spec_copy(tmp_path)
    domain = spec / "domain.yaml"
    domain.write_text(domain.read_text(encoding="utf-8").replace("language: en", "language: xx"))
    with pytest.raises(SpecError) as info:
        load_domain(spec, data_root, plugins=plugins())
    (problem,) = info.value.problems
    assert problem.json_path == "$.language" and problem.file.endswith("domain.yaml")
    assert problem.message == "language 'xx' has no person values in the gold dataset (en, fr, fr-CA)"


def test_french_is_a_language_of_the_dataset(tmp_path: Path, data_root: Path) -> None:
    spec = _spec_copy(tmp_path)
    domain = spec / "domain.yaml"
    domain.write_text(domain.read_text(encoding="utf-8").replace("language: en", "language: fr"))
    assert len(load_domain(spec, data_root, plugins=plugins()).scenarios) == 50


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


def test_real_traces_have_no_placeholders_left(data_root: Path) -> None:
    loaded = load_domain(SPEC_DIR, data_root, plugins=plugins())
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


def test_gold_db_comes_from_the_gold_replay(data_root: Path) -> None:
    """Moved from tests/unit/results/test_results.py (the mock version stays there)."""
    from dataclasses import replace

    from engine.domains.registry import plugins
    from engine.results import scoring_stage as results
    from engine.spec.loader import load_domain
    from tests.conftest import SPEC_DIR

    # eva 7.4.1's expected DB holds an empty session although its gold trace authenticates
    scenario = load_domain(SPEC_DIR, data_root, plugins=plugins()).scenario("eva_airline__7_4_1")
    assert scenario.expected_db["session"] == {}
    assert results.gold_db(scenario)["session"] == {"confirmation_number": "383S8U", "last_name": "park"}
    assert results.gold_db(scenario) is results.gold_db(scenario)  # replayed once per scenario
    assert results.gold_db(replace(scenario, gold_trace=None)) is None
