"""Shared by the three NeMo small domains (restaurant, customer_service, qa): reading the
``nemo-1a83139`` release, the prompt variables (one structure for all three) and the gold-step
shape. Domain behaviour (handlers, DB shapes, references) lives in each domain's own package."""

from engine.domains.nemo_common.gold import GOLD_SOURCE, to_gold_events
from engine.domains.nemo_common.prompts import SCRIPTED_PROMPTS, prompt_variables, script_lines
from engine.domains.nemo_common.records import (
    AGENT_KICKOFF,
    DATASET,
    DOMAIN_OF_MODULE,
    END_TOOL,
    RELEASE,
    domain_of,
    evalctl_name,
    load_records,
    offered_tools,
    tool_arguments,
)

__all__ = [
    "AGENT_KICKOFF",
    "DATASET",
    "DOMAIN_OF_MODULE",
    "END_TOOL",
    "GOLD_SOURCE",
    "RELEASE",
    "SCRIPTED_PROMPTS",
    "domain_of",
    "evalctl_name",
    "load_records",
    "offered_tools",
    "prompt_variables",
    "script_lines",
    "to_gold_events",
    "tool_arguments",
]
