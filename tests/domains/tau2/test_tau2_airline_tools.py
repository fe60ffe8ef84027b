"""tau2 airline handlers one by one on the real DB: success texts, every error text, and the
upstream quirks that change an end state. Expected texts are tau2 17e07b1's (its tool code)."""

from __future__ import annotations

import json
import re
import warnings
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.domains.tau2_common import Session
from engine.domains.tau2_common.generic import evaluate
from tests.domains.tau2.conftest import Tau2Domain, run

MEI = "mei_hernandez_8984"  # gift card 98.0, two credit cards, two 250.0 certificates
RAJ = "raj_sanchez_7340"  # owns Q69X3R: economy, 1 passenger, paid 430 by gift_card_3226531 (50.0 left)


@pytest.fixture()
def airline(tau2: dict[str, Tau2Domain]) -> Tau2Domain:
    return tau2["airline"]


def _booking(**changes: Any) -> dict[str, Any]:
    """A valid booking for MEI: HAT002 on 2024-05-20, economy (175), 2 passengers, insurance,
    1 paid bag: 175*2 + 30*2 + 50 = 460 = certificate 250 + gift card 98 + credit card 112."""
    args: dict[str, Any] = {
        "user_id": MEI,
        "origin": "LGA",
        "destination": "PHX",
        "flight_type": "one_way",
        "cabin": "economy",
        "flights": [{"flight_number": "HAT002", "date": "2024-05-20"}],
        "passengers": [
            {"first_name": "Mei", "last_name": "Hernandez", "dob": "1981-01-01"},
            {"first_name": "Ana", "last_name": "Lee", "dob": "1990-02-02"},
        ],
        "payment_methods": [
            {"payment_id": "certificate_7502997", "amount": 250},
            {"payment_id": "gift_card_5309492", "amount": 98},
            {"payment_id": "credit_card_2140654", "amount": 112},
        ],
        "total_baggages": 2,
        "nonfree_baggages": 1,
        "insurance": "yes",
    }
    args.update(changes)
    return args


def test_reads_and_their_not_found_texts(airline: Tau2Domain) -> None:
    s = Session(airline.db)
    assert run(s, airline, "get_user_details", user_id="nobody") == (True, "Error: User nobody not found")
    assert run(s, airline, "get_reservation_details", reservation_id="ZZZZZZ") == (
        True,
        "Error: Reservation ZZZZZZ not found",
    )
    assert run(s, airline, "get_flight_status", flight_number="HAT001", date="2024-05-01") == (
        False,
        "landed",
    )
    assert run(s, airline, "get_flight_status", flight_number="HAT999", date="2024-05-01") == (
        True,
        "Error: Flight HAT999 not found",
    )
    assert run(s, airline, "get_flight_status", flight_number="HAT001", date="2024-06-30") == (
        True,
        "Error: Flight HAT001 not found on date 2024-06-30",
    )
    assert run(s, airline, "search_direct_flight", origin="XXX", destination="JFK", date="2024-05-20") == (
        False,
        "[]",
    )
    _, text = run(s, airline, "list_all_airports")
    airports = json.loads(text)
    assert len(airports) == 20 and airports[0] == {"iata": "SFO", "city": "San Francisco"}
    _, text = run(s, airline, "get_reservation_details", reservation_id="Q69X3R")
    shown = json.loads(text)
    assert list(shown["flights"][0]) == ["flight_number", "origin", "destination", "date", "price"]
    assert list(shown)[-1] == "status" and shown["status"] is None


