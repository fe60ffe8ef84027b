"""tau2 airline writes that create or end things: book_reservation, cancel_reservation, send_certificate.

Each handler is ``(db, args, ctx) -> result`` and mirrors the same-named tool of tau2 17e07b1's
airline toolkit, checks and quirks included (listed per handler and in
docs/domains/tau2_airline_retail.md). All checks run before the first change, except where noted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.core.tools.context import CallContext
from engine.core.tools.writeset import json_copy
from engine.domains.tau2_airline import shapes
from engine.domains.tau2_airline.read import flight_on
from engine.domains.tau2_common.coerce import as_float, as_int, validated
from engine.domains.tau2_common.results import ToolFailure, get_or_fail, ok, tau2_tool

#: tau2's clock: every booking is created at this time.
BOOKING_TIME = "2024-05-15T15:00:00"
#: The ids a new reservation gets, the first one not taken (tau2 assumes at most 3 per task).
NEW_RESERVATION_IDS = ("HATHAT", "HATHAU", "HATHAV")
#: The ids a new certificate gets, the first one the user does not hold.
NEW_CERTIFICATE_IDS = ("certificate_3221322", "certificate_3221323", "certificate_3221324")
INSURANCE_FEE = 30
BAG_FEE = 50


def _new_reservation_id(db: Mapping[str, Any]) -> str:
    for rid in NEW_RESERVATION_IDS:
        if rid not in db["reservations"]:
            return rid
    raise ToolFailure("limit_reached", "Too many reservations")


@tau2_tool
def book_reservation(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    """Create reservation ``HATHAT`` (else ``HATHAU``, ``HATHAV``) and return it as JSON.

    Price: each flight's ``cabin`` price on its date × passengers, + 30 per passenger with
    insurance, + 50 × ``nonfree_baggages``; the payments must add up to it exactly. Then gift cards
    are reduced by their amount (unrounded float), a used certificate is removed whatever its
    balance, each flight's ``available_seats[cabin]`` drops by the passenger count, and the id is
    appended to the user's ``reservations``. ``created_at`` is tau2's fixed clock, 2024-05-15T15:00:00.

    Errors, in tau2's order: ``invalid_argument`` (a flight/passenger/payment object the model
    cannot take, pydantic's text); ``not_found`` ``User <id> not found``; ``limit_reached`` ``Too
    many reservations``; per flight ``Flight <n> not found`` / ``... not found on date <d>``,
    ``unavailable`` ``Flight <n> not available on date <d>`` / ``Not enough seats on flight <n>``;
    ``not_found`` ``Payment method <id> not found``; ``payment`` ``Not enough balance in payment
    method <id>`` / ``Payment amount does not add up, total price is <p>, but paid <q>``.
    The same certificate listed twice fails after the first is removed (``'<id>'``, tau2's
    KeyError text; tau2 keeps the half-done payment, the engine rolls it back).
    Writes ``/users/{user_id}``, ``/reservations/-``, ``/flights/-`` (the flights it books are
    replaced by updated copies).
    """
    flights = [validated("FlightInfo", f, shapes.FLIGHT_INFO_ARG) for f in args["flights"]]
    passengers = [validated("Passenger", p, shapes.PASSENGER_ARG) for p in args["passengers"]]
    payments = [validated("Payment", p, shapes.PAYMENT_ARG) for p in args["payment_methods"]]
    user_id, cabin = args["user_id"], args["cabin"]
    user = get_or_fail(db["users"], user_id, f"User {user_id} not found")
    rid = _new_reservation_id(db)
    count = len(passengers)
    reservation: dict[str, Any] = {
        "reservation_id": rid,
        "user_id": user_id,
        "origin": args["origin"],
        "destination": args["destination"],
        "flight_type": args["flight_type"],
        "cabin": cabin,
        "flights": [],
        "passengers": [dict(p) for p in passengers],
        "payment_history": [dict(p) for p in payments],
        "created_at": BOOKING_TIME,
        "total_baggages": as_int(args["total_baggages"]),
        "nonfree_baggages": as_int(args["nonfree_baggages"]),
        "insurance": args["insurance"],
        "status": None,
    }
    total_price: Any = 0
    booked: list[tuple[str, str]] = []
    for info in flights:
        number, date = info["flight_number"], info["date"]
        flight, instance = flight_on(db, number, date)
        if instance.get("status") != "available":
            raise ToolFailure("unavailable", f"Flight {number} not available on date {date}")
        if instance["available_seats"][cabin] < count:
            raise ToolFailure("unavailable", f"Not enough seats on flight {number}")
        price = instance["prices"][cabin]
        reservation["flights"].append(
            {
                "flight_number": number,
                "origin": flight["origin"],
                "destination": flight["destination"],
                "date": date,
                "price": price,
            }
        )
        booked.append((number, date))
        total_price += price * count
    if args["insurance"] == "yes":
        total_price += INSURANCE_FEE * count
    total_price += BAG_FEE * args["nonfree_baggages"]

    methods = user["payment_methods"]
    for payment in payments:
        pid, amount = payment["payment_id"], payment["amount"]
        if pid not in methods:
            raise ToolFailure("not_found", f"Payment method {pid} not found")
        method = methods[pid]
        if method["source"] in ("gift_card", "certificate") and method["amount"] < amount:
            raise ToolFailure("payment", f"Not enough balance in payment method {pid}")
    total_payment = sum(p["amount"] for p in payments)
    if total_payment != total_price:
        raise ToolFailure(
            "payment",
            f"Payment amount does not add up, total price is {total_price}, but paid {total_payment}",
        )

    for payment in payments:
        pid = payment["payment_id"]
        if pid not in methods:
            raise ToolFailure("payment", repr(pid))
        if methods[pid]["source"] == "gift_card":
            methods[pid]["amount"] -= payment["amount"]
        elif methods[pid]["source"] == "certificate":
            del methods[pid]
    owned: dict[str, dict[str, Any]] = {}
    for number, date in booked:
        if number not in owned:
            owned[number] = json_copy(db["flights"][number])
            db["flights"][number] = owned[number]
        owned[number]["dates"][date]["available_seats"][cabin] -= count
    db["reservations"][rid] = reservation
    user["reservations"].append(rid)
    return ok(reservation, shapes.RESERVATION)


@tau2_tool
def cancel_reservation(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    """Cancel a reservation and return it as JSON.

    tau2's behaviour, kept: a refund entry (negated amount, same payment id) is appended for every
    entry of ``payment_history``, refunds of an earlier cancellation included; ``status`` becomes
    ``cancelled``; nothing else changes — no seat goes back to the flights, no gift card or
    certificate is credited, an already cancelled or flown reservation is cancelled again.
    Error ``not_found``: ``Reservation <id> not found``. Writes ``/reservations/{reservation_id}``.
    """
    rid = args["reservation_id"]
    reservation = get_or_fail(db["reservations"], rid, f"Reservation {rid} not found")
    refunds = [
        {"payment_id": p["payment_id"], "amount": as_int(-p["amount"])}
        for p in reservation["payment_history"]
    ]
    reservation["payment_history"].extend(refunds)
    reservation["status"] = "cancelled"
    return ok(reservation, shapes.RESERVATION)


@tau2_tool
def send_certificate(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    """Give the user a certificate ``certificate_3221322`` (else ``...323``, ``...324``) worth
    ``amount``; content ``Certificate <id> added to user <user> with amount <amount>.``

    The stored amount is a float (``150`` → ``150.0``), the text shows ``amount`` as given.
    Errors: ``not_found`` ``User <id> not found``; ``limit_reached`` ``Too many certificates``.
    Writes ``/users/{user_id}``.
    """
    user_id, amount = args["user_id"], args["amount"]
    user = get_or_fail(db["users"], user_id, f"User {user_id} not found")
    for pid in NEW_CERTIFICATE_IDS:
        if pid not in user["payment_methods"]:
            user["payment_methods"][pid] = {"source": "certificate", "id": pid, "amount": as_float(amount)}
            return ok(f"Certificate {pid} added to user {user_id} with amount {amount}.")
    raise ToolFailure("limit_reached", "Too many certificates")
