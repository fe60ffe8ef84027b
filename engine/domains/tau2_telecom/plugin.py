"""The tau2 telecom package as an evalctl domain plugin (``specs/tau2_telecom`` and its
``tau2_telecom_workflow`` variant).

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

import threading
from collections.abc import Callable, Mapping
from typing import Any

from engine.core.plugin import DiagnosticInputs, DomainPlugin, Predicate
from engine.domains.tau2_telecom.agent_tools import AGENT_HANDLERS
from engine.domains.tau2_telecom.assertions import PREDICATE_SIDES, PREDICATES
from engine.domains.tau2_telecom.environment import SIDES, initialise, sync
from engine.domains.tau2_telecom.model import tau2_hash
from engine.domains.tau2_telecom.user_tools import USER_HANDLERS
from engine.spec.gold_replay import gold_replay

#: tau2's reward-basis names that make evalctl fields applicable.
ACTION, NL_ASSERTION = "ACTION", "NL_ASSERTION"


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


def _criteria(record: Mapping[str, Any]) -> Mapping[str, Any]:
    criteria = record.get("evaluation_criteria") or {}
    if not isinstance(criteria, Mapping):
        raise TypeError("evaluation_criteria is not a mapping")
    return criteria


def env_assertions(record: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """derive ``tau2_env_assertions``: tau2 ``evaluation_criteria.env_assertions`` ->
    ``db_state_assertions``.

    Each ``{env_type, func_name, arguments, assert_value}`` becomes ``{func_name, arguments,
    assert_value, side}`` with ``side`` from ``env_type`` (assistant -> agent, user -> user) and
    ``assert_value`` True when absent (tau2's default). None when the task has none. Raises
    ValueError for an unknown ``env_type`` or one that is not the predicate's own side.
    """
    value = _criteria(record).get("env_assertions")
    if value is None:
        return None
    if not isinstance(value, list):
        raise TypeError("env_assertions is not a list")
    out = []
    for item in value:
        side = SIDES.get(str(item.get("env_type")))
        func = str(item.get("func_name"))
        if side is None:
            raise ValueError(f"env assertion {func}: unknown env_type {item.get('env_type')!r}")
        if PREDICATE_SIDES.get(func, side) != side:
            raise ValueError(f"env assertion {func} reads the {PREDICATE_SIDES[func]} DB, not the {side} DB")
        out.append(
            {
                "func_name": func,
                "arguments": dict(item.get("arguments") or {}),
                "assert_value": item.get("assert_value", True),
                "side": side,
            }
        )
    return out


def action_reference(record: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """derive ``tau2_action_reference``: tau2 gold ``evaluation_criteria.actions`` ->
    ``reference_answer``, for tasks whose ``reward_basis`` includes ACTION (None otherwise: tau2
    checks no action there, so the key stays unset and ``is_action_match`` is not applicable).

    Each gold action becomes ``{action_type: <tool name>, **compared arguments}`` (``compare_args``
    lists the compared keys; None compares them all). The tool tables give every writing tool its
    own name as ``action_type``. Raises ValueError for a user-side gold action: evalctl records
    the agent's actions only (telecom's 20 ACTION tasks hold one agent transfer each).
    """
    criteria = _criteria(record)
    if ACTION not in (criteria.get("reward_basis") or ()):
        return None
    reference = []
    for action in criteria.get("actions") or ():
        if SIDES.get(str(action.get("requestor", "assistant"))) != "agent":
            raise ValueError(
                f"gold action {action.get('name')} is the user's: only agent actions are recorded"
            )
        arguments = dict(action.get("arguments") or {})
        keys = action.get("compare_args")
        compared = arguments if keys is None else {k: arguments[k] for k in keys if k in arguments}
        reference.append({"action_type": str(action["name"]), **compared})
    return reference


def nl_assertions(record: Mapping[str, Any]) -> list[str] | None:
    """derive ``tau2_nl_assertions``: tau2 ``evaluation_criteria.nl_assertions`` for tasks whose
    ``reward_basis`` includes NL_ASSERTION (None otherwise; no telecom task declares any)."""
    criteria = _criteria(record)
    value = criteria.get("nl_assertions")
    if NL_ASSERTION not in (criteria.get("reward_basis") or ()) or not value:
        return None
    return [str(claim) for claim in value]


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


_GOLD_USER_HASHES: dict[int, tuple[Any, str | None]] = {}
_LOCK = threading.Lock()


def _gold_user_hash(scenario: Any) -> str | None:
    """tau2 hash of the phone DB the scenario's gold replay ends with (cached per scenario)."""
    with _LOCK:
        hit = _GOLD_USER_HASHES.get(id(scenario))
    if hit is not None and hit[0] is scenario:
        return hit[1]
    run = gold_replay(scenario) if scenario.gold_trace is not None else None
    value = tau2_hash(run.user_db, "user") if run is not None and run.user_db is not None else None
    with _LOCK:
        _GOLD_USER_HASHES[id(scenario)] = (scenario, value)
    return value


def user_db_state_match(inputs: DiagnosticInputs) -> bool | None:
    """Diagnostic: the session's phone DB has the tau2 hash of the gold replay's phone DB (None
    without a gold trace or a user DB)."""
    if inputs.result.user_db is None:
        return None
    expected = _gold_user_hash(inputs.scenario)
    return None if expected is None else tau2_hash(inputs.result.user_db, "user") == expected


PLUGIN = DomainPlugin(
    name="tau2_telecom",
    description="tau2-bench 17e07b1 telecom: carrier and phone tools, sync, task set-up, env assertions",
    handlers={**AGENT_HANDLERS, **USER_HANDLERS},
    predicates=SIDED_PREDICATES,
    diagnostics={"user_db_state_match": user_db_state_match},
    sync=sync,
    initialise=initialise_task,
    hash_styles={"tau2": agent_hash},
    derive={
        "tau2_env_assertions": env_assertions,
        "tau2_action_reference": action_reference,
        "tau2_nl_assertions": nl_assertions,
    },
)
