"""Every tool's error paths (error_type and message), on the real eva_airline table and DB 1.1.2.

Scenario 1.1.2: reservation ZK3FFW (one passenger PAX001, last name Rodriguez, main_cabin),
booked on FL_SK621_20260320 (one segment SK621); FL_SK703_20260325 is a bookable alternative.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine.core.dbhash import db_hash
from engine.core.model import Scenario
from engine.core.toolruntime import ToolRuntime
from engine.domains.registry import plugins
from engine.spec.loader import load_domain
from tests.conftest import SPEC_DIR

CONF, OLD, NEW = "ZK3FFW", "FL_SK621_20260320", "FL_SK703_20260325"
Tweak = Callable[[dict[str, Any]], None]


@pytest.fixture(scope="module")
def scenario(data_root: Path) -> Scenario:
    loaded = load_domain(SPEC_DIR, data_root, plugins=plugins())
    return next(s for s in loaded.scenarios if s.record_id == "1.1.2")


def _rebook(**over: Any) -> dict[str, Any]:
    args = {
        "confirmation_number": CONF,
        "journey_id": OLD,
        "new_journey_id": NEW,
        "rebooking_type": "voluntary",
        "waive_change_fee": False,
    }
    return {**args, **over}


def _seat(**over: Any) -> dict[str, Any]:
    return {
        "confirmation_number": CONF,
        "passenger_id": "PAX001",
        "journey_id": OLD,
        "seat_preference": "window",
        **over,
    }


def _bags(**over: Any) -> dict[str, Any]:
    return {"confirmation_number": CONF, "journey_id": OLD, "num_bags": 2, **over}


def _meal(**over: Any) -> dict[str, Any]:
    return {
        "confirmation_number": CONF,
        "passenger_id": "PAX001",
        "journey_id": OLD,
        "meal_type": "vegan",
        **over,
    }


def _journey(jid: str, **fields: Any) -> Tweak:
    return lambda db: db["journeys"][jid].update(fields)


def _no_seats(jid: str, fare_class: str) -> Tweak:
    def tweak(db: dict[str, Any]) -> None:
        for seg in db["journeys"][jid]["segments"]:
            seg["available_seats"][fare_class] = 0

    return tweak


def _business_booking(db: dict[str, Any]) -> None:
    db["reservations"][CONF]["bookings"][0]["fare_class"] = "business"


def _two_segments(db: dict[str, Any]) -> None:
    segments = db["reservations"][CONF]["bookings"][0]["segments"]
    segments.append({**segments[0], "flight_number": "SK999"})


# (tool, arguments, error_type, message fragment, DB tweak before the call)
CASES: list[tuple[str, dict[str, Any], str, str, Tweak | None]] = [
    (
        "get_reservation",
        {"confirmation_number": "ABC", "last_name": "x"},
        "invalid_confirmation_number_format",
        "Invalid confirmation_number 'ABC': must be 6 alphanumeric characters",
        None,
    ),
    (
        "get_reservation",
        {"confirmation_number": "QQQQQQ", "last_name": "x"},
        "not_found",
        "Reservation QQQQQQ not found",
        None,
    ),
    (
        "get_reservation",
        {"confirmation_number": "zk3ffw", "last_name": "Smith"},
        "authentication_failed",
        "Last name does not match reservation ZK3FFW",
        None,
    ),
    (
        "get_reservation",
        {"confirmation_number": CONF},
        "invalid_parameter",
        "Invalid or missing parameter 'last_name': Field required",
        None,
    ),
    (
        "get_flight_status",
        {"flight_number": "SK621", "flight_date": "2026-03-21"},
        "not_found",
        "Flight SK621 not found for date 2026-03-21",
        None,
    ),
    (
        "get_flight_status",
        {"flight_number": "621", "flight_date": "2026-03-20"},
        "invalid_flight_number_format",
        "Invalid flight_number '621': must be 2-3 letters followed by 1-4 digits (e.g. SK621)",
        None,
    ),
    (
        "get_flight_status",
        {"flight_number": "SK621", "flight_date": "03/20/2026"},
        "invalid_date_format",
        "Invalid flight_date '03/20/2026': must be YYYY-MM-DD",
        None,
    ),
    (
        "get_disruption_info",
        {"flight_number": "SK621", "date": "2026-03-20"},
        "not_found",
        "No disruption info found for flight SK621",
        None,
    ),
    (
        "search_rebooking_options",
        {
            "origin": "AUS",
            "destination": "LAX",
            "date": "2026-03-25",
            "passenger_count": 1,
            "fare_class": "Main_Cabin",
        },
        "invalid_fare_class",
        "Invalid fare_class 'Main_Cabin'",
        None,
    ),
    (
        "search_rebooking_options",
        {
            "origin": "AUSTIN",
            "destination": "LAX",
            "date": "2026-03-25",
            "passenger_count": 1,
            "fare_class": "any",
        },
        "invalid_airport_code_format",
        "Invalid origin 'AUSTIN': must be 3-letter airport code (e.g. JFK)",
        None,
    ),
    (
        "search_rebooking_options",
        {
            "origin": "AUS",
            "destination": "LAX",
            "date": "2026-03-25",
            "passenger_count": 0,
            "fare_class": "any",
        },
        "invalid_parameter",
        "Invalid or missing parameter 'passenger_count': Input should be greater than or equal to 1",
        None,
    ),
    (
        "rebook_flight",
        _rebook(confirmation_number="QQQQQQ"),
        "not_found",
        "Reservation QQQQQQ not found",
        None,
    ),
    (
        "rebook_flight",
        _rebook(journey_id="FL_SK1_20260320"),
        "journey_not_found",
        "Journey FL_SK1_20260320 not found in reservation",
        None,
    ),
    (
        "rebook_flight",
        _rebook(new_journey_id="FL_SK1_20260325"),
        "flight_not_found",
        "Flight FL_SK1_20260325 not found",
        None,
    ),
    (
        "rebook_flight",
        _rebook(),
        "not_bookable",
        f"Flight {NEW} is not available for booking",
        _journey(NEW, bookable=False),
    ),
    (
        "rebook_flight",
        _rebook(flight_number="SK1"),
        "flight_not_found",
        f"Flight SK1 not found in journey {OLD}",
        None,
    ),
    (
        "rebook_flight",
        _rebook(new_fare_class="first"),
        "fare_class_not_available",
        f"Fare class 'first' is not available on flight {NEW}",
        None,
    ),
    (
        "rebook_flight",
        _rebook(),
        "no_seats_available",
        f"No seats available in main_cabin on flight {NEW}",
        _no_seats(NEW, "main_cabin"),
    ),
    (
        "rebook_flight",
        _rebook(rebooking_type="Voluntary"),
        "invalid_rebooking_type",
        "Invalid rebooking_type 'Voluntary': Input should be 'voluntary', 'same_day'",
        None,
    ),
    (
        "rebook_flight",
        _rebook(new_journey_id="SK703"),
        "invalid_journey_id_format",
        "Invalid new_journey_id 'SK703': must be FL_<flight>_<YYYYMMDD> (e.g. FL_SK621_20260320)",
        None,
    ),
    (
        "rebook_flight",
        _rebook(waive_change_fee="maybe"),
        "invalid_parameter",
        "Invalid or missing parameter 'waive_change_fee': Input should be a valid boolean, unable to",
        None,
    ),
    (
        "rebook_flight",
        _rebook(flight_number="123"),
        "invalid_flight_number_format",
        "Invalid flight_number '123': String should match pattern",
        None,
    ),
    (
        "cancel_reservation",
        {"confirmation_number": CONF, "journey_id": OLD, "cancellation_reason": "voluntary"},
        "already_cancelled",
        f"Journey {OLD} is already cancelled",
        lambda db: db["reservations"][CONF]["bookings"][0].update(status="cancelled"),
    ),
    (
        "cancel_reservation",
        {"confirmation_number": CONF, "journey_id": NEW, "cancellation_reason": "voluntary"},
        "journey_not_found",
        f"Journey {NEW} not found in reservation",
        None,
    ),
    (
        "cancel_reservation",
        {"confirmation_number": CONF, "journey_id": OLD, "cancellation_reason": "changed_mind"},
        "invalid_cancellation_reason",
        "Invalid cancellation_reason 'changed_mind'",
        None,
    ),
    (
        "process_refund",
        {"confirmation_number": "QQQQQQ", "refund_amount": 10, "refund_type": "full_fare"},
        "not_found",
        "Reservation QQQQQQ not found",
        None,
    ),
    (
        "process_refund",
        {"confirmation_number": CONF, "refund_amount": 0, "refund_type": "full_fare"},
        "invalid_parameter",
        "Invalid or missing parameter 'refund_amount': Input should be greater than 0",
        None,
    ),
    (
        "process_refund",
        {"confirmation_number": CONF, "refund_amount": 10, "refund_type": "cash"},
        "invalid_refund_type",
        "Invalid refund_type 'cash'",
        None,
    ),
    (
        "assign_seat",
        _seat(seat_preference="middle"),
        "seat_type_unavailable",
        "No middle seats available in business on this flight. Available types: window, aisle",
        _business_booking,
    ),
    (
        "assign_seat",
        _seat(),
        "no_seats_available",
        "No seats available in main_cabin fare class",
        _no_seats(OLD, "main_cabin"),
    ),
    (
        "assign_seat",
        _seat(journey_id=NEW),
        "journey_not_found",
        f"Journey {NEW} not found in reservation",
        None,
    ),
    (
        "assign_seat",
        _seat(seat_preference="exit_row"),
        "invalid_seat_preference",
        "Invalid seat_preference 'exit_row'",
        None,
    ),
    (
        "assign_seat",
        _seat(passenger_id="001"),
        "invalid_passenger_id_format",
        "Invalid passenger_id '001': must be PAX<digits> (e.g. PAX001)",
        None,
    ),
    (
        "add_baggage_allowance",
        _bags(num_bags=6),
        "invalid_bag_count",
        "Invalid num_bags '6': Input should be less than or equal to 5",
        None,
    ),
    (
        "add_baggage_allowance",
        _bags(flight_number="XX999"),
        "flight_not_found",
        f"Flight XX999 not found in journey {OLD}",
        None,
    ),
    ("add_meal_request", _meal(meal_type="Vegan"), "invalid_meal_type", "Invalid meal_type 'Vegan'", None),
    (
        "add_meal_request",
        _meal(confirmation_number="QQQQQQ"),
        "not_found",
        "Reservation QQQQQQ not found",
        None,
    ),
    (
        "add_to_standby",
        {"confirmation_number": CONF, "journey_id": "FL_SK1_20260325", "passenger_ids": ["PAX001"]},
        "flight_not_found",
        "Flight FL_SK1_20260325 not found",
        None,
    ),
    (
        "add_to_standby",
        {"confirmation_number": CONF, "journey_id": NEW, "passenger_ids": ["PAX001"]},
        "flight_cancelled",
        "Cannot add to standby for cancelled flight",
        _journey(NEW, status="cancelled"),
    ),
    (
        "add_to_standby",
        {"confirmation_number": CONF, "journey_id": NEW, "passenger_ids": ["PAX001", "PAX009"]},
        "invalid_passengers",
        "Unknown passenger ID(s): PAX009",
        None,
    ),
    (
        "add_to_standby",
        {"confirmation_number": CONF, "journey_id": NEW, "passenger_ids": ["PAX001", "X2"]},
        "invalid_passenger_id_format",
        "Invalid passenger_ids 'X2': String should match pattern",
        None,
    ),
    (
        "issue_travel_credit",
        {
            "confirmation_number": "QQQQQQ",
            "passenger_id": "PAX001",
            "amount": 50,
            "credit_reason": "goodwill",
        },
        "not_found",
        "Reservation QQQQQQ not found",
        None,
    ),
    (
        "issue_travel_credit",
        {"confirmation_number": CONF, "passenger_id": "PAX001", "amount": -5, "credit_reason": "goodwill"},
        "invalid_parameter",
        "Invalid or missing parameter 'amount'",
        None,
    ),
    (
        "issue_travel_credit",
        {"confirmation_number": CONF, "passenger_id": "PAX001", "amount": 5, "credit_reason": "because"},
        "invalid_credit_reason",
        "Invalid credit_reason 'because'",
        None,
    ),
    (
        "issue_hotel_voucher",
        {"confirmation_number": CONF, "passenger_id": "PAX001", "num_nights": 4},
        "exceeds_authority",
        "Hotel vouchers can be issued for maximum of 3 nights",
        None,
    ),
    (
        "issue_hotel_voucher",
        {"confirmation_number": CONF, "passenger_id": "PAX001", "num_nights": 0},
        "invalid_parameter",
        "Invalid or missing parameter 'num_nights'",
        None,
    ),
    (
        "issue_meal_voucher",
        {"confirmation_number": CONF, "passenger_id": "PAX001", "voucher_reason": "hungry"},
        "invalid_voucher_reason",
        "Invalid voucher_reason 'hungry'",
        None,
    ),
    (
        "issue_meal_voucher",
        {"confirmation_number": "QQQQQQ", "passenger_id": "PAX001", "voucher_reason": "irrops_overnight"},
        "not_found",
        "Reservation QQQQQQ not found",
        None,
    ),
    (
        "transfer_to_agent",
        {"confirmation_number": "QQQQQQ", "transfer_reason": "x", "issue_summary": "y"},
        "not_found",
        "Reservation QQQQQQ not found",
        None,
    ),
    (
        "transfer_to_agent",
        {"confirmation_number": CONF, "issue_summary": "y"},
        "invalid_parameter",
        "Invalid or missing parameter 'transfer_reason': Field required",
        None,
    ),
]


@pytest.mark.parametrize(
    ("tool", "args", "error_type", "message", "tweak"),
    CASES,
    ids=[f"{c[0]}-{c[2]}" for c in CASES],
)
def test_error_path(
    scenario: Scenario, tool: str, args: dict[str, Any], error_type: str, message: str, tweak: Tweak | None
) -> None:
    db = scenario.fresh_db()
    if tweak:
        tweak(db)
    before = db_hash(db, scenario.domain.hash_rules)
    runtime = ToolRuntime(scenario.tools, db)
    outcome = runtime.call(tool, args)
    assert outcome.result["status"] == "error"
    assert outcome.result["error_type"] == error_type, outcome.result
    assert message in outcome.result["message"]
    assert outcome.action is None and outcome.ended is None and runtime.actions == []
    assert "session" not in db and db_hash(db, scenario.domain.hash_rules) == before


def test_every_tool_has_an_error_case(scenario: Scenario) -> None:
    covered = {c[0] for c in CASES}
    assert set(scenario.tools.names) - covered == {"end_conversation"}


def test_missing_format_field_shows_the_whole_arguments(scenario: Scenario) -> None:
    result = (
        ToolRuntime(scenario.tools, scenario.fresh_db()).call("get_reservation", {"last_name": "x"}).result
    )
    assert result == {
        "status": "error",
        "error_type": "invalid_confirmation_number_format",
        "message": "Invalid confirmation_number '{'last_name': 'x'}': must be 6 alphanumeric characters",
    }


def test_flight_number_required_on_a_multi_segment_booking(scenario: Scenario) -> None:
    db = scenario.fresh_db()
    _two_segments(db)
    result = ToolRuntime(scenario.tools, db).call("assign_seat", _seat()).result
    assert result["error_type"] == "flight_number_required"
    assert result["message"] == f"Journey {OLD} has 2 segments; flight_number is required"


# --- moved from tests/unit/tools/test_runtime.py (the mock shop's versions stay there) --------------
# eva's field rules echo a value back in their message; its declared writes are the rollback path.


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("get_reservation", {"confirmation_number": "A" * 1_000_000, "last_name": "Rodriguez"}),
        ("get_reservation", {"last_name": "B" * 1_000_000}),
    ],
    ids=["bad_value", "missing_with_huge_other"],
)
def test_huge_values_are_not_echoed_by_the_field_rules(
    scenario: Scenario, name: str, arguments: dict
) -> None:
    outcome = ToolRuntime(scenario.tools, scenario.fresh_db()).call(name, arguments)
    assert outcome.result["status"] == "error"
    assert len(outcome.result["message"]) < 1000
    assert "chars)" in outcome.result["message"]


def test_handler_that_raises_rolls_back(scenario: Scenario) -> None:
    def half_write(db: dict[str, Any], args: Any, ctx: Any) -> dict[str, Any]:
        db["reservations"][CONF]["status"] = "changed"
        db["hotel_vouchers"] = {"x": 1}
        raise RuntimeError("boom")

    db = scenario.fresh_db()
    before = db_hash(db, scenario.domain.hash_rules)
    runtime = ToolRuntime(scenario.tools, db, handlers={"rebook_flight": half_write})
    outcome = runtime.call("rebook_flight", _rebook())
    assert outcome.result == {
        "status": "error",
        "error_type": "execution_error",
        "message": "Tool execution failed: boom",
    }
    assert runtime.db is db and "hotel_vouchers" not in db
    assert db_hash(db, scenario.domain.hash_rules) == before and runtime.actions == []


def test_handler_that_writes_then_returns_an_error_rolls_back(scenario: Scenario) -> None:
    # an error result never half-applies, whether the handler raised or returned it
    def write_then_refuse(db: dict[str, Any], args: Any, ctx: Any) -> dict[str, Any]:
        db["reservations"][CONF]["status"] = "changed"
        return {"status": "error", "error_type": "not_allowed", "message": "refused after writing"}

    db = scenario.fresh_db()
    before = db_hash(db, scenario.domain.hash_rules)
    runtime = ToolRuntime(scenario.tools, db, handlers={"rebook_flight": write_then_refuse})
    outcome = runtime.call("rebook_flight", _rebook())
    assert outcome.result["error_type"] == "not_allowed" and outcome.action is None
    assert runtime.db is db and db_hash(db, scenario.domain.hash_rules) == before and runtime.actions == []
