"""customer_service handlers: success and error paths of every tool, on the real scenario DBs."""

from __future__ import annotations

from typing import Any

import pytest

from engine.core.tools.arguments import ArgumentChecker
from engine.domains import customer_service as cs
from engine.domains.customer_service.handlers import format_money, parse_money
from tests.domains.nemo.helpers import call_checked, loaded, release_records, tool_spec


def _db(name: str) -> dict[str, Any]:
    return cs.initial_db(release_records()[name])


def _call(tool: str, db: dict[str, Any], args: dict[str, Any], call_index: int = 1) -> dict[str, Any]:
    return call_checked(cs, tool, db, args, call_index=call_index)


def test_tables_cover_the_handlers() -> None:
    """The YAML tool table names every handler of the package once, and its writes and kinds agree."""
    table = loaded(cs.PLUGIN.name).domain.tools
    handled = [t.name for t in table.tools if t.kind != "harness"]
    assert sorted(handled) == sorted(cs.HANDLERS)
    for spec in table.tools:
        ArgumentChecker(spec.parameters, {})  # a valid JSON Schema
        if spec.kind == "harness":
            assert (spec.name, spec.handler) == ("EndConversationTool", "end_conversation")
            assert spec.ends_call == "exit"
            continue
        assert spec.handler == spec.name
        assert bool(spec.writes) == (spec.kind == "write"), spec.name
        assert (spec.action_type == spec.name) == (spec.kind == "write"), spec.name
    resolution = tool_spec(cs, "ResolveTicketTool").parameters["properties"]["resolution_type"]
    assert resolution["enum"] == list(cs.RESOLUTION_TYPES)


def test_initial_db_has_the_scenario_accounts_and_date() -> None:
    db = _db("customer_service__plan_upgrade")
    assert db["_current_date"] == "2026-04-22"
    assert db["accounts"]["TC-44567"]["plan"] == "Standard"
    assert db["plans"] == {"Standard": "$9.99", "Premium": "$19.99"}
    assert db["tickets"] == []
    assert _db("customer_service__billing_dispute")["plans"] == {}


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("$1,299.00", 1299.0),
        ("-$49.99", -49.99),
        ("$0.00", 0.0),
        ("+$5", 5.0),
        ("49.99", 49.99),
        ("n/a", None),
        (None, None),
    ],
)
def test_parse_money(text: Any, value: float | None) -> None:
    assert parse_money(text) == value


@pytest.mark.parametrize(
    ("value", "text"),
    [(1299.0, "$1,299.00"), (-49.99, "-$49.99"), (92.51000000000001, "$92.51"), (-0.001, "$0.00")],
)
def test_format_money(value: float, text: str) -> None:
    assert format_money(value) == text


def test_lookup_account_returns_a_copy() -> None:
    db = _db("customer_service__billing_dispute")
    result = _call("LookupAccountTool", db, {"account_id": "TC-98765"})
    assert result["status"] == "success" and result["account"] == db["accounts"]["TC-98765"]
    result["account"]["balance"] = "$0.00"
    assert db["accounts"]["TC-98765"]["balance"] == "$142.50"


@pytest.mark.parametrize("account_id", ["TC-00000", "tc-98765", " TC-98765"])
def test_lookup_account_matches_ids_exactly(account_id: str) -> None:
    db = _db("customer_service__billing_dispute")
    assert _call("LookupAccountTool", db, {"account_id": account_id})["error_type"] == "account_not_found"


def test_check_order_status() -> None:
    db = _db("customer_service__order_delay")
    result = _call("CheckOrderStatusTool", db, {"account_id": "TC-11234", "order_id": "ORD-54321"})
    assert result["status"] == "success" and result["order"]["status"] == "In Transit"
    missing = _call("CheckOrderStatusTool", db, {"account_id": "TC-11234", "order_id": "ORD-1"})
    assert missing["error_type"] == "order_not_found"
    nobody = _call("CheckOrderStatusTool", db, {"account_id": "TC-1", "order_id": "ORD-54321"})
    assert nobody["error_type"] == "account_not_found"
    no_orders = _call(
        "CheckOrderStatusTool",
        _db("customer_service__plan_upgrade"),
        {"account_id": "TC-44567", "order_id": "X"},
    )
    assert no_orders["error_type"] == "order_not_found"


