"""tau2 airline read tools: users, reservations, flight status, airports, flight search.

Each handler is ``(db, args, ctx) -> result`` (see ``engine.domains.tau2_common.results``), writes
nothing, and mirrors the same-named tool of tau2 17e07b1's airline toolkit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.core.tools.context import CallContext
from engine.domains.tau2_airline import shapes
from engine.domains.tau2_common.results import ToolFailure, get_or_fail, ok, tau2_tool

#: tau2's fixed airport list (IATA code, city), in its order.
AIRPORTS: tuple[tuple[str, str], ...] = (
    ("SFO", "San Francisco"),
    ("JFK", "New York"),
    ("LAX", "Los Angeles"),
    ("ORD", "Chicago"),
    ("DFW", "Dallas"),
    ("DEN", "Denver"),
    ("SEA", "Seattle"),
    ("ATL", "Atlanta"),
    ("MIA", "Miami"),
    ("BOS", "Boston"),
    ("PHX", "Phoenix"),
    ("IAH", "Houston"),
    ("LAS", "Las Vegas"),
    ("MCO", "Orlando"),
    ("EWR", "Newark"),
    ("CLT", "Charlotte"),
    ("MSP", "Minneapolis"),
    ("DTW", "Detroit"),
    ("PHL", "Philadelphia"),
    ("LGA", "LaGuardia"),
)


def flight_on(db: Mapping[str, Any], flight_number: Any, date: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(flight, its record for date)``. Raises ToolFailure ``not_found``: ``Flight <n> not found``
    or ``Flight <n> not found on date <d>``."""
    flight = get_or_fail(db["flights"], flight_number, f"Flight {flight_number} not found")
    instance = get_or_fail(flight["dates"], date, f"Flight {flight_number} not found on date {date}")
    return flight, instance


@tau2_tool
def get_user_details(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    """The user record as JSON (model order). Error ``not_found``: ``User <id> not found``."""
    user_id = args["user_id"]
    return ok(get_or_fail(db["users"], user_id, f"User {user_id} not found"), shapes.USER)


@tau2_tool
def get_reservation_details(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    """The reservation as JSON (model order, ``status`` null when absent). Error ``not_found``:
    ``Reservation <id> not found``."""
    rid = args["reservation_id"]
    return ok(get_or_fail(db["reservations"], rid, f"Reservation {rid} not found"), shapes.RESERVATION)


@tau2_tool
def get_flight_status(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    """The flight's status on ``date`` as a bare string (``available``, ``landed``, ``on time``...).
    Errors ``not_found`` as :func:`flight_on`."""
    _, instance = flight_on(db, args["flight_number"], args["date"])
    return ok(str(instance["status"]))


def list_all_airports(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    """tau2's constant list of 20 airports as JSON ``[{"iata", "city"}, ...]``; never fails."""
    return ok([{"iata": code, "city": city} for code, city in AIRPORTS])


def direct_flights(
    db: Mapping[str, Any],
    date: str,
    origin: str | None,
    destination: str | None,
    leave_after: str | None = None,
) -> list[dict[str, Any]]:
    """Flights (DB order) from ``origin`` to ``destination`` (None: any) whose record on ``date`` is
    ``available`` and, with ``leave_after``, whose scheduled departure text compares ``>=`` it (a
    plain string comparison, as tau2 does). Each result is a new DirectFlight dict, ``date`` null."""
    found: list[dict[str, Any]] = []
    for flight in db["flights"].values():
        if origin is not None and flight["origin"] != origin:
            continue
        if destination is not None and flight["destination"] != destination:
            continue
        instance = flight["dates"].get(date)
        if instance is None or instance.get("status") != "available":
            continue
        if leave_after is not None and not flight["scheduled_departure_time_est"] >= leave_after:
            continue
        found.append(
            {
                "flight_number": flight["flight_number"],
                "origin": flight["origin"],
                "destination": flight["destination"],
                "status": "available",
                "scheduled_departure_time_est": flight["scheduled_departure_time_est"],
                "scheduled_arrival_time_est": flight["scheduled_arrival_time_est"],
                "date": None,
                "available_seats": dict(instance["available_seats"]),
                "prices": dict(instance["prices"]),
            }
        )
    return found


def search_direct_flight(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    """Available direct flights ``origin`` → ``destination`` on ``date``, as a JSON list of
    DirectFlight records (``date`` null in each, as tau2 shows it); ``[]`` when none. Never fails."""
    found = direct_flights(db, args["date"], args["origin"], args["destination"])
    return ok(found, shapes.DIRECT_FLIGHT_LIST)


@tau2_tool
def search_onestop_flight(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    """One-stop connections as a JSON list of ``[first leg, second leg]`` pairs.

    tau2's rules, kept as they are: the first leg is any available flight from ``origin`` on
    ``date``; when its scheduled arrival text contains ``+1`` the second leg is searched on
    ``2024-05-<day + 1>`` (month fixed to May, day not zero-padded, so e.g. ``2024-05-9`` matches
    nothing), else on ``date``; the second leg must depart (string comparison) at or after the first
    leg's arrival text. Each leg carries its ``date``. A date whose last two characters are not
    digits fails (``invalid_argument``, Python's int() message) once a first leg arrives ``+1``.
    """
    origin, destination, date = args["origin"], args["destination"], args["date"]
    pairs: list[list[dict[str, Any]]] = []
    for first in direct_flights(db, date, origin, None):
        first["date"] = date
        if "+1" in first["scheduled_arrival_time_est"]:
            try:
                second_date = f"2024-05-{int(date[-2:]) + 1}"
            except ValueError as exc:
                raise ToolFailure("invalid_argument", str(exc)) from exc
        else:
            second_date = date
        for second in direct_flights(
            db, second_date, first["destination"], destination, first["scheduled_arrival_time_est"]
        ):
            second["date"] = second_date
            pairs.append([first, second])
    return ok(pairs, shapes.DIRECT_FLIGHT_PAIRS)
