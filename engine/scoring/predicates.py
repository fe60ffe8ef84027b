"""DB-state predicates keyed by (domain, name), and the ``db_state_assertion`` evaluator.

Each predicate is a plain function ``(db, **arguments) -> value``; the scorer compares the value
with the assertion's ``assert_value`` (``==``, numbers as numbers). Scenario specs name a
predicate by ``func_name``; names missing from :data:`PREDICATES` fail spec validation before any
run, and fail that one assertion (with an ``error``) if they slip through.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

Predicate = Callable[..., Any]


def _reservation(db: Mapping[str, Any], confirmation_number: str) -> Mapping[str, Any]:
    res = db.get("reservations", {}).get(str(confirmation_number).upper())
    if res is None:
        raise KeyError(f"reservation {confirmation_number!r} not in DB")
    return res


def eva_reservation_status(db: Mapping[str, Any], confirmation_number: str) -> Any:
    """eva_airline: ``reservations[CONF].status`` (e.g. ``confirmed``, ``changed``, ``cancelled``)."""
    return _reservation(db, confirmation_number).get("status")


def eva_active_journeys(db: Mapping[str, Any], confirmation_number: str) -> list[str]:
    """eva_airline: sorted journey ids of the reservation's bookings that are not cancelled."""
    bookings = _reservation(db, confirmation_number).get("bookings", [])
    return sorted(b.get("journey_id") for b in bookings if b.get("status") != "cancelled")


def eva_refund_total(db: Mapping[str, Any], confirmation_number: str) -> float:
    """eva_airline: sum of ``refund_amount`` over ``refunds`` for that reservation (dollars,
    rounded to cents: 10.10 + 20.20 is 30.3, not the float sum 30.299999999999997)."""
    conf = str(confirmation_number).upper()
    refunds = db.get("refunds", {}).values()
    total = sum(r.get("refund_amount", 0) for r in refunds if r.get("confirmation_number") == conf)
    return round(float(total), 2)


def eva_session_authenticated(db: Mapping[str, Any], confirmation_number: str) -> bool:
    """eva_airline: True when get_reservation authenticated this reservation (``db.session``)."""
    session = db.get("session") or {}
    return session.get("confirmation_number") == str(confirmation_number).upper()


def mock_order_status(db: Mapping[str, Any], order_id: str) -> Any:
    """mock (tests/mock_domain): ``orders[order_id].status``."""
    order = db.get("orders", {}).get(order_id)
    if order is None:
        raise KeyError(f"order {order_id!r} not in DB")
    return order.get("status")


def mock_credit_balance(db: Mapping[str, Any], customer_id: str) -> float:
    """mock (tests/mock_domain): ``customers[customer_id].credit`` in dollars (0 when unset)."""
    return float(db.get("customers", {}).get(customer_id, {}).get("credit", 0))


PREDICATES: dict[tuple[str, str], Predicate] = {
    ("eva_airline", "reservation_status"): eva_reservation_status,
    ("eva_airline", "active_journeys"): eva_active_journeys,
    ("eva_airline", "refund_total"): eva_refund_total,
    ("eva_airline", "session_authenticated"): eva_session_authenticated,
    ("mock", "order_status"): mock_order_status,
    ("mock", "credit_balance"): mock_credit_balance,
}


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
    domain: str,
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
    func = PREDICATES.get((domain, name))
    db = agent_db if side == "agent" else user_db if side == "user" else None
    if func is None:
        verdict["error"] = f"unknown predicate {name!r} for domain {domain!r}"
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