def test_book_reservation_takes_seats_money_and_certificates(airline: Tau2Domain) -> None:
    s = Session(airline.db)
    failed, text = run(s, airline, "book_reservation", **_booking())
    assert not failed
    shown = json.loads(text)
    assert shown["reservation_id"] == "HATHAT" and shown["created_at"] == "2024-05-15T15:00:00"
    assert shown["flights"] == [
        {"flight_number": "HAT002", "origin": "LGA", "destination": "PHX", "date": "2024-05-20", "price": 175}
    ]
    user = s.db["users"][MEI]
    assert user["reservations"][-1] == "HATHAT" and "certificate_7502997" not in user["payment_methods"]
    assert "certificate_3321326" in user["payment_methods"]
    assert user["payment_methods"]["gift_card_5309492"]["amount"] == 0.0
    assert s.db["flights"]["HAT002"]["dates"]["2024-05-20"]["available_seats"]["economy"] == 10
    assert airline.db["flights"]["HAT002"]["dates"]["2024-05-20"]["available_seats"]["economy"] == 12
    card_only = {"payment_methods": [{"payment_id": "credit_card_2140654", "amount": 460}]}
    assert (
        json.loads(run(s, airline, "book_reservation", **_booking(**card_only))[1])["reservation_id"]
        == "HATHAU"
    )
    assert (
        json.loads(run(s, airline, "book_reservation", **_booking(**card_only))[1])["reservation_id"]
        == "HATHAV"
    )
    assert run(s, airline, "book_reservation", **_booking(**card_only)) == (
        True,
        "Error: Too many reservations",
    )


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"user_id": "nobody"}, "User nobody not found"),
        ({"flights": [{"flight_number": "HAT999", "date": "2024-05-20"}]}, "Flight HAT999 not found"),
        (
            {"flights": [{"flight_number": "HAT002", "date": "2024-07-01"}]},
            "Flight HAT002 not found on date 2024-07-01",
        ),
        (
            {"flights": [{"flight_number": "HAT001", "date": "2024-05-01"}]},
            "Flight HAT001 not available on date 2024-05-01",
        ),
        (
            {"cabin": "business", "flights": [{"flight_number": "HAT004", "date": "2024-05-20"}]},
            "Not enough seats on flight HAT004",
        ),
        (
            {"payment_methods": [{"payment_id": "credit_card_0000000", "amount": 460}]},
            "Payment method credit_card_0000000 not found",
        ),
        (
            {"payment_methods": [{"payment_id": "gift_card_5309492", "amount": 99}]},
            "Not enough balance in payment method gift_card_5309492",
        ),
        (
            {"payment_methods": [{"payment_id": "credit_card_2140654", "amount": 448}]},
            "Payment amount does not add up, total price is 460, but paid 448",
        ),
        (
            {"passengers": [{"first_name": "Mei", "last_name": "Hernandez"}]},
            "1 validation error for Passenger\ndob\n  Field required [type=missing, input_value="
            "{'first_name': 'Mei', 'last_name': 'Hernandez'}, input_type=dict]\n"
            "    For further information visit https://errors.pydantic.dev/2.12/v/missing",
        ),
        (
            {"payment_methods": [{"payment_id": "credit_card_2140654", "amount": 1.5}]},
            "1 validation error for Payment\namount\n  Input should be a valid integer, got a number with a "
            "fractional part [type=int_from_float, input_value=1.5, input_type=float]\n    For further "
            "information visit https://errors.pydantic.dev/2.12/v/int_from_float",
        ),
    ],
)
def test_book_reservation_errors_change_nothing(
    airline: Tau2Domain, changes: dict[str, Any], message: str
) -> None:
    s = Session(airline.db)
    before = dict(s.db)
    assert run(s, airline, "book_reservation", **_booking(**changes)) == (True, f"Error: {message}")
    assert all(s.db[k] is before[k] for k in before) and s.db.keys() == before.keys()


def test_cancel_releases_no_seat_and_credits_no_card(airline: Tau2Domain) -> None:
    s = Session(airline.db)
    assert run(s, airline, "cancel_reservation", reservation_id="NOPE00") == (
        True,
        "Error: Reservation NOPE00 not found",
    )
    shown = json.loads(run(s, airline, "cancel_reservation", reservation_id="Q69X3R")[1])
    assert shown["status"] == "cancelled"
    assert shown["payment_history"] == [
        {"payment_id": "gift_card_3226531", "amount": 430},
        {"payment_id": "gift_card_3226531", "amount": -430},
    ]
    assert s.db["users"][RAJ]["payment_methods"]["gift_card_3226531"]["amount"] == 50.0
    assert s.db["flights"]["HAT243"]["dates"]["2024-05-20"]["available_seats"]["economy"] == 20
    again = json.loads(run(s, airline, "cancel_reservation", reservation_id="Q69X3R")[1])
    assert [p["amount"] for p in again["payment_history"]] == [430, -430, -430, 430]


