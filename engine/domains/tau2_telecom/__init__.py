"""tau2-bench's telecom domain (commit 17e07b1) and ``PLUGIN``, its domain plugin (``specs/tau2_telecom``
and its ``tau2_telecom_workflow`` variant): a carrier DB with 13 agent tools, the caller's phone as
a second DB with 30 user tools, the sync between them, task initialisation, env-assertion predicates
and tau2's DB hash. docs/domains/tau2_telecom.md describes the contract.

What the engine gets from here, and how each piece maps onto tau2 17e07b1:

- ``handlers``: the 13 carrier tools and the 30 phone tools under their tau2 names (the spec's two
  tool tables pick them per side);
- ``sync`` (tau2 ``TelecomEnvironment.sync_tools``), run by the engine after every successful call
  of either side, and ``initialise`` (tau2 ``Environment.set_state``: the task's
  ``initial_state``), run on the session's own copies before the first turn;
- ``predicates``: tau2's env-assertion functions, each reading only its side's DB (the engine
  gives a predicate the DB of the assertion's ``side``);
- ``derive``: a task's ``evaluation_criteria`` as scenario fields, for the spec's ``record_fields``
  (env assertions with their side, the ACTION reference, NL assertions) -- see
  :func:`env_assertions`, :func:`action_reference` and :func:`nl_assertions`;
- ``hash_styles``: ``tau2``, tau2's own hash of the carrier DB;
- ``diagnostics``: ``user_db_state_match``, the phone DB's tau2 hash against the gold replay's
  (recorded, never gating unless a spec lists it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from engine.core.plugin import DomainPlugin, Predicate
from engine.domains.tau2_common.arguments import tau2_arguments
from engine.domains.tau2_common.plugin import result_text
from engine.domains.tau2_telecom.agent_tools import AGENT_HANDLERS, AGENT_WRITES
from engine.domains.tau2_telecom.common import tau2_content
from engine.domains.tau2_telecom.diagnostics import user_db_state_match
from engine.domains.tau2_telecom.environment import INIT_FUNCTIONS, initialise, sync
from engine.domains.tau2_telecom.gold import replay_gold
from engine.domains.tau2_telecom.predicates import PREDICATE_SIDES, PREDICATES, check_assertion
from engine.domains.tau2_telecom.scenario import action_reference, env_assertions, nl_assertions
from engine.domains.tau2_telecom.shapes import normalise, tau2_hash
from engine.domains.tau2_telecom.user_tools import USER_HANDLERS, USER_WRITES

#: Tools whose success ends the call: the agent's hand-off to a human.
ENDING_TOOLS: dict[str, str] = {"transfer_to_human_agents": "transfer"}


def _on_side(func: Callable[..., Any], side: str) -> Predicate:
    """A two-DB predicate ``(agent_db, user_db, **arguments)`` as the engine's ``(db, **arguments)``
    on the DB of ``side`` (the other DB is empty: tau2's predicates read only their own side)."""

    def predicate(db: dict[str, Any], **arguments: Any) -> Any:
        return func(db, {}, **arguments) if side == "agent" else func({}, db, **arguments)

    predicate.__name__ = func.__name__
    predicate.__doc__ = func.__doc__
    return predicate


#: ``func_name`` -> predicate on its side's DB (``PREDICATE_SIDES``).
SIDED_PREDICATES: dict[str, Predicate] = {
    name: _on_side(func, PREDICATE_SIDES[name]) for name, func in PREDICATES.items()
}


def initialise_task(
    agent_db: dict[str, Any], user_db: dict[str, Any] | None, record: Mapping[str, Any]
) -> None:
    """The engine's set-up step: tau2's task initialisation from ``record["initial_state"]``
    (``environment.initialise``). Raises ValueError when the task has no user DB or cannot be set up."""
    if user_db is None:
        raise ValueError("tau2 telecom tasks need the phone DB (user_db)")
    initialise(agent_db, user_db, record.get("initial_state"))


def agent_hash(db: Mapping[str, Any]) -> str:
    """``hash_rules.style: tau2``: tau2's hash of the carrier DB (SHA-256 hex)."""
    return tau2_hash(db, "agent")


PLUGIN = DomainPlugin(
    name="tau2_telecom",
    description="tau2-bench 17e07b1 telecom: carrier and phone tools, sync, task set-up, env assertions",
    handlers={**AGENT_HANDLERS, **USER_HANDLERS},
    predicates=SIDED_PREDICATES,
    diagnostics={"user_db_state_match": user_db_state_match},
    sync=sync,
    initialise=initialise_task,
    hash_styles={"tau2": agent_hash},
    result_text=result_text,
    argument_check=tau2_arguments(None, prefix=""),
    derive={
        "tau2_env_assertions": env_assertions,
        "tau2_action_reference": action_reference,
        "tau2_nl_assertions": nl_assertions,
    },
)

__all__ = [
    "AGENT_HANDLERS",
    "AGENT_WRITES",
    "ENDING_TOOLS",
    "INIT_FUNCTIONS",
    "PLUGIN",
    "PREDICATES",
    "PREDICATE_SIDES",
    "USER_HANDLERS",
    "USER_WRITES",
    "check_assertion",
    "initialise",
    "normalise",
    "replay_gold",
    "sync",
    "tau2_content",
    "tau2_hash",
]
