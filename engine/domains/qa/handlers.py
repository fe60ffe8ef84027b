"""Handlers of the qa domain (upstream SaveQuestionAnswerTool and GetCityWeatherTool of NeMo
labs-Voice-Agent 1a83139; written anew from their behaviour).

DB shape (built by :func:`engine.domains.qa.scenario.initial_db`)::

    {"qa_log": [{"question": str, "answer": str}, ...]}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.core.plugin import Handler
from engine.core.tools.context import CallContext
from engine.domains.nemo_common.results import error, ok, text

#: The one weather upstream's tool knows, whatever the city.
FIXED_WEATHER: dict[str, str] = {"weather": "sunny", "temperature": "20 degrees Celsius", "uv_index": "low"}


def save_question_answer(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    """SaveQuestionAnswerTool(question, answer): append ``{question, answer}`` (stripped) to
    ``qa_log``. Errors: ``no_qa_log``, ``missing_question``, ``missing_answer``.
    Returns ``{status, message, entries}`` (the log's length after the call)."""
    log = db.get("qa_log")
    if not isinstance(log, list):
        return error("no_qa_log", "This DB keeps no question-and-answer log.")
    question, answer = text(args.get("question")), text(args.get("answer"))
    if not question:
        return error("missing_question", "question is required.")
    if not answer:
        return error("missing_answer", "answer is required.")
    log.append({"question": question, "answer": answer})
    return ok(message="Question and answer saved.", entries=len(log))


def get_city_weather(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    """GetCityWeatherTool(city_name): ``{status, city, weather: "sunny", temperature:
    "20 degrees Celsius", uv_index: "low"}`` for any city, as upstream. Error: ``missing_city``
    for a blank name. No write."""
    city = text(args.get("city_name"))
    if not city:
        return error("missing_city", "city_name is required.")
    return ok(city=city, **FIXED_WEATHER)


HANDLERS: dict[str, Handler] = {
    "SaveQuestionAnswerTool": save_question_answer,
    "GetCityWeatherTool": get_city_weather,
}
