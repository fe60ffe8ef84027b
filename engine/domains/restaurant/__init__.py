"""The restaurant domain (NeMo labs-Voice-Agent's restaurant scenarios plus the legacy fastbite):
food orders over three menus and one waitlist scenario. See docs/domains/nemo_domains.md."""

from engine.domains.nemo_common.prompts import prompt_variables
from engine.domains.restaurant.handlers import HANDLERS, WRITES
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
from engine.domains.restaurant.tools import TOOLS

__all__ = [
    "HANDLERS",
    "PREDICATES",
    "TOOLS",
    "WRITES",
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
