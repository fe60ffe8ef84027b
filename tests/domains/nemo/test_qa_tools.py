"""qa handlers and the key-term predicate: success and error paths."""

from __future__ import annotations

import pytest

from engine.core.tools.arguments import ArgumentChecker
from engine.domains import qa
from tests.domains.nemo.helpers import call_checked, loaded, release_records


def test_tables_cover_the_handlers() -> None:
    """The YAML tool table names every handler of the package once, and its writes and kinds agree."""
    table = loaded(qa.PLUGIN.name).domain.tools
    handled = [t.name for t in table.tools if t.kind != "harness"]
    assert sorted(handled) == sorted(qa.HANDLERS)
    for spec in table.tools:
        ArgumentChecker(spec.parameters, {})  # a valid JSON Schema
        if spec.kind == "harness":
            assert (spec.name, spec.handler) == ("EndConversationTool", "end_conversation")
            assert spec.ends_call == "exit"
            continue
        assert spec.handler == spec.name
        assert bool(spec.writes) == (spec.kind == "write"), spec.name
        assert (spec.action_type == spec.name) == (spec.kind == "write"), spec.name


def test_save_question_answer_appends_to_the_log() -> None:
    db = qa.initial_db(release_records()["qa__capital_france"])
    result = call_checked(qa, "SaveQuestionAnswerTool", db, {"question": " Capital? ", "answer": "Paris."})
    assert result["status"] == "success" and result["entries"] == 1
    call_checked(qa, "SaveQuestionAnswerTool", db, {"question": "Again?", "answer": "Still Paris."})
    assert db["qa_log"] == [
        {"question": "Capital?", "answer": "Paris."},
        {"question": "Again?", "answer": "Still Paris."},
    ]


@pytest.mark.parametrize(
    ("args", "error_type"),
    [
        ({"question": "", "answer": "Paris."}, "missing_question"),
        ({"question": "Capital?", "answer": " "}, "missing_answer"),
    ],
)
def test_save_question_answer_errors(args: dict[str, str], error_type: str) -> None:
    db = qa.initial_db(release_records()["qa__capital_france"])
    assert call_checked(qa, "SaveQuestionAnswerTool", db, args)["error_type"] == error_type


def test_save_question_answer_needs_a_log() -> None:
    assert (
        call_checked(qa, "SaveQuestionAnswerTool", {}, {"question": "q", "answer": "a"})["error_type"]
        == "no_qa_log"
    )


@pytest.mark.parametrize("city", ["San Francisco", "Reykjavik"])
def test_city_weather_is_fixed(city: str) -> None:
    result = call_checked(qa, "GetCityWeatherTool", {"qa_log": []}, {"city_name": city})
    assert result == {
        "status": "success",
        "city": city,
        "weather": "sunny",
        "temperature": "20 degrees Celsius",
        "uv_index": "low",
    }


def test_city_weather_needs_a_city() -> None:
    assert (
        call_checked(qa, "GetCityWeatherTool", {"qa_log": []}, {"city_name": " "})["error_type"]
        == "missing_city"
    )


def test_weather_answers_of_the_data_agree_with_the_fixed_tool() -> None:
    qa_records = [r for r in release_records().values() if r["module"] in ("qa", "simple_qa")]
    weather = [r for r in qa_records if qa.weather_city(r)]
    assert sorted(r["name"] for r in weather) == [
        "qa__weather_new_york",
        "qa__weather_san_francisco",
        "simple_qa_3",
    ]
    for record in weather:
        answer = record["reference_answer"]["answer"]
        assert all(value in answer for value in qa.FIXED_WEATHER.values()), record["name"]
        assert "GetCityWeatherTool" in record["agent_tools"]


@pytest.mark.parametrize(
    ("answers", "terms", "expected"),
    [
        (["You have 7 apples left."], ["7", "seven"], True),
        (["You have seven apples left."], ["7", "seven"], True),
        (["You have 17 apples left."], ["7", "seven"], False),
        (["It is about 300,000 km per second."], ["300,000"], True),
        (["william shakespeare wrote it"], ["Shakespeare"], True),
        (["Marlowe wrote it."], ["Shakespeare"], False),
        ([], ["Paris"], False),
    ],
)
def test_answer_mentions(answers: list[str], terms: list[str], expected: bool) -> None:
    db = {"qa_log": [{"question": "q", "answer": a} for a in answers]}
    assert qa.PREDICATES["answer_mentions"](db, terms=terms) is expected


def test_key_terms_come_from_the_reference_answers() -> None:
    qa_records = [r for r in release_records().values() if r["module"] in ("qa", "simple_qa")]
    assert sorted(qa.KEY_TERMS) == sorted(r["name"] for r in qa_records)
    for record in qa_records:
        first = qa.KEY_TERMS[record["name"]][0]
        assert first.lower() in record["reference_answer"]["answer"].lower(), record["name"]
