"""Per-scenario values of the tau2 telecom domain, derived from a task record: the ``derive``
functions its ``domain.yaml`` names (``record_fields``): env assertions with their side, the ACTION
reference and the NL assertions of a task's ``evaluation_criteria``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.domains.tau2_telecom.environment import SIDES
from engine.domains.tau2_telecom.predicates import PREDICATE_SIDES

#: tau2's reward-basis names that make evalctl fields applicable.
ACTION, NL_ASSERTION = "ACTION", "NL_ASSERTION"


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
