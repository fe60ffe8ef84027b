"""The DomainPlugin of a NeMo small domain: its handlers and predicates, the ``derive`` functions
its ``domain.yaml`` names (the per-scenario values computed from a ``nemo-1a83139`` record) and
the ``nemo_gold`` gold adapter (evalctl's own gold conversation, derived from the record).

Every domain gets the same shared derive names (``scenario_name``, ``tools``, ``agent_prompt``,
``user_prompt``) plus its own (``initial_db``, ``reference_answer``, ... from its ``scenario``
module); see docs/domains/nemo_domains.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from engine.core.gold import GoldTrace, events_trace
from engine.core.plugin import DeriveFunc, Diagnostic, DomainPlugin, Handler, Predicate
from engine.domains.nemo_common.gold import to_gold_events
from engine.domains.nemo_common.prompts import prompt_variables
from engine.domains.nemo_common.records import evalctl_name, offered_tools

#: The gold format name of these domains (``gold_trace.format`` in their domain.yaml).
GOLD_FORMAT = "nemo_gold"

GoldSteps = Callable[[Mapping[str, Any]], Sequence[Mapping[str, Any]]]


def gold_adapter(gold_steps: GoldSteps) -> Callable[[Any, Mapping[str, Any], str], GoldTrace]:
    """The ``nemo_gold`` adapter of a domain: ``(raw, record, language) -> GoldTrace`` built from
    ``gold_steps(record)`` (``raw`` is the record too: the spec points at the whole record).
    Raises KeyError / ValueError when the record lacks what the conversation needs."""

    def adapter(raw: Any, record: Mapping[str, Any], language: str) -> GoldTrace:
        return replace(events_trace(to_gold_events(gold_steps(record))), format=GOLD_FORMAT)

    return adapter


#: Derive functions every NeMo domain has.
SHARED_DERIVE: dict[str, DeriveFunc] = {
    "scenario_name": evalctl_name,
    "tools": offered_tools,
    "agent_prompt": lambda record: prompt_variables(record, "agent"),
    "user_prompt": lambda record: prompt_variables(record, "user"),
}


def nemo_plugin(
    name: str,
    *,
    handlers: Mapping[str, Handler],
    predicates: Mapping[str, Predicate],
    derive: Mapping[str, DeriveFunc],
    gold_steps: GoldSteps,
    diagnostics: Mapping[str, Diagnostic] | None = None,
    description: str = "",
) -> DomainPlugin:
    """A NeMo domain's plugin: ``derive`` (the domain's own functions) over :data:`SHARED_DERIVE`,
    the ``nemo_gold`` adapter over ``gold_steps``."""
    return DomainPlugin(
        name=name,
        handlers=dict(handlers),
        predicates=dict(predicates),
        diagnostics=dict(diagnostics or {}),
        gold_adapters={GOLD_FORMAT: gold_adapter(gold_steps)},
        derive={**SHARED_DERIVE, **derive},
        description=description,
    )
