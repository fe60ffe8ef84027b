"""eva_airline write handlers on bookings: rebook, cancel, seat, bags, meal, standby.

Each is ``(db, args, ctx) -> result`` with ``args`` already validated. Every check runs before the
first write, so an error result leaves the DB untouched. Behaviour mirrors eva 0.1.3 as
``docs/eva_airline_tools.md`` records it; the rebook carry-over is the tool option
``carry_over_fields`` (default ``[bags_checked, meal_request]``; ``[]`` is upstream's reset).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.core.tools.context import CallContext, error
from engine.core.tools.writeset import deep_copy
from engine.domains.eva_airline.common import (
    booking_total,
    bump_seats,
    find_booking,
    find_reservation,
    find_segments,
    journey_not_found,
    journey_seats,
    reservation_not_found,
)

Result = dict[str, Any]
DEFAULT_CARRY_OVER: tuple[str, ...] = ("bags_checked", "meal_request")
_SAME_DAY_FEE = {"basic_economy": 199}
_CHANGE_FEE = {"basic_economy": 75, "main_cabin": 75, "premium_economy": 75, "business": 0, "first": 0}
_SEAT_ROW_BASE = {"basic_economy": 25, "main_cabin": 20, "premium_economy": 10, "business": 5, "first": 1}
_SEAT_LETTER = {"window": "A", "middle": "B", "aisle": "C", "no_preference": "C"}
_ALL_SEAT_TYPES = ["window", "aisle", "middle"]


def _booking_of(db: Mapping[str, Any], conf: str, journey_id: str) -> tuple[Any, Any, Result | None]:
    reservation = find_reservation(db, conf)
    if not reservation:
        return None, None, reservation_not_found(conf)
    booking = find_booking(reservation, journey_id)
    if not booking:
        return reservation, None, journey_not_found(journey_id)
    return reservation, booking, None


def _change_fee(rebooking_type: str, fare_class: str) -> int:
    if rebooking_type == "same_day":
        return _SAME_DAY_FEE.get(fare_class, 75)
    return _CHANGE_FEE.get(fare_class, 75)


def rebook_flight(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> Result:
    """Move a booking (or one leg of it, with ``flight_number``) to another journey.

    Errors, in order: ``not_found``, ``journey_not_found``, ``flight_not_found``,
    ``not_bookable``, segment errors (partial), ``fare_class_not_available``,
    ``no_seats_available``. Fees: 0 for IRROPS (``"irrops"`` in the type) or waived; same_day
    199 basic / 75 else; otherwise 75 up to premium_economy, 0 for business and first.
    """
    conf = args["confirmation_number"].upper()
    journey_id, new_id = args["journey_id"], args["new_journey_id"]
    rebooking_type, flight_number = args["rebooking_type"], args.get("flight_number")
    reservation, booking, failed = _booking_of(db, conf, journey_id)
    if failed:
        return failed
    journeys = db.get("journeys", {})
    new = journeys.get(new_id)
    if not new:
        return error("flight_not_found", f"Flight {new_id} not found")
    if not new.get("bookable", True):
        return error("not_bookable", f"Flight {new_id} is not available for booking")
    replaced = None
    if flight_number:
        hits, failed = find_segments(booking, journey_id, flight_number)
        if failed:
            return failed
        replaced = hits[0]
    orig_class = booking.get("fare_class", "main_cabin")
    target = args.get("new_fare_class") or orig_class
    new_fare = new.get("fares", {}).get(target)
    if new_fare is None:
        return error("fare_class_not_available", f"Fare class '{target}' is not available on flight {new_id}")
    if journey_seats(new).get(target, 0) <= 0:
        return error("no_seats_available", f"No seats available in {target} on flight {new_id}")

    irrops = "irrops" in rebooking_type
    waived = irrops or bool(args["waive_change_fee"])
    fee = 0 if waived else _change_fee(rebooking_type, orig_class)
    old_fare = replaced.get("fare_paid", 0) if replaced is not None else booking_total(booking)
    diff = new_fare - old_fare
    credit_due = max(0, -diff)
    total_collected = 0 if irrops else fee + max(0, diff)

    # (a) the first booking with this journey id is cancelled (even one cancelled before)
    for candidate in reservation["bookings"]:
        if candidate["journey_id"] == journey_id:
            candidate["status"] = "cancelled"
            break
    # (b) the new booking
    carried = ctx.options.get("carry_over_fields", DEFAULT_CARRY_OVER)
    old_segments = booking.get("segments", [])
    new_segments = new.get("segments", [])
    segments = []
    for i, seg in enumerate(new_segments):
        if irrops and replaced is None and i < len(old_segments):
            seg_fare = old_segments[i].get("fare_paid", 0)
        elif irrops and replaced is not None and len(new_segments) == 1:
            seg_fare = replaced.get("fare_paid", 0)
        else:
            seg_fare = seg.get("fares", {}).get(target, 0)
        row = {
            "flight_number": seg.get("flight_number"),
            "date": new.get("date"),
            "fare_paid": seg_fare,
            "seat": None,
            "bags_checked": 0,
            "meal_request": None,
        }
        source = (
            replaced
            if replaced is not None
            else (old_segments[min(i, len(old_segments) - 1)] if old_segments else None)
        )
        for name in carried:
            if source is not None and name in source:
                row[name] = deep_copy(source[name])
        segments.append(row)
    reservation["bookings"].append(
        {
            "journey_id": new_id,
            "fare_class": target,
            "fare_paid": old_fare if irrops else new_fare,
            "status": "confirmed",
            "segments": segments,
        }
    )
    # (c) a partial rebook keeps the other legs as their own booking
    kept = [s for s in old_segments if s.get("flight_number") != flight_number] if flight_number else []
    if kept:
        reservation["bookings"].append(
            {
                "journey_id": journey_id,
                "fare_class": orig_class,
                "fare_paid": sum(s.get("fare_paid", 0) for s in kept),
                "status": "confirmed",
                "segments": deep_copy(kept),
            }
        )
    # (d)-(f) reservation status and seat counts
    reservation["status"] = "changed"
    bump_seats(new, target, -1)
    bump_seats(journeys.get(booking.get("journey_id")), orig_class, +1)

    result: Result = {
        "status": "success",
        "confirmation_number": conf,
        "new_journey": {
            "journey_id": new_id,
            "num_stops": new.get("num_stops", 0),
            "segments": deep_copy(new_segments),
            "departure": new_segments[0]["scheduled_departure"] if new_segments else None,
            "arrival": new_segments[-1]["scheduled_arrival"] if new_segments else None,
            "origin": new.get("origin"),
            "destination": new.get("destination"),
        },
        "cost_summary": {
            "original_fare_class": orig_class,
            "new_fare_class": target,
            "cabin_changed": orig_class != target,
            "change_fee": fee,
            "fare_difference": diff,
            "credit_due": credit_due,
            "total_collected": total_collected,
            "fee_waived": waived,
        },
        "message": f"Successfully rebooked to flight {new_id}"
        + (f" in {target}" if orig_class != target else ""),
    }
    if replaced is not None:
        result["partial_rebook"] = True
        result["replaced_segment"] = {
            "flight_number": flight_number,
            "origin": replaced.get("origin"),
            "destination": replaced.get("destination"),
            "fare_paid": replaced.get("fare_paid"),
        }
        result["kept_segments"] = [
            {k: s.get(k) for k in ("flight_number", "origin", "destination", "fare_paid", "seat")}
            for s in kept
        ]
    return result


def cancel_reservation(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> Result:
    """Cancel one booking; refundable for irrops_refund / 24_hour_rule or a refundable fare.

    Errors: ``not_found``, ``journey_not_found``, ``already_cancelled``. Fee 100 unless
    refundable; credit = max(0, fare - 100) when not. Writes no refund or credit record.
    """
    conf = args["confirmation_number"].upper()
    journey_id, reason = args["journey_id"], args["cancellation_reason"]
    reservation, booking, failed = _booking_of(db, conf, journey_id)
    if failed:
        return failed
    if booking.get("status") == "cancelled":
        return error("already_cancelled", f"Journey {journey_id} is already cancelled")
    fare = booking_total(booking)
    refundable = reason in ("irrops_refund", "24_hour_rule") or reservation.get("fare_type") == "refundable"
    fee = 0 if refundable else 100
    booking["status"] = "cancelled"
    bump_seats(db.get("journeys", {}).get(journey_id), booking.get("fare_class", "main_cabin"), +1)
    all_cancelled = all(b.get("status") == "cancelled" for b in reservation.get("bookings", []))
    if all_cancelled:
        reservation["status"] = "cancelled"
    return {
        "status": "success",
        "confirmation_number": conf,
        "journey_id": journey_id,
        "is_refundable": refundable,
        "cancellation_fee": fee,
        "refund_amount_eligible": max(0, fare - fee) if refundable else 0,
        "credit_amount_eligible": 0 if refundable else max(0, fare - fee),
        "reservation_status": "cancelled" if all_cancelled else "active",
        "message": f"Journey {journey_id} cancelled successfully",
    }


def assign_seat(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> Result:
    """Seat = row base by class + passenger number, letter by preference (PAX001 main window: 21A).

    Errors: lookups, ``no_seats_available`` (class count at 0), ``seat_type_unavailable``.
    Writes the booking segment's ``seat`` only; the passenger id is not checked.
    """
    conf = args["confirmation_number"].upper()
    pax, journey_id, pref = args["passenger_id"], args["journey_id"], args["seat_preference"]
    _, booking, failed = _booking_of(db, conf, journey_id)
    if failed:
        return failed
    hits, failed = find_segments(booking, journey_id, args.get("flight_number"))
    if failed:
        return failed
    segment = hits[0]
    flight_number = args.get("flight_number") or segment.get("flight_number", "")
    fare_class = booking.get("fare_class", "main_cabin")
    journey = db.get("journeys", {}).get(journey_id) or {}
    flight = next((s for s in journey.get("segments", []) if s.get("flight_number") == flight_number), None)
    if flight:
        if flight.get("available_seats", {}).get(fare_class, 0) <= 0:
            return error("no_seats_available", f"No seats available in {fare_class} fare class")
        kinds = flight.get("available_seat_types")
        kinds = (
            kinds.get(fare_class, _ALL_SEAT_TYPES) if isinstance(kinds, dict) and kinds else _ALL_SEAT_TYPES
        )
        if pref != "no_preference" and pref not in kinds:
            return error(
                "seat_type_unavailable",
                f"No {pref} seats available in {fare_class} on this flight. "
                f"Available types: {', '.join(kinds)}",
            )
    number = int(pax[-3:]) if len(pax) >= 3 else 0
    seat = f"{_SEAT_ROW_BASE.get(fare_class, 20) + number}{_SEAT_LETTER.get(pref, 'C')}"
    segment["seat"] = seat
    return {
        "status": "success",
        "confirmation_number": conf,
        "passenger_id": pax,
        "journey_id": journey_id,
        "flight_number": flight_number,
        "seat_assigned": seat,
        "fare_class": fare_class,
        "preference": pref,
        "message": f"Seat {seat} ({pref}) successfully assigned",
    }


def _segment_targets(db: Mapping[str, Any], args: Mapping[str, Any]) -> tuple[str, list[Any], Result | None]:
    conf = args["confirmation_number"].upper()
    _, booking, failed = _booking_of(db, conf, args["journey_id"])
    if failed:
        return conf, [], failed
    if args.get("flight_number"):
        hits, failed = find_segments(booking, args["journey_id"], args["flight_number"])
        return conf, hits, failed
    return conf, list(booking.get("segments", [])), None


def add_baggage_allowance(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> Result:
    """Set ``bags_checked`` on the segment (or every segment of the booking without a flight number)."""
    conf, targets, failed = _segment_targets(db, args)
    if failed:
        return failed
    bags = args["num_bags"]
    for segment in targets:
        segment["bags_checked"] = bags
    return {
        "status": "success",
        "confirmation_number": conf,
        "journey_id": args["journey_id"],
        "bags_checked": bags,
        "message": f"Baggage allowance set to {bags} checked bag(s)",
    }


def add_meal_request(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> Result:
    """Set ``meal_request`` on the segment (or every segment of the booking without a flight number)."""
    conf, targets, failed = _segment_targets(db, args)
    if failed:
        return failed
    meal = args["meal_type"]
    for segment in targets:
        segment["meal_request"] = meal
    return {
        "status": "success",
        "confirmation_number": conf,
        "passenger_id": args["passenger_id"],
        "journey_id": args["journey_id"],
        "meal_type": meal,
        "message": f"{meal} meal request added",
    }


def add_to_standby(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> Result:
    """Queue passengers on a journey's ``standby_list`` (and the reservation's, when it exists).

    Errors: ``flight_not_found``, ``flight_cancelled``, ``invalid_passengers``. A missing
    reservation is tolerated. Both lists are created on first use.
    """
    conf, journey_id, pax_ids = (
        args["confirmation_number"].upper(),
        args["journey_id"],
        list(args["passenger_ids"]),
    )
    journey = db.get("journeys", {}).get(journey_id)
    if not journey:
        return error("flight_not_found", f"Flight {journey_id} not found")
    if journey.get("status") == "cancelled":
        return error("flight_cancelled", "Cannot add to standby for cancelled flight")
    reservation = find_reservation(db, conf)
    if reservation and pax_ids:
        known = {p.get("passenger_id") for p in reservation.get("passengers", [])}
        unknown = [p for p in pax_ids if p not in known]
        if unknown:
            return error("invalid_passengers", f"Unknown passenger ID(s): {', '.join(unknown)}")
    queue = journey.setdefault("standby_list", [])
    position = len(queue) + len(pax_ids)
    if reservation:
        reservation.setdefault("standby_list", []).append(
            {"journey_id": journey_id, "passenger_ids": pax_ids, "position": position, "status": "pending"}
        )
    for pax in pax_ids:
        queue.append({"confirmation_number": conf, "passenger_id": pax, "position": len(queue) + 1})
    return {
        "status": "success",
        "confirmation_number": conf,
        "journey_id": journey_id,
        "standby_list_position": position,
        "message": f"Added {len(pax_ids)} passenger(s) to standby list",
    }
