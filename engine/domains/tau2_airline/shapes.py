"""Record layouts and null defaults of tau2's airline DB (mirrors tau2 17e07b1 airline data models).

The JSON file keeps flights and reservation legs as ``origin, destination, flight_number, ...``;
tau2 shows them in model order (``flight_number, origin, destination, ...``) and adds a null
``status`` to every reservation that has none.
"""

from __future__ import annotations

from engine.domains.tau2_common.shapes import ListOf, MapOf, Tagged, model

#: Fields tau2's airline models hold as null when the DB leaves them out (for the tau2 hash).
NULL_DEFAULTS: dict[str, dict[str, None]] = {
    "/reservations/*": {"status": None},
    "/users/*/address": {"address2": None},
}

NAME = model("first_name", "last_name")
ADDRESS = model("address1", "address2", "city", "country", "state", "zip", nullable=("address2",))
PASSENGER = model("first_name", "last_name", "dob")
PAYMENT = model("payment_id", "amount")
PAYMENT_METHOD = Tagged(
    "source",
    {
        "credit_card": model("source", "id", "brand", "last_four"),
        "gift_card": model("source", "id", "amount"),
        "certificate": model("source", "id", "amount"),
    },
)
USER = model(
    "user_id",
    ("name", NAME),
    ("address", ADDRESS),
    "email",
    "dob",
    ("payment_methods", MapOf(PAYMENT_METHOD)),
    ("saved_passengers", ListOf(PASSENGER)),
    "membership",
    "reservations",
)
RESERVATION_FLIGHT = model("flight_number", "origin", "destination", "date", "price")
RESERVATION = model(
    "reservation_id",
    "user_id",
    "origin",
    "destination",
    "flight_type",
    "cabin",
    ("flights", ListOf(RESERVATION_FLIGHT)),
    ("passengers", ListOf(PASSENGER)),
    ("payment_history", ListOf(PAYMENT)),
    "created_at",
    "total_baggages",
    "nonfree_baggages",
    "insurance",
    "status",
    nullable=("status",),
)
FLIGHT_DATE = Tagged(
    "status",
    {
        "available": model("status", "available_seats", "prices"),
        "landed": model("status", "actual_departure_time_est", "actual_arrival_time_est"),
        "cancelled": model("status"),
        "delayed": model("status", "estimated_departure_time_est", "estimated_arrival_time_est"),
        "flying": model("status", "actual_departure_time_est", "estimated_arrival_time_est"),
        "on time": model("status", "estimated_departure_time_est", "estimated_arrival_time_est"),
    },
)
FLIGHT = model(
    "flight_number",
    "origin",
    "destination",
    "scheduled_departure_time_est",
    "scheduled_arrival_time_est",
    ("dates", MapOf(FLIGHT_DATE)),
)
#: A search result (tau2's DirectFlight): one flight on one date.
DIRECT_FLIGHT = model(
    "flight_number",
    "origin",
    "destination",
    "status",
    "scheduled_departure_time_est",
    "scheduled_arrival_time_est",
    "date",
    "available_seats",
    "prices",
    nullable=("date",),
)
DIRECT_FLIGHT_LIST = ListOf(DIRECT_FLIGHT)
DIRECT_FLIGHT_PAIRS = ListOf(ListOf(DIRECT_FLIGHT))
AIRPORT = model("iata", "city")
DB = model(("flights", MapOf(FLIGHT)), ("users", MapOf(USER)), ("reservations", MapOf(RESERVATION)))

#: Nested argument objects as tau2's models take them: (field, "str" | "int") in model order.
FLIGHT_INFO_ARG = (("flight_number", "str"), ("date", "str"))
PASSENGER_ARG = (("first_name", "str"), ("last_name", "str"), ("dob", "str"))
PAYMENT_ARG = (("payment_id", "str"), ("amount", "int"))
