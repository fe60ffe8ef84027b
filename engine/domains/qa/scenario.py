"""Per-scenario data of the qa domain (10 ``qa__*`` + the legacy ``simple_qa_1..3``), derived from
a ``nemo-1a83139`` record.

A qa scenario is judged: the judge compares the agent's answer with the reference
``{question, answer}`` (:func:`judge_reference`), seeing the tool calls and their results. A
deterministic, non-gating check says something without a judge: the logged answer mentions the
expected answer's key term (:data:`KEY_TERMS`, ours; the first term of each is a word of the
reference answer, the rest are spoken or written variants).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from engine.core.plugin import DiagnosticInputs
from engine.domains.nemo_common import gold as st
from engine.domains.nemo_common.prompts import script_lines
from engine.domains.nemo_common.records import offered_tools

#: Key term alternatives per upstream scenario name; the first occurs in the reference answer.
KEY_TERMS: dict[str, tuple[str, ...]] = {
    "qa__capital_france": ("Paris",),
    "qa__math_addition": ("42", "forty-two", "forty two"),
    "qa__speed_of_light": ("300,000", "300000", "299,792", "299792", "186,000"),
    "qa__moon_landing": ("1969",),
    "qa__romeo_and_juliet": ("Shakespeare",),
    "qa__weather_san_francisco": ("sunny",),
    "qa__weather_new_york": ("sunny",),
    "qa__math_word_problem": ("7", "seven"),
    "qa__largest_ocean": ("Pacific",),
    "qa__telephone_inventor": ("Bell",),
    "simple_qa_1": ("42", "forty-two", "forty two"),
    "simple_qa_2": ("2", "two"),
    "simple_qa_3": ("sunny",),
}
_WEATHER_QUESTION = re.compile(r"\bweather in (.+?)\s*\?", re.IGNORECASE)


def initial_db(record: Mapping[str, Any]) -> dict[str, Any]:
    """The starting DB: an empty question-and-answer log, ``{"qa_log": []}``."""
    return {"qa_log": []}


def judge_reference(record: Mapping[str, Any]) -> dict[str, str]:
    """What the judge compares the answer with: upstream's ``{question, answer}``."""
    ref = record["reference_answer"]
    return {"question": ref["question"], "answer": ref["answer"]}


def reference_answer(record: Mapping[str, Any]) -> None:
    """None: qa is not action-matched (a verbatim answer match would fail good answers); the
    judge gets :func:`judge_reference`."""
    return None


def match_options(record: Mapping[str, Any]) -> dict[str, bool]:
    """Upstream's match flags (unused while qa has no reference actions)."""
    return {k: bool(v) for k, v in record["match"].items()}


def success_signals(record: Mapping[str, Any]) -> list[str]:
    """Gating signals: the judge's verdict and a clean exit."""
    return ["judge_passed", "clean_exit"]


def expected_db(record: Mapping[str, Any]) -> None:
    """None: the log holds the agent's own wording."""
    return None


def tool_options(record: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """No tool of this domain has options."""
    return {}


def _mentions(answer: str, term: str) -> bool:
    edge_l = r"(?<!\w)" if term[:1].isalnum() else ""
    edge_r = r"(?!\w)" if term[-1:].isalnum() else ""
    return re.search(edge_l + re.escape(term) + edge_r, answer, re.IGNORECASE) is not None


def answer_mentions(db: Mapping[str, Any], terms: list[str]) -> bool:
    """Predicate: True when an answer in ``qa_log`` contains one of ``terms`` as a whole word
    (case-insensitive; ``7`` does not match ``17``); False for an empty log."""
    answers = [str(entry.get("answer", "")) for entry in db.get("qa_log") or []]
    return any(_mentions(answer, term) for answer in answers for term in terms)


PREDICATES = {"answer_mentions": answer_mentions}


def db_state_assertions(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The key-term check, meant to stay outside ``success_signals`` (non-gating): the logged
    answer mentions one of the scenario's :data:`KEY_TERMS`. KeyError for a name not in the table."""
    terms = list(KEY_TERMS[record["name"]])
    return [{"func_name": "answer_mentions", "arguments": {"terms": terms}, "assert_value": True}]


def nl_assertions(record: Mapping[str, Any]) -> list[str]:
    """None: the judge already weighs the answer against the reference."""
    return []


def weather_city(record: Mapping[str, Any]) -> str | None:
    """The city of a weather question (``What is the weather in San Francisco?`` -> ``San
    Francisco``), None for other questions."""
    found = _WEATHER_QUESTION.search(record["reference_answer"]["question"])
    return found.group(1).strip() if found else None


def _lines(record: Mapping[str, Any]) -> tuple[str, str, str]:
    """(agent greeting, caller question line, caller goodbye) from the record's own text."""
    agent_script, user_script = script_lines(record, "agent"), script_lines(record, "user")
    if user_script:
        said = st.double_quoted(user_script)
        greeting = st.first_quoted(agent_script)
        if len(said) < 2 or not greeting:
            raise ValueError(f"{record['name']}: the scripted prompts lack a greeting or two caller lines")
        return greeting, said[0], said[-1]
    greeting = st.first_quoted(record["agent_actions"]["instructions"])
    question = st.first_quoted(record["user_actions"]["instructions"])
    if not greeting or not question:
        raise ValueError(f"{record['name']}: no quoted greeting or question in the instructions")
    goodbye = st.said_line(record["user_actions"]["guidelines"]) or "Thank you, goodbye."
    return greeting, question, goodbye


def gold_steps(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """evalctl's gold conversation (:data:`~engine.domains.nemo_common.gold.GOLD_SOURCE`): the
    quoted greeting, the caller's quoted question, the weather call for a weather question (when
    the tool is offered), SaveQuestionAnswerTool with the reference question and answer, the answer
    spoken, the caller's quoted goodbye and EndConversationTool. ValueError when a line is missing."""
    greeting, question, goodbye = _lines(record)
    ref = judge_reference(record)
    out = [st.agent(greeting), st.user(question)]
    city = weather_city(record)
    if city and "GetCityWeatherTool" in offered_tools(record):
        out.append(st.call("GetCityWeatherTool", {"city_name": city}))
    out.append(st.call("SaveQuestionAnswerTool", ref))
    out.append(st.agent(ref["answer"]))
    out.append(st.user(goodbye))
    out.append(st.agent("You are welcome, goodbye!"))
    out.append(st.hang_up())
    return out


def key_term_mentioned(inputs: DiagnosticInputs) -> bool | None:
    """Diagnostic ``key_term_mentioned`` (non-gating): True when the agent's spoken lines or the
    answers it logged name one of the scenario's :data:`KEY_TERMS` (whole words, any case), so a
    run without a judge still says whether the answer was there; None when the scenario has no key
    term (a record this table does not know)."""
    terms = KEY_TERMS.get(str(inputs.scenario.record.get("name")))
    if not terms:
        return None
    result = inputs.result
    spoken = [
        str(event.get("content"))
        for event in result.transcript
        if event.get("role") == "agent" and event.get("type") == "utterance"
    ]
    logged = [str(entry.get("answer", "")) for entry in (result.final_db or {}).get("qa_log") or []]
    return any(_mentions(text, term) for text in spoken + logged for term in terms)
