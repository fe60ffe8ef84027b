"""The qa domain (NeMo labs-Voice-Agent's qa scenarios plus the legacy simple_qa ones): one
question per call, answered, logged and judged. See docs/domains/nemo_domains.md."""

from engine.domains.nemo_common.prompts import prompt_variables
from engine.domains.qa.handlers import FIXED_WEATHER, HANDLERS, WRITES
from engine.domains.qa.scenario import (
    KEY_TERMS,
    PREDICATES,
    db_state_assertions,
    expected_db,
    gold_steps,
    initial_db,
    judge_reference,
    match_options,
    nl_assertions,
    reference_answer,
    success_signals,
    tool_options,
    weather_city,
)
from engine.domains.qa.tools import TOOLS

__all__ = [
    "FIXED_WEATHER",
    "HANDLERS",
    "KEY_TERMS",
    "PREDICATES",
    "TOOLS",
    "WRITES",
    "db_state_assertions",
    "expected_db",
    "gold_steps",
    "initial_db",
    "judge_reference",
    "match_options",
    "nl_assertions",
    "prompt_variables",
    "reference_answer",
    "success_signals",
    "tool_options",
    "weather_city",
]