def test_send_certificate_mints_three_ids_with_float_amounts(airline: Tau2Domain) -> None:
    s = Session(airline.db)
    assert run(s, airline, "send_certificate", user_id="nobody", amount=50) == (
        True,
        "Error: User nobody not found",
    )
    for suffix in ("322", "323", "324"):
        assert run(s, airline, "send_certificate", user_id=RAJ, amount=100) == (
            False,
            f"Certificate certificate_3221{suffix} added to user {RAJ} with amount 100.",
        )
    stored = s.db["users"][RAJ]["payment_methods"]["certificate_3221322"]
    assert stored == {"source": "certificate", "id": "certificate_3221322", "amount": 100.0}
    assert isinstance(stored["amount"], float)
    assert run(s, airline, "send_certificate", user_id=RAJ, amount=100) == (
        True,
        "Error: Too many certificates",
    )


def test_update_baggages_charges_added_paid_bags_only(airline: Tau2Domain) -> None:
    s = Session(airline.db)

    def bags(total: int, nonfree: int, payment_id: str) -> tuple[bool, str]:
        return run(
            s,
            airline,
            "update_reservation_baggages",
            reservation_id="Q69X3R",
            total_baggages=total,
            nonfree_baggages=nonfree,
            payment_id=payment_id,
        )

    assert bags(0, 0, "certificate_4594761") == (
        True,
        "Error: Certificate cannot be used to update reservation",
    )
    assert bags(2, 2, "gift_card_3226531") == (True, "Error: Gift card balance is not enough")
    assert bags(2, 2, "paypal_1") == (True, "Error: Payment method not found")
    shown = json.loads(bags(2, 1, "gift_card_3226531")[1])
    assert shown["payment_history"][-1] == {"payment_id": "gift_card_3226531", "amount": 50}
    assert s.db["users"][RAJ]["payment_methods"]["gift_card_3226531"]["amount"] == 0.0
    shown = json.loads(bags(0, 0, "credit_card_7891819")[1])
    assert len(shown["payment_history"]) == 2 and (shown["total_baggages"], shown["nonfree_baggages"]) == (
        0,
        0,
    )


def test_update_flights_reprices_on_cabin_change_and_moves_no_seat(airline: Tau2Domain) -> None:
    same = [
        {"flight_number": f, "date": d}
        for f, d in (("HAT243", "2024-05-20"), ("HAT024", "2024-05-20"), ("HAT206", "2024-05-23"))
    ]

    def change(s: Session, cabin: str, flights: list[dict[str, str]], payment_id: str) -> tuple[bool, str]:
        return run(
            s,
            airline,
            "update_reservation_flights",
            reservation_id="Q69X3R",
            cabin=cabin,
            flights=flights,
            payment_id=payment_id,
        )

    s = Session(airline.db)
    kept = json.loads(change(s, "economy", same, "credit_card_7891819")[1])
    assert [f["price"] for f in kept["flights"]] == [166, 162, 102] and len(kept["payment_history"]) == 1
    up = json.loads(change(Session(airline.db), "business", same, "credit_card_7891819")[1])
    assert up["cabin"] == "business" and [f["price"] for f in up["flights"]] == [399, 381, 246]
    assert up["payment_history"][-1] == {"payment_id": "credit_card_7891819", "amount": 399 + 381 + 246 - 430}
    assert change(Session(airline.db), "basic_economy", same, "credit_card_7891819") == (
        True,
        "Error: Not enough seats on flight HAT024",
    )
    assert change(
        Session(airline.db),
        "economy",
        [{"flight_number": "HAT001", "date": "2024-05-01"}],
        "credit_card_7891819",
    ) == (True, "Error: Flight HAT001 not available on date 2024-05-01")
    s = Session(airline.db)
    down = json.loads(change(s, "basic_economy", [same[0], same[2]], "gift_card_4964153")[1])
    assert down["payment_history"][-1] == {"payment_id": "gift_card_4964153", "amount": 60 + 57 - 430}
    assert s.db["users"][RAJ]["payment_methods"]["gift_card_4964153"]["amount"] == 163.0 + 313
    assert s.db["flights"]["HAT243"] is airline.db["flights"]["HAT243"]


