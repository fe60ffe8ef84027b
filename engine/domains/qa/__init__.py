"""The qa domain (NeMo labs-Voice-Agent's qa scenarios plus the legacy simple_qa ones): one
question per call, answered, logged and judged. The tool table is specs/qa/tools.yaml. See
docs/domains/nemo_domains.md."""

from engine.domains.nemo_common.plugin import nemo_plugin
from engine.domains.nemo_common.prompts import prompt_variables
from engine.domains.qa.handlers import FIXED_WEATHER, HANDLERS
from engine.domains.qa.scenario import (
    KEY_TERMS,
    PREDICATES,
    db_state_assertions,
    expected_db,
    gold_steps,
    initial_db,
    judge_reference,
    key_term_mentioned,
    match_options,
    nl_assertions,
    reference_answer,
    success_signals,
    tool_options,
    weather_city,
)

PLUGIN = nemo_plugin(
    "qa",
    handlers=HANDLERS,
    predicates=PREDICATES,
    derive={
        "initial_db": initial_db,
        "expected_db": expected_db,
        "reference_answer": reference_answer,
        "judge_reference": judge_reference,
        "match_options": match_options,
        "success_signals": success_signals,
        "db_state_assertions": db_state_assertions,
        "nl_assertions": nl_assertions,
    },
    gold_steps=gold_steps,
    diagnostics={"key_term_mentioned": key_term_mentioned},
    description="Single questions answered, logged and judged (NeMo labs-Voice-Agent 1a83139).",
)

__all__ = [
    "FIXED_WEATHER",
    "HANDLERS",
    "KEY_TERMS",
    "PLUGIN",
    "PREDICATES",
    "db_state_assertions",
    "expected_db",
    "gold_steps",
    "initial_db",
    "judge_reference",
    "key_term_mentioned",
    "match_options",
    "nl_assertions",
    "prompt_variables",
    "reference_answer",
    "success_signals",
    "tool_options",
    "weather_city",
]