def _refund(**changes: Any) -> dict[str, Any]:
    return {
        "account_id": "TC-98765",
        "amount": 49.99,
        "description": "Extended Warranty",
        "date": "2026-04-22",
        **changes,
    }


def test_process_refund_appends_a_negative_charge_and_lowers_the_balance() -> None:
    db = _db("customer_service__billing_dispute")
    result = _call("ProcessRefundTool", db, _refund())
    entry = {"description": "Refund - Extended Warranty", "amount": "-$49.99", "date": "2026-04-22"}
    assert result["status"] == "success"
    assert result["refund_entry"] == entry and result["new_balance"] == "$92.51"
    account = db["accounts"]["TC-98765"]
    assert account["balance"] == "$92.51" and account["recent_charges"][-1] == entry


def test_process_refund_creates_the_charge_list_when_missing() -> None:
    db = _db("customer_service__plan_upgrade")
    result = _call("ProcessRefundTool", db, _refund(account_id="TC-44567", amount=10))
    assert result["status"] == "success"
    assert db["accounts"]["TC-44567"]["balance"] == "-$10.00"
    assert db["accounts"]["TC-44567"]["recent_charges"][0]["amount"] == "-$10.00"


@pytest.mark.parametrize(
    ("changes", "error_type"),
    [
        ({"account_id": "TC-1"}, "account_not_found"),
        ({"amount": 0}, "invalid_amount"),
        ({"amount": -49.99}, "invalid_amount"),
        ({"amount": float("nan")}, "invalid_amount"),
        ({"description": " "}, "missing_description"),
        ({"date": "04/22/2026"}, "invalid_date"),
        ({"date": "2026-02-30"}, "invalid_date"),
        ({"date": "2026-4-22"}, "invalid_date"),
    ],
)
def test_process_refund_errors(changes: dict[str, Any], error_type: str) -> None:
    db = _db("customer_service__billing_dispute")
    assert _call("ProcessRefundTool", db, _refund(**changes))["error_type"] == error_type


def test_process_refund_on_a_broken_balance_is_an_error() -> None:
    db = _db("customer_service__billing_dispute")
    db["accounts"]["TC-98765"]["balance"] = "unknown"
    assert _call("ProcessRefundTool", db, _refund())["error_type"] == "invalid_balance"


def test_start_item_return() -> None:
    db = _db("customer_service__wrong_item")
    args = {"account_id": "TC-88901", "order_id": "ORD-44556", "reason": "wrong item"}
    result = _call("StartItemReturnTool", db, args)
    order = db["accounts"]["TC-88901"]["orders"]["ORD-44556"]
    assert result["status"] == "success" and result["order"] == order
    assert order["status"] == "Return Started" and order["return_reason"] == "wrong item"


@pytest.mark.parametrize(
    ("changes", "error_type"),
    [
        ({"order_id": "ORD-1"}, "order_not_found"),
        ({"account_id": "TC-1"}, "account_not_found"),
        ({"reason": ""}, "missing_reason"),
    ],
)
def test_start_item_return_errors(changes: dict[str, Any], error_type: str) -> None:
    db = _db("customer_service__wrong_item")
    args = {"account_id": "TC-88901", "order_id": "ORD-44556", "reason": "wrong item", **changes}
    assert _call("StartItemReturnTool", db, args)["error_type"] == error_type


def test_change_plan_sets_plan_and_rate() -> None:
    db = _db("customer_service__plan_upgrade")
    result = _call("ChangePlanTool", db, {"account_id": "TC-44567", "new_plan": "Premium"})
    assert result["status"] == "success" and result["new_monthly_rate"] == "$19.99"
    assert db["accounts"]["TC-44567"]["plan"] == "Premium"
    assert db["accounts"]["TC-44567"]["monthly_rate"] == "$19.99"


