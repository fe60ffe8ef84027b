"""The restaurant domain (NeMo labs-Voice-Agent's restaurant scenarios plus the legacy fastbite):
food orders over three menus and one waitlist scenario. The tool table is specs/restaurant/tools.yaml.
See docs/domains/nemo_domains.md."""

from engine.domains.nemo_common.plugin import nemo_plugin
from engine.domains.nemo_common.prompts import prompt_variables
from engine.domains.restaurant.handlers import HANDLERS
from engine.domains.restaurant.scenario import (
    PREDICATES,
    db_state_assertions,
    expected_db,
    gold_steps,
    initial_db,
    is_waitlist,
    match_options,
    nl_assertions,
    reference_answer,
    success_signals,
    tool_options,
)

PLUGIN = nemo_plugin(
    "restaurant",
    handlers=HANDLERS,
    predicates=PREDICATES,
    derive={
        "initial_db": initial_db,
        "expected_db": expected_db,
        "reference_answer": reference_answer,
        "match_options": match_options,
        "success_signals": success_signals,
        "db_state_assertions": db_state_assertions,
        "nl_assertions": nl_assertions,
    },
    gold_steps=gold_steps,
    description="Food orders and a waitlist at three restaurants (NeMo labs-Voice-Agent 1a83139).",
)

__all__ = [
    "HANDLERS",
    "PLUGIN",
    "PREDICATES",
    "db_state_assertions",
    "expected_db",
    "gold_steps",
    "initial_db",
    "is_waitlist",
    "match_options",
    "nl_assertions",
    "prompt_variables",
    "reference_answer",
    "success_signals",
    "tool_options",
]
