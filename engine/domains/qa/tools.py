"""The qa tool table as data: name -> ``{kind, handler, description, parameters}``.

Names are upstream's class names (the prompts name them). SaveQuestionAnswerTool is a ``write``
(it logs to the DB and records an action the judge sees); the weather tool is a read whose result
the judge must see too (the weather questions are answered from it). Descriptions are evalctl's own.
"""

from __future__ import annotations

from typing import Any


def _params(required: list[str], **properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


TOOLS: dict[str, dict[str, Any]] = {
    "SaveQuestionAnswerTool": {
        "kind": "write",
        "handler": "SaveQuestionAnswerTool",
        "description": "Log the caller's question together with the answer you gave.",
        "parameters": _params(
            ["question", "answer"],
            question={"type": "string", "description": "The caller's question."},
            answer={"type": "string", "description": "Your answer to it."},
        ),
    },
    "GetCityWeatherTool": {
        "kind": "read",
        "handler": "GetCityWeatherTool",
        "description": "Get the current weather of a city by its name.",
        "parameters": _params(
            ["city_name"], city_name={"type": "string", "description": "The city, e.g. Paris."}
        ),
    },
    "EndConversationTool": {
        "kind": "harness",
        "handler": "end_conversation",
        "description": "Hang up once the caller has no more questions and you have said goodbye.",
        "parameters": _params([]),
    },
}
