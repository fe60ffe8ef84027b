"""Shared pieces of the eva_airline handlers: lookups, error results and the argument-rule table.

Behaviour follows ``docs/eva_airline_tools.md`` (measured on eva 0.1.3's airline tools).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.core.tools.arguments import FieldRule
from engine.core.tools.context import error

FARE_CLASSES: tuple[str, ...] = ("basic_economy", "main_cabin", "premium_economy", "business", "first")


_CONF = {"pattern": r"^[A-Za-z0-9]{6}$"}
_FLIGHT = {"pattern": r"^[A-Za-z]{2,3}\d{1,4}$"}
_DATE = {"pattern": r"^\d{4}-\d{2}-\d{2}$"}
_JOURNEY = {"pattern": r"^FL_(?:[A-Za-z]{2,3}\d{1,4}_)+\d{8}$"}
_PAX = {"pattern": r"^PAX\d+$"}
_AIRPORT = {"pattern": r"^[A-Za-z]{3}$"}
_JOURNEY_TEXT = ("FL_<flight>_<YYYYMMDD>", ("FL_SK621_20260320",))

#: Argument name -> its rule. Enum values themselves come from the tool table (upstream enums).
FIELD_RULES: dict[str, FieldRule] = {
    # enum fields
    "rebooking_type": FieldRule("invalid_rebooking_type"),
    "new_fare_class": FieldRule("invalid_fare_class"),
    "fare_class": FieldRule("invalid_fare_class"),
    "meal_type": FieldRule("invalid_meal_type"),
    "credit_reason": FieldRule("invalid_credit_reason"),
    "voucher_reason": FieldRule("invalid_voucher_reason"),
    "refund_type": FieldRule("invalid_refund_type"),
    "seat_preference": FieldRule("invalid_seat_preference"),
    "cancellation_reason": FieldRule("invalid_cancellation_reason"),
    # format fields
    "confirmation_number": FieldRule(
        "invalid_confirmation_number_format", "6 alphanumeric characters", (), _CONF, upper=True
    ),
    "flight_number": FieldRule(
        "invalid_flight_number_format", "2-3 letters followed by 1-4 digits", ("SK621",), _FLIGHT
    ),
    "flight_date": FieldRule("invalid_date_format", "YYYY-MM-DD", (), _DATE),
    "date": FieldRule("invalid_date_format", "YYYY-MM-DD", (), _DATE),
    "journey_id": FieldRule("invalid_journey_id_format", *_JOURNEY_TEXT, _JOURNEY),
    "new_journey_id": FieldRule("invalid_journey_id_format", *_JOURNEY_TEXT, _JOURNEY),
    "passenger_id": FieldRule("invalid_passenger_id_format", "PAX<digits>", ("PAX001",), _PAX),
    "passenger_ids": FieldRule("invalid_passenger_id_format", constraints={"items": _PAX}),
    "origin": FieldRule("invalid_airport_code_format", "3-letter airport code", ("JFK",), _AIRPORT),
    "destination": FieldRule("invalid_airport_code_format", "3-letter airport code", ("JFK",), _AIRPORT),
    # compared without regard to case by the handler (get_reservation)
    "last_name": FieldRule(ignore_case=True),
    # bounds
    "num_bags": FieldRule("invalid_bag_count", constraints={"minimum": 0, "maximum": 5}),
    "passenger_count": FieldRule(constraints={"minimum": 1}),
    "num_nights": FieldRule(constraints={"minimum": 1}),
    "amount": FieldRule(constraints={"exclusiveMinimum": 0}),
    "refund_amount": FieldRule(constraints={"exclusiveMinimum": 0}),
}


def reservation_not_found(conf: str) -> dict[str, Any]:
    return error("not_found", f"Reservation {conf} not found")


def journey_not_found(journey_id: str) -> dict[str, Any]:
    return error("journey_not_found", f"Journey {journey_id} not found in reservation")


def find_reservation(db: Mapping[str, Any], conf: str) -> dict[str, Any] | None:
    """``reservations[CONF]`` (``conf`` already upper-cased), else None."""
    return db.get("reservations", {}).get(conf)


def find_booking(reservation: Mapping[str, Any], journey_id: str) -> dict[str, Any] | None:
    """The first booking with ``journey_id``, preferring one that is not cancelled; else None."""
    first = None
    for booking in reservation.get("bookings", []):
        if booking.get("journey_id") == journey_id:
            if booking.get("status") != "cancelled":
                return booking
            if first is None:
                first = booking
    return first


def find_segments(
    booking: Mapping[str, Any], journey_id: str, flight_number: str | None
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """Booking segments a call targets: ``(segments, None)`` or ``([], error result)``.

    With a flight number: that segment (``flight_not_found``); without: the only segment, else
    ``flight_number_required``.
    """
    segments = booking.get("segments", [])
    if flight_number:
        hits = [s for s in segments if s.get("flight_number") == flight_number]
        if not hits:
            return [], error("flight_not_found", f"Flight {flight_number} not found in journey {journey_id}")
        return hits, None
    if len(segments) == 1:
        return list(segments), None
    return [], error(
        "flight_number_required",
        f"Journey {journey_id} has {len(segments)} segments; flight_number is required",
    )


def journey_seats(journey: Mapping[str, Any]) -> dict[str, int]:
    """Seats per class for a journey: the minimum across its segments (keys of the first)."""
    segments = journey.get("segments", [])
    if not segments:
        return {}
    seats = dict(segments[0].get("available_seats", {}))
    for segment in segments[1:]:
        other = segment.get("available_seats", {})
        for fare_class in seats:
            seats[fare_class] = min(seats.get(fare_class, 0), other.get(fare_class, 0))
    return seats


def booking_total(booking: Mapping[str, Any]) -> float:
    """``booking.fare_paid`` when present, else the sum of its segments' ``fare_paid``."""
    if "fare_paid" in booking:
        return booking.get("fare_paid", 0)
    return sum(s.get("fare_paid", 0) for s in booking.get("segments", []))


def bump_seats(journey: Mapping[str, Any] | None, fare_class: str, delta: int) -> None:
    """Add ``delta`` to ``available_seats[fare_class]`` on every segment of ``journey``."""
    if not journey:
        return
    for segment in journey.get("segments", []):
        seats = segment.setdefault("available_seats", {})
        seats[fare_class] = seats.get(fare_class, 0) + delta
