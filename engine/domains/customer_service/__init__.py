"""The customer_service domain (NeMo labs-Voice-Agent's TechCorp support tickets): ten scenarios
on per-scenario accounts, each resolved with a ticket. See docs/domains/nemo_domains.md."""

from engine.domains.customer_service.handlers import HANDLERS, RESOLUTION_TYPES, WRITES
from engine.domains.customer_service.scenario import (
    OP_TOOLS,
    PREDICATES,
    current_date,
    db_state_assertions,
    expected_db,
    gold_steps,
    initial_db,
    match_options,
    nl_assertions,
    operation,
    reference_answer,
    success_signals,
    tool_options,
)
from engine.domains.customer_service.tools import TOOLS
from engine.domains.nemo_common.prompts import prompt_variables

__all__ = [
    "HANDLERS",
    "OP_TOOLS",
    "PREDICATES",
    "RESOLUTION_TYPES",
    "TOOLS",
    "WRITES",
    "current_date",
    "db_state_assertions",
    "expected_db",
    "gold_steps",
    "initial_db",
    "match_options",
    "nl_assertions",
    "operation",
    "prompt_variables",
    "reference_answer",
    "success_signals",
    "tool_options",
]
