"""The customer_service domain (NeMo labs-Voice-Agent's TechCorp support tickets): ten scenarios
on per-scenario accounts, each resolved with a ticket. The tool table is
specs/customer_service/tools.yaml. See docs/domains/nemo_domains.md."""

from engine.domains.customer_service.handlers import HANDLERS, RESOLUTION_TYPES
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
from engine.domains.nemo_common.plugin import nemo_plugin
from engine.domains.nemo_common.prompts import prompt_variables

PLUGIN = nemo_plugin(
    "customer_service",
    handlers=HANDLERS,
    predicates=PREDICATES,
    derive={
        "initial_db": initial_db,
        "expected_db": expected_db,
        "current_date": current_date,
        "reference_answer": reference_answer,
        "match_options": match_options,
        "success_signals": success_signals,
        "db_state_assertions": db_state_assertions,
        "nl_assertions": nl_assertions,
    },
    gold_steps=gold_steps,
    description="TechCorp support tickets on per-scenario accounts (NeMo labs-Voice-Agent 1a83139).",
)

__all__ = [
    "HANDLERS",
    "OP_TOOLS",
    "PLUGIN",
    "PREDICATES",
    "RESOLUTION_TYPES",
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
