"""eva_airline DB-state predicates for ``db_state_assertions`` (``(db, **arguments) -> value``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _reservation(db: Mapping[str, Any], confirmation_number: str) -> Mapping[str, Any]:
    res = db.get("reservations", {}).get(str(confirmation_number).upper())
    if res is None:
        raise KeyError(f"reservation {confirmation_number!r} not in DB")
    return res


def eva_reservation_status(db: Mapping[str, Any], confirmation_number: str) -> Any:
    """``reservations[CONF].status`` (e.g. ``confirmed``, ``changed``, ``cancelled``)."""
    return _reservation(db, confirmation_number).get("status")


def eva_active_journeys(db: Mapping[str, Any], confirmation_number: str) -> list[str]:
    """sorted journey ids of the reservation's bookings that are not cancelled."""
    bookings = _reservation(db, confirmation_number).get("bookings", [])
    return sorted(b.get("journey_id") for b in bookings if b.get("status") != "cancelled")


def eva_refund_total(db: Mapping[str, Any], confirmation_number: str) -> float:
    """sum of ``refund_amount`` over ``refunds`` for that reservation (dollars,
    rounded to cents: 10.10 + 20.20 is 30.3, not the float sum 30.299999999999997)."""
    conf = str(confirmation_number).upper()
    refunds = db.get("refunds", {}).values()
    total = sum(r.get("refund_amount", 0) for r in refunds if r.get("confirmation_number") == conf)
    return round(float(total), 2)


def eva_session_authenticated(db: Mapping[str, Any], confirmation_number: str) -> bool:
    """True when get_reservation authenticated this reservation (``db.session``)."""
    session = db.get("session") or {}
    return session.get("confirmation_number") == str(confirmation_number).upper()


PREDICATES = {
    "reservation_status": eva_reservation_status,
    "active_journeys": eva_active_journeys,
    "refund_total": eva_refund_total,
    "session_authenticated": eva_session_authenticated,
}
