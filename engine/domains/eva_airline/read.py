"""eva_airline read and system handlers: reservation, flight status, disruptions, search, transfer.

Each is ``(db, args, ctx) -> result`` with ``args`` already validated against the tool's schema.
Behaviour mirrors eva 0.1.3's airline tools as ``docs/eva_airline_tools.md`` records it, with the
decisions table applied (get_reservation writes ``session`` and enriches booking segments).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.core.tools.context import CallContext, error
from engine.core.tools.writeset import deep_copy
from engine.domains.eva_airline.common import (
    FARE_CLASSES,
    find_reservation,
    journey_seats,
    reservation_not_found,
)

_SEARCHABLE_STATUSES = frozenset({"scheduled", "on_time", "delayed"})
_ENRICHED_FIELDS = ("origin", "destination", "scheduled_departure", "scheduled_arrival")


def get_reservation(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    """Authenticate and return the reservation (a copy; bookings sorted, segments enriched).

    Errors: ``not_found``, ``authentication_failed`` (a non-empty last name matching no
    passenger, case-insensitive). On success writes ``session`` (confirmation number, last name).
    """
    conf = args["confirmation_number"].upper()
    last_name = args["last_name"]
    reservation = find_reservation(db, conf)
    if not reservation:
        return reservation_not_found(conf)
    if last_name:
        wanted = last_name.lower()
        if not any(str(p.get("last_name", "")).lower() == wanted for p in reservation.get("passengers", [])):
            return error("authentication_failed", f"Last name does not match reservation {conf}")
    db.setdefault("session", {}).update({"confirmation_number": conf, "last_name": last_name.lower()})
    view = deep_copy(reservation)
    bookings = view.get("bookings", [])
    bookings.sort(key=lambda b: ((b.get("segments") or [{}])[0].get("date", ""), b.get("journey_id", "")))
    journeys = db.get("journeys", {})
    for booking in bookings:
        journey = journeys.get(booking.get("journey_id"))
        if not journey:
            continue
        by_flight = {s.get("flight_number"): s for s in journey.get("segments", [])}
        for segment in booking.get("segments", []):
            source = by_flight.get(segment.get("flight_number"))
            if source:
                segment.update({k: source.get(k) for k in _ENRICHED_FIELDS})
    return {"status": "success", "reservation": view}


def get_flight_status(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    """Journey ``FL_<FN>_<YYYYMMDD>``, else the first journey that date holding that flight.

    Error: ``not_found``. Read-only; returns a copy.
    """
    raw_number, raw_date = args["flight_number"], args["flight_date"]
    number, day = raw_number.upper(), raw_date.replace("-", "")
    journeys = db.get("journeys", {})
    journey = journeys.get(f"FL_{number}_{day}")
    if not journey:
        journey = next(
            (
                j
                for j in journeys.values()
                if str(j.get("date", "")).replace("-", "") == day
                and any(str(s.get("flight_number", "")).upper() == number for s in j.get("segments", []))
            ),
            None,
        )
    if not journey:
        return error("not_found", f"Flight {raw_number} not found for date {raw_date}")
    return {"status": "success", "journey": deep_copy(journey)}


def get_disruption_info(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    """``disruptions["<FN>_<date>"]`` as a copy, else ``not_found``."""
    number = args["flight_number"].upper()
    disruption = db.get("disruptions", {}).get(f"{number}_{args['date']}")
    if not disruption:
        return error("not_found", f"No disruption info found for flight {number}")
    return {"status": "success", "disruption": deep_copy(disruption)}


def _option(
    journey_id: str, journey: Mapping[str, Any], seats: Mapping[str, int], fare: Any
) -> dict[str, Any]:
    segments = journey.get("segments", [])
    return {
        "journey_id": journey_id,
        "origin": journey.get("origin"),
        "destination": journey.get("destination"),
        "num_stops": journey.get("num_stops", 0),
        "total_duration_minutes": journey.get("total_duration_minutes"),
        # The live DB list, as upstream: a response serialised later shows later seat counts.
        "segments": segments,
        "departure_time": segments[0]["scheduled_departure"] if segments else None,
        "arrival_time": segments[-1]["scheduled_arrival"] if segments else None,
        "available_seats": {fc: seats.get(fc, 0) for fc in FARE_CLASSES},
        "fare": fare,
    }


def search_rebooking_options(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    """Bookable journeys on a route and date with enough seats, sorted by departure time.

    ``fare_class="any"`` prices each option at its cheapest class with seats and a fare.
    Returns ``{status, options, count, message}``; never an error once arguments are valid.
    """
    origin, destination = args["origin"].upper(), args["destination"].upper()
    date, count, fare_class = args["date"], args["passenger_count"], args["fare_class"]
    options = []
    for journey_id, journey in db.get("journeys", {}).items():
        if (journey.get("origin"), journey.get("destination"), journey.get("date")) != (
            origin,
            destination,
            date,
        ):
            continue
        if journey.get("status") not in _SEARCHABLE_STATUSES or not journey.get("bookable", False):
            continue
        seats = journey_seats(journey)
        fares = journey.get("fares", {})
        if fare_class == "any":
            if not any(n is not None and n >= count for n in seats.values()):
                continue
            priced = [
                (fares[fc], fc)
                for fc in FARE_CLASSES
                if seats.get(fc, 0) >= count and fares.get(fc) is not None
            ]
            chosen = min(priced, key=lambda p: p[0])[1] if priced else "any"
        else:
            if seats.get(fare_class, 0) < count:
                continue
            chosen = fare_class
        options.append(_option(journey_id, journey, seats, fares.get(chosen)))
    options.sort(key=lambda o: o.get("departure_time") or "")
    return {
        "status": "success",
        "options": options,
        "count": len(options),
        "message": f"{len(options)} flight(s) found",
    }


def transfer_to_agent(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    """Hand the call to a live agent: ``TRF-<CONF>-<nnn>`` (nnn = successful-call index).

    Error: ``not_found`` for an unknown reservation. No DB write; the runtime ends the session
    with stop reason ``transfer`` after a success.
    """
    conf = args["confirmation_number"].upper()
    if conf and not find_reservation(db, conf):
        return reservation_not_found(conf)
    return {
        "status": "success",
        "transfer_id": f"TRF-{conf}-{ctx.call_index:03d}",
        "confirmation_number": conf,
        "transfer_reason": args["transfer_reason"],
        "issue_summary": args["issue_summary"],
        "estimated_wait": "2-3 minutes",
        "message": "Transferring to live agent",
    }
