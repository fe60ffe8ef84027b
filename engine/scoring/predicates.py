"""The ``db_state_assertion`` evaluator.

Predicates belong to domain plugins (``DomainPlugin.predicates``): plain functions
``(db, **arguments) -> value``, given the DB of the assertion's side; the scorer compares the value
with the assertion's ``assert_value`` (``==``, numbers as numbers). Scenario specs name a
predicate by ``func_name``; names the plugin lacks fail spec validation before any run, and fail
that one assertion (with an ``error``) if they slip through.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any


def _equal(actual: Any, expected: Any) -> bool:
    """JSON equality with booleans apart from numbers at every depth (``[True] != [1]``)."""
    if isinstance(actual, bool) or isinstance(expected, bool):
        return isinstance(actual, bool) and isinstance(expected, bool) and actual == expected
    if isinstance(actual, list) and isinstance(expected, list):
        return len(actual) == len(expected) and all(map(_equal, actual, expected))
    if isinstance(actual, dict) and isinstance(expected, dict):
        return actual.keys() == expected.keys() and all(_equal(v, expected[k]) for k, v in actual.items())
    return actual == expected


def evaluate_db_state_assertion(
    predicates: Mapping[str, Callable[..., Any]],
    assertion: Mapping[str, Any],
    agent_db: Mapping[str, Any] | None,
    user_db: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Evaluate one ``{func_name, arguments, assert_value, side}`` assertion; never raises.

    Returns the verdict ``{func_name, arguments, side, assert_value, actual, passed}`` plus an
    ``error`` string when the predicate is unknown, the DB for ``side`` does not exist (eva has no
    user DB), the predicate raised or returned something that is not JSON data (a set, NaN; then
    ``actual`` is its repr) — each of which fails the assertion. A tuple compares as a list.
    """
    name = str(assertion.get("func_name", ""))
    args = dict(assertion.get("arguments") or {})
    side = str(assertion.get("side", "agent"))
    verdict: dict[str, Any] = {
        "func_name": name,
        "arguments": args,
        "side": side,
        "assert_value": assertion.get("assert_value"),
        "actual": None,
        "passed": False,
    }
    func = predicates.get(name)
    db = agent_db if side == "agent" else user_db if side == "user" else None
    if func is None:
        verdict["error"] = f"unknown predicate {name!r} for this domain"
    elif side not in ("agent", "user"):
        verdict["error"] = f"side must be 'agent' or 'user', got {side!r}"
    elif db is None:
        verdict["error"] = f"no {side} DB for this session"
    else:
        try:
            actual = func(db, **args)
        except Exception as exc:
            verdict["error"] = f"{type(exc).__name__}: {exc}"
            return verdict
        try:  # compare JSON with JSON (a tuple is a list) and keep metrics.json strict JSON
            verdict["actual"] = json.loads(json.dumps(actual, allow_nan=False))
        except (TypeError, ValueError) as exc:
            verdict["actual"] = repr(actual)[:200]
            verdict["error"] = f"predicate returned a value that is not JSON data: {exc}"
        else:
            verdict["passed"] = _equal(verdict["actual"], assertion.get("assert_value"))
    return verdict
