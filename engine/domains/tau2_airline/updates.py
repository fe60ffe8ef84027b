"""tau2 airline writes that change a reservation: baggages, flights, passengers.

Each handler is ``(db, args, ctx) -> result`` and mirrors the same-named tool of tau2 17e07b1's
airline toolkit. A charge goes through :func:`charge_for_update` (tau2's ``_payment_for_update``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.core.tools.context import CallContext
from engine.core.tools.writeset import json_copy
from engine.domains.tau2_airline import shapes
from engine.domains.tau2_airline.read import flight_on
from engine.domains.tau2_common.coerce import as_int, validated
from engine.domains.tau2_common.results import ToolFailure, get_or_fail, ok, tau2_tool

BAG_FEE = 50


def charge_for_update(
    db: dict[str, Any], user_id: str, payment_id: str, total_price: Any
) -> dict[str, Any] | None:
    """Charge ``total_price`` (may be negative: a refund) to one of the user's payment methods.

    Checks, in order: ``not_found`` ``Payment method not found``; ``payment`` ``Certificate cannot
    be used to update reservation`` (even when the price is 0); ``payment`` ``Gift card balance is
    not enough``. A gift card is then reduced by ``total_price`` (unrounded; a negative price
    credits it) — the user entry is replaced by an updated copy (the tool declares ``/users/-``).
    Returns the payment-history entry to append, or None when the price is 0.
    """
    methods = db["users"][user_id]["payment_methods"]
    if payment_id not in methods:
        raise ToolFailure("not_found", "Payment method not found")
    method = methods[payment_id]
    if method["source"] == "certificate":
        raise ToolFailure("payment", "Certificate cannot be used to update reservation")
    if method["source"] == "gift_card":
        if method["amount"] < total_price:
            raise ToolFailure("payment", "Gift card balance is not enough")
        user = json_copy(db["users"][user_id])
        user["payment_methods"][payment_id]["amount"] -= total_price
        db["users"][user_id] = user
    if total_price != 0:
        return {"payment_id": payment_id, "amount": as_int(total_price)}
    return None


@tau2_tool
def update_reservation_baggages(
    db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext
) -> dict[str, Any]:
    """Set the reservation's bag counts and charge 50 per added non-free bag; returns it as JSON.

    Price: ``50 × max(0, nonfree_baggages − current nonfree_baggages)`` (fewer bags refund
    nothing); a non-zero price appends a payment entry. The counts are stored as given.
    Errors: ``not_found`` ``Reservation <id> not found`` / ``User <id> not found``, then those of
    :func:`charge_for_update`. Writes ``/reservations/{reservation_id}``, ``/users/-``.
    """
    rid = args["reservation_id"]
    reservation = get_or_fail(db["reservations"], rid, f"Reservation {rid} not found")
    user_id = reservation["user_id"]
    get_or_fail(db["users"], user_id, f"User {user_id} not found")
    total_price = BAG_FEE * max(0, args["nonfree_baggages"] - reservation["nonfree_baggages"])
    payment = charge_for_update(db, user_id, args["payment_id"], total_price)
    if payment is not None:
        reservation["payment_history"].append(payment)
    reservation["total_baggages"] = args["total_baggages"]
    reservation["nonfree_baggages"] = args["nonfree_baggages"]
    return ok(reservation, shapes.RESERVATION)


@tau2_tool
def update_reservation_flights(
    db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext
) -> dict[str, Any]:
    """Replace the reservation's flights by ``flights`` in ``cabin``; returns it as JSON.

    tau2's rules, kept: a listed flight equal (number and date) to one already booked keeps its
    booked price only when ``cabin`` is the reservation's current cabin; any other is priced at
    today's ``cabin`` price and must be available with enough seats. The charge is the new total
    minus the old total (× passengers), possibly negative (a refund, credited to a gift card),
    through :func:`charge_for_update`. The cabin is updated. Seats are not taken from the new
    flights nor given back to the old ones.
    Errors: ``invalid_argument`` (a flight object the model cannot take); ``not_found``
    ``Reservation <id> not found`` / ``User <id> not found`` / ``Flight <n> not found`` /
    ``Flight <n> not found on date <d>``; ``unavailable`` ``Flight <n> not available on date <d>``
    / ``Not enough seats on flight <n>``; then :func:`charge_for_update`'s.
    Writes ``/reservations/{reservation_id}``, ``/users/-``.
    """
    flights = [validated("FlightInfo", f, shapes.FLIGHT_INFO_ARG) for f in args["flights"]]
    rid, cabin = args["reservation_id"], args["cabin"]
    reservation = get_or_fail(db["reservations"], rid, f"Reservation {rid} not found")
    user_id = reservation["user_id"]
    get_or_fail(db["users"], user_id, f"User {user_id} not found")
    count = len(reservation["passengers"])
    total_price: Any = 0
    new_flights: list[dict[str, Any]] = []
    for info in flights:
        number, date = info["flight_number"], info["date"]
        kept = next(
            (
                f
                for f in reservation["flights"]
                if f["flight_number"] == number and f["date"] == date and cabin == reservation["cabin"]
            ),
            None,
        )
        if kept is not None:
            total_price += kept["price"] * count
            new_flights.append(kept)
            continue
        flight, instance = flight_on(db, number, date)
        if instance.get("status") != "available":
            raise ToolFailure("unavailable", f"Flight {number} not available on date {date}")
        if instance["available_seats"][cabin] < count:
            raise ToolFailure("unavailable", f"Not enough seats on flight {number}")
        leg = {
            "flight_number": number,
            "origin": flight["origin"],
            "destination": flight["destination"],
            "date": date,
            "price": as_int(instance["prices"][cabin]),
        }
        total_price += leg["price"] * count
        new_flights.append(leg)
    total_price -= sum(f["price"] for f in reservation["flights"]) * count
    payment = charge_for_update(db, user_id, args["payment_id"], total_price)
    if payment is not None:
        reservation["payment_history"].append(payment)
    reservation["flights"] = new_flights
    reservation["cabin"] = cabin
    return ok(reservation, shapes.RESERVATION)


@tau2_tool
def update_reservation_passengers(
    db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext
) -> dict[str, Any]:
    """Replace the passengers (same count only); returns the reservation as JSON. No charge.

    Errors: ``invalid_argument`` (a passenger object the model cannot take); ``not_found``
    ``Reservation <id> not found``; ``invalid_argument`` ``Number of passengers does not match``.
    Writes ``/reservations/{reservation_id}``.
    """
    passengers = [validated("Passenger", p, shapes.PASSENGER_ARG) for p in args["passengers"]]
    rid = args["reservation_id"]
    reservation = get_or_fail(db["reservations"], rid, f"Reservation {rid} not found")
    if len(passengers) != len(reservation["passengers"]):
        raise ToolFailure("invalid_argument", "Number of passengers does not match")
    reservation["passengers"] = passengers
    return ok(reservation, shapes.RESERVATION)
