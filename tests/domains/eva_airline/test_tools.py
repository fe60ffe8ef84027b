"""ToolRuntime and handler behaviour on the real eva_airline table and DB 1.1.2 (ZK3FFW)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine.core.model import Scenario
from engine.core.toolruntime import ToolRuntime
from engine.domains.registry import plugins
from engine.spec.loader import load_domain
from tests.conftest import SPEC_DIR

CONF, OLD, NEW = "ZK3FFW", "FL_SK621_20260320", "FL_SK703_20260325"


@pytest.fixture(scope="module")
def scenario(data_root: Path) -> Scenario:
    loaded = load_domain(SPEC_DIR, data_root, plugins=plugins())
    return next(s for s in loaded.scenarios if s.record_id == "1.1.2")


@pytest.fixture
def rt(scenario: Scenario) -> ToolRuntime:
    return ToolRuntime(scenario.tools, scenario.fresh_db())


def _rebook(**over: Any) -> dict[str, Any]:
    return {
        "confirmation_number": CONF,
        "journey_id": OLD,
        "new_journey_id": NEW,
        "rebooking_type": "voluntary",
        "waive_change_fee": False,
        **over,
    }


def test_registry_covers_the_table(scenario: Scenario) -> None:
    bound = {t.handler for t in scenario.tools.tools}
    assert len(bound) == 16 and bound - {"end_conversation"} <= set(scenario.domain.plugin.handlers)
    assert all(t.run is not None for t in scenario.tools.tools)


def test_get_reservation_writes_session_and_enriches_segments(rt: ToolRuntime) -> None:
    out = rt.call("get_reservation", '{"confirmation_number": "zk3ffw", "last_name": "RODRIGUEZ"}')
    assert out.result["status"] == "success" and out.action is None
    segment = out.result["reservation"]["bookings"][0]["segments"][0]
    assert (segment["origin"], segment["destination"], segment["scheduled_departure"]) == (
        "AUS",
        "LAX",
        "11:05",
    )
    assert "origin" not in rt.db["reservations"][CONF]["bookings"][0]["segments"][0]
    assert rt.db["session"] == {"confirmation_number": CONF, "last_name": "rodriguez"}


def test_empty_last_name_skips_the_check(rt: ToolRuntime) -> None:
    assert (
        rt.call("get_reservation", {"confirmation_number": CONF, "last_name": ""}).result["status"]
        == "success"
    )


def test_lax_coercion_and_ignored_extras(rt: ToolRuntime) -> None:
    out = rt.call(
        "search_rebooking_options",
        {
            "origin": "aus",
            "destination": "lax",
            "date": "2026-03-25",
            "passenger_count": "1",
            "fare_class": "any",
            "note": "ignored",
        },
    )
    assert out.result["status"] == "success" and out.result["count"] >= 1
    assert out.result["message"] == f"{out.result['count']} flight(s) found"
    out = rt.call("rebook_flight", _rebook(waive_change_fee="false", flight_number=None))
    assert out.result["status"] == "success"
    assert (
        out.action is not None
        and out.action["waive_change_fee"] is False
        and "flight_number" not in out.action
    )


def test_rebook_voluntary_costs_and_writes(rt: ToolRuntime) -> None:
    out = rt.call("rebook_flight", _rebook())
    assert out.result["cost_summary"] == {
        "original_fare_class": "main_cabin",
        "new_fare_class": "main_cabin",
        "cabin_changed": False,
        "change_fee": 75,
        "fare_difference": 40.0,
        "credit_due": 0,
        "total_collected": 115.0,
        "fee_waived": False,
    }
    bookings = rt.db["reservations"][CONF]["bookings"]
    assert [b["status"] for b in bookings] == ["cancelled", "confirmed"]
    assert rt.db["reservations"][CONF]["status"] == "changed"
    assert rt.db["journeys"][NEW]["segments"][0]["available_seats"]["main_cabin"] == 21
    assert rt.db["journeys"][OLD]["segments"][0]["available_seats"]["main_cabin"] == 19
    assert out.action == {"action_type": "rebook_flight", **_rebook()}
    assert rt.actions == [out.action]


@pytest.mark.parametrize(
    ("rebooking_type", "waive", "fee", "collected"),
    [
        ("same_day", False, 75, 115.0),
        ("irrops_cancellation", False, 0, 0),
        ("voluntary", True, 0, 40.0),
        ("missed_connection_airline_fault", False, 75, 115.0),
    ],
)
def test_rebook_fees(rt: ToolRuntime, rebooking_type: str, waive: bool, fee: int, collected: float) -> None:
    cost = rt.call("rebook_flight", _rebook(rebooking_type=rebooking_type, waive_change_fee=waive)).result
    assert (cost["cost_summary"]["change_fee"], cost["cost_summary"]["total_collected"]) == (fee, collected)


def test_rebook_irrops_keeps_the_old_fare(rt: ToolRuntime) -> None:
    rt.call("rebook_flight", _rebook(rebooking_type="irrops_delay"))
    new = rt.db["reservations"][CONF]["bookings"][1]
    assert new["fare_paid"] == 260.0 and new["segments"][0]["fare_paid"] == 260.0


def test_seat_algorithm_and_no_count_change(rt: ToolRuntime) -> None:
    seats_before = dict(rt.db["journeys"][OLD]["segments"][0]["available_seats"])
    out = rt.call(
        "assign_seat",
        {
            "confirmation_number": CONF,
            "passenger_id": "PAX001",
            "journey_id": OLD,
            "seat_preference": "aisle",
        },
    )
    assert out.result["seat_assigned"] == "21C"
    assert out.result["message"] == "Seat 21C (aisle) successfully assigned"
    assert rt.db["reservations"][CONF]["bookings"][0]["segments"][0]["seat"] == "21C"
    assert rt.db["journeys"][OLD]["segments"][0]["available_seats"] == seats_before


def test_cancel_then_refund_and_minted_ids_count_successes(rt: ToolRuntime) -> None:
    out = rt.call(
        "cancel_reservation",
        {"confirmation_number": CONF, "journey_id": OLD, "cancellation_reason": "voluntary"},
    )
    assert out.result["credit_amount_eligible"] == 160.0 and out.result["reservation_status"] == "cancelled"
    assert rt.db["reservations"][CONF]["status"] == "cancelled"
    bad = rt.call(
        "process_refund", {"confirmation_number": CONF, "refund_amount": -1, "refund_type": "full_fare"}
    )
    assert bad.result["status"] == "error"
    first = rt.call(
        "process_refund", {"confirmation_number": CONF, "refund_amount": "289", "refund_type": "full_fare"}
    )
    assert first.result["refund_id"] == "REF-ZK3FFW-001"
    assert first.result["message"] == "$289.0 refund initiated, processing time 7 business days"
    assert rt.db["refunds"]["REF-ZK3FFW-001"]["refund_amount"] == 289.0
    second = rt.call(
        "process_refund", {"confirmation_number": CONF, "refund_amount": 5, "refund_type": "taxes_only"}
    )
    assert second.result["refund_id"] == "REF-ZK3FFW-002"
    assert [a["action_type"] for a in rt.actions] == [
        "cancel_reservation",
        "process_refund",
        "process_refund",
    ]


def test_lazy_tables_and_colliding_codes(rt: ToolRuntime) -> None:
    assert "hotel_vouchers" not in rt.db
    rt.call("issue_hotel_voucher", {"confirmation_number": CONF, "passenger_id": "PAX001", "num_nights": 1})
    assert list(rt.db["hotel_vouchers"]) == ["HOTEL-ZK3FFW"]
    for pax in ("PAX001", "PAX002"):
        out = rt.call(
            "issue_meal_voucher",
            {"confirmation_number": CONF, "passenger_id": pax, "voucher_reason": "irrops_overnight"},
        )
        assert out.result["voucher_code"] == "MEAL-ZK3FFW-PAX0" and out.result["amount"] == 25
    assert rt.db["meal_vouchers"]["MEAL-ZK3FFW-PAX0"]["passenger_id"] == "PAX002"
    credit = rt.call(
        "issue_travel_credit",
        {"confirmation_number": CONF, "passenger_id": "PAX001", "amount": 50, "credit_reason": "goodwill"},
    ).result
    assert (
        credit["credit_code"] == "TCZK3FFWPAX"
        and credit["message"] == "$50.0 travel credit issued with code TCZK3FFWPAX"
    )
    assert rt.db["travel_credits"]["TCZK3FFWPAX"]["expiry_date"] == "2027-03-17"


def test_standby_positions_and_missing_reservation(rt: ToolRuntime) -> None:
    out = rt.call(
        "add_to_standby", {"confirmation_number": CONF, "journey_id": NEW, "passenger_ids": ["PAX001"]}
    )
    assert out.result["standby_list_position"] == 1
    assert rt.db["reservations"][CONF]["standby_list"][0]["status"] == "pending"
    out = rt.call(
        "add_to_standby",
        {"confirmation_number": "QQQQQQ", "journey_id": NEW, "passenger_ids": ["PAX001", "PAX002"]},
    )
    assert out.result["standby_list_position"] == 3
    assert [e["position"] for e in rt.db["journeys"][NEW]["standby_list"]] == [1, 2, 3]


def test_bags_and_meal_set_every_segment(rt: ToolRuntime) -> None:
    out = rt.call("add_baggage_allowance", {"confirmation_number": CONF, "journey_id": OLD, "num_bags": "3"})
    assert out.result["message"] == "Baggage allowance set to 3 checked bag(s)"
    out = rt.call(
        "add_meal_request",
        {"confirmation_number": CONF, "passenger_id": "PAX001", "journey_id": OLD, "meal_type": "kosher"},
    )
    assert out.result["message"] == "kosher meal request added"
    segment = rt.db["reservations"][CONF]["bookings"][0]["segments"][0]
    assert (segment["bags_checked"], segment["meal_request"]) == (3, "kosher")


def test_session_ending_tools(rt: ToolRuntime) -> None:
    failed = rt.call(
        "transfer_to_agent", {"confirmation_number": "QQQQQQ", "transfer_reason": "a", "issue_summary": "b"}
    )
    assert failed.ended is None
    out = rt.call(
        "transfer_to_agent", {"confirmation_number": CONF, "transfer_reason": "a", "issue_summary": "b"}
    )
    assert out.ended == "transfer" and out.result["transfer_id"] == "TRF-ZK3FFW-001"
    assert out.result["estimated_wait"] == "2-3 minutes"
    end = rt.call("end_conversation", "{}")
    assert end.ended == "exit" and end.result["status"] == "success"
    assert rt.call("end_conversation", None).ended == "exit"


def test_confirmation_number_is_upper_cased_by_the_airline_field_rule(rt: ToolRuntime) -> None:
    # a spoken code often arrives lower-cased: the tool runs and the action record holds it upper-cased
    outcome = rt.call("rebook_flight", _rebook(confirmation_number=CONF.lower()))
    assert outcome.result["status"] == "success" and outcome.result["confirmation_number"] == CONF
    assert rt.actions == [{"action_type": "rebook_flight", **_rebook()}]