def test_update_passengers_keeps_the_count(airline: Tau2Domain) -> None:
    s = Session(airline.db)
    two = [{"first_name": "A", "last_name": "B", "dob": "2000-01-01"}] * 2
    assert run(s, airline, "update_reservation_passengers", reservation_id="Q69X3R", passengers=two) == (
        True,
        "Error: Number of passengers does not match",
    )
    one = [{"first_name": "A", "last_name": "B", "dob": "2000-01-01", "gender": "x"}]
    shown = json.loads(
        run(s, airline, "update_reservation_passengers", reservation_id="Q69X3R", passengers=one)[1]
    )
    assert shown["passengers"] == [{"first_name": "A", "last_name": "B", "dob": "2000-01-01"}]


def test_onestop_search_follows_tau2s_next_day_rule(airline: Tau2Domain) -> None:
    date = "2024-05-20"
    _, text = run(
        Session(airline.db), airline, "search_onestop_flight", origin="LGA", destination="SEA", date=date
    )
    pairs = json.loads(text)
    expected = set()
    for first in airline.db["flights"].values():
        if first["origin"] != "LGA" or first["dates"].get(date, {}).get("status") != "available":
            continue
        arrival = first["scheduled_arrival_time_est"]
        day2 = f"2024-05-{int(date[-2:]) + 1}" if "+1" in arrival else date
        for second in airline.db["flights"].values():
            if (
                (second["origin"], second["destination"]) == (first["destination"], "SEA")
                and second["dates"].get(day2, {}).get("status") == "available"
                and second["scheduled_departure_time_est"] >= arrival
            ):
                expected.add((first["flight_number"], date, second["flight_number"], day2))
    got = {(a["flight_number"], a["date"], b["flight_number"], b["date"]) for a, b in pairs}
    assert got == expected and any(d2 != date for *_, d2 in got)


@pytest.mark.parametrize(
    ("expression", "shown"),
    [
        ("2+2", (False, "4.0")),
        ("10/3", (False, "3.33")),
        (" (1 + 2) * 3", (False, "9.0")),
        ("2+x", (True, "Error: Invalid characters in expression")),
        ("1/0", (True, "Error: division by zero")),
        ("2+", (True, "Error: invalid syntax (<string>, line 1)")),
    ],
)
def test_calculate(airline: Tau2Domain, expression: str, shown: tuple[bool, str]) -> None:
    assert run(Session(airline.db), airline, "calculate", expression=expression) == shown


def _python_eval(expression: str) -> str:
    """What tau2 computes (Python's eval of the arithmetic), as its text or its error text."""
    try:
        with warnings.catch_warnings():  # e.g. "(1)(2)": 'int' object is not callable
            warnings.simplefilter("ignore")
            return str(round(float(eval(expression, {"__builtins__": None}, {})), 2))
    except Exception as exc:  # any Python error is tau2's error text
        return f"Error: {exc}"


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet="0123456789+-*/(). ", max_size=14).filter(
        # "**" is refused past 100,000; "2(3)" / "0(*0)" are calls, whose error texts Python
        # words per argument kind: only the error flag is compared for them (test below)
        lambda s: "**" not in s and not re.search(r"[0-9).]\s*\(", s)
    )
)
def test_calculate_agrees_with_python_eval(expression: str) -> None:
    try:
        ours = evaluate(expression)
    except Exception as exc:
        ours = f"Error: {exc}"
    assert ours == _python_eval(expression)


def test_transfer(airline: Tau2Domain) -> None:
    assert run(Session(airline.db), airline, "transfer_to_human_agents", summary="x") == (
        False,
        "Transfer successful",
    )
    assert airline.package.ENDS_CALL == {"transfer_to_human_agents": "transfer"}


@settings(max_examples=100, deadline=None)
@given(st.from_regex(r"[0-9]{1,3} ?\(\*?[0-9]{0,2}\)", fullmatch=True))
def test_calculate_refuses_calls_like_python(expression: str) -> None:
    try:
        ours = evaluate(expression)
    except Exception as exc:
        ours = f"Error: {exc}"
    assert ours.startswith("Error: ") and _python_eval(expression).startswith("Error: ")