@pytest.mark.parametrize(
    ("args", "error_type"),
    [
        ({"account_id": "TC-44567", "new_plan": "premium"}, "unknown_plan"),
        ({"account_id": "TC-44567", "new_plan": "Gold"}, "unknown_plan"),
        ({"account_id": "TC-1", "new_plan": "Premium"}, "account_not_found"),
    ],
)
def test_change_plan_errors(args: dict[str, Any], error_type: str) -> None:
    result = _call("ChangePlanTool", _db("customer_service__plan_upgrade"), args)
    assert result["error_type"] == error_type
    if error_type == "unknown_plan":
        assert "Standard, Premium" in result["message"]


def test_change_plan_without_a_plan_table_offers_nothing() -> None:
    db = _db("customer_service__subscription_cancel")
    result = _call("ChangePlanTool", db, {"account_id": "TC-77890", "new_plan": "Premium"})
    assert result["error_type"] == "unknown_plan" and "none" in result["message"]


def test_unlock_account() -> None:
    db = _db("customer_service__account_access")
    assert _call("UnlockAccountTool", db, {"account_id": "TC-55678"})["status"] == "success"
    account = db["accounts"]["TC-55678"]
    assert (account["account_status"], account["failed_login_attempts"]) == ("Active", "0")
    assert _call("UnlockAccountTool", db, {"account_id": "TC-1"})["error_type"] == "account_not_found"


def test_cancel_subscription() -> None:
    db = _db("customer_service__subscription_cancel")
    assert _call("CancelSubscriptionTool", db, {"account_id": "TC-77890"})["status"] == "success"
    account = db["accounts"]["TC-77890"]
    assert (account["plan"], account["monthly_rate"]) == ("Canceled", "$0.00")
    assert account["billing_cycle_end"] == "2026-04-30"
    assert _call("CancelSubscriptionTool", db, {"account_id": "TC-1"})["error_type"] == "account_not_found"


def _ticket(**changes: Any) -> dict[str, Any]:
    return {
        "account_id": "TC-99012",
        "issue_summary": "Cloud outages for three days.",
        "resolution_type": "escalation",
        "resolution_details": "Escalated to senior engineering; updates every 4 hours.",
        **changes,
    }


def test_resolve_ticket_logs_numbered_tickets() -> None:
    db = _db("customer_service__service_outage")
    first = _call("ResolveTicketTool", db, _ticket())
    second = _call("ResolveTicketTool", db, _ticket(resolution_type="information"), call_index=2)
    assert (first["ticket_id"], second["ticket_id"]) == ("TKT-001", "TKT-002")
    assert db["tickets"][0] == {"ticket_id": "TKT-001", **_ticket()}


@pytest.mark.parametrize(
    ("changes", "error_type"),
    [
        ({"resolution_type": "Refund"}, "invalid_resolution_type"),
        ({"resolution_type": "discount"}, "invalid_resolution_type"),
        ({"issue_summary": ""}, "missing_issue_summary"),
        ({"resolution_details": "  "}, "missing_resolution_details"),
        ({"account_id": "TC-1"}, "account_not_found"),
    ],
)
def test_resolve_ticket_errors(changes: dict[str, Any], error_type: str) -> None:
    db = _db("customer_service__service_outage")
    assert _call("ResolveTicketTool", db, _ticket(**changes))["error_type"] == error_type
    assert db["tickets"] == []


def test_resolve_ticket_needs_a_ticket_log() -> None:
    db = _db("customer_service__service_outage")
    del db["tickets"]
    assert _call("ResolveTicketTool", db, _ticket())["error_type"] == "no_tickets"


def test_predicates_read_the_account() -> None:
    db = _db("customer_service__billing_dispute")
    assert cs.PREDICATES["account_field"](db, account_id="TC-98765", field="balance") == "$142.50"
    assert cs.PREDICATES["account_field"](db, account_id="TC-98765", field="monthly_rate") is None
    assert cs.PREDICATES["charge_amounts"](db, account_id="TC-98765") == ["$1,299.00", "$49.99"]
    order_db = _db("customer_service__order_delay")
    args = {"account_id": "TC-11234", "order_id": "ORD-54321", "field": "status"}
    assert cs.PREDICATES["order_field"](order_db, **args) == "In Transit"
    with pytest.raises(KeyError):
        cs.PREDICATES["account_field"](db, account_id="TC-1", field="plan")
