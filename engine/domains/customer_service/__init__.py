"""The customer_service domain (NeMo labs-Voice-Agent's TechCorp support tickets): ten scenarios
on per-scenario accounts, each resolved with a ticket. See docs/domains/nemo_domains.md."""

from engine.domains.customer_service.handlers import HANDLERS, RESOLUTION_TYPES, WRITES
from engine.domains.customer_service.scenario import (
    OP_TOOLS,
    PREDICATES,
    current_date,
    db_state_assertions,
    gold_steps,
    initial_db,
    match_options,
    nl_assertions,
    operation,
    reference_answer,
    success_signals,
)
from engine.domains.customer_service.tools import TOOLS
from engine.domains.nemo_common.prompts import prompt_variables


def expected_db(record: object) -> None:
    """None: the final account holds the agent's free text, so it is checked field by field
    (``db_state_assertions``), not by a DB hash."""
    return None


def tool_options(record: object) -> dict[str, dict[str, object]]:
    """No tool of this domain has options."""
    return {}


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
