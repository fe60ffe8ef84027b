"""ToolRuntime: unknown tools, malformed and hostile arguments (non-finite numbers, huge values and
names, deep nesting), and handlers that raise or write before refusing. An error result is short and
structured, and the DB stays exactly as before the call.

All cases run on the mock shop; the rollback tests give its cancel_order the declared ``writes`` a
real domain's tool has (the mock tools declare none: the whole DB is copied). eva's field rules, which
echo a huge value: tests/domains/eva_airline/test_tools_errors.py."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from engine.core.dbhash import db_hash
from engine.core.model import Scenario
from engine.core.toolruntime import ToolRuntime
from engine.domains.registry import plugins
from engine.spec.loader import load_domain
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR


@pytest.fixture(scope="module")
def shop() -> Scenario:
    """The mock shop's late-delivery caller: customer C-2 (credit 5), order O-200."""
    return load_domain(MOCK_SPEC_DIR, MOCK_DATA_ROOT, plugins=plugins()).scenario(
        "mock__late_delivery_credit"
    )


@pytest.fixture(scope="module")
def declared() -> Scenario:
    """The mock shop's cancel caller (order O-100, placed) with cancel_order declaring that it writes
    the order it is given."""
    scenario = load_domain(MOCK_SPEC_DIR, MOCK_DATA_ROOT, plugins=plugins()).scenario("mock__cancel_order")
    tools = tuple(
        dataclasses.replace(t, writes=("/orders/{order_id}",)) if t.name == "cancel_order" else t
        for t in scenario.tools.tools
    )
    table = dataclasses.replace(scenario.domain.tools, tools=tools)
    return dataclasses.replace(scenario, domain=dataclasses.replace(scenario.domain, tools=table))


CREDIT = '{"customer_id": "C-2", "credit_amount": %s, "reason": "goodwill"}'


@pytest.mark.parametrize(
    ("amount", "why"),
    [
        ("NaN", "NaN is not a JSON number"),
        ("Infinity", "Infinity is not a JSON number"),
        ("-Infinity", "-Infinity is not a JSON number"),
        ("1e400", "1e400 is beyond the float range"),
    ],
)
def test_non_finite_amount_is_refused_and_db_unchanged(shop: Scenario, amount: str, why: str) -> None:
    # before: refused by the argument check of a number field only; in a string field (eva's
    # confirmation_number) NaN became 'nan' in the message, in a field without a type it got through
    db = shop.fresh_db()
    before = db_hash(db, shop.domain.hash_rules)
    runtime = ToolRuntime(shop.tools, db)
    outcome = runtime.call("issue_credit", CREDIT % amount)
    assert outcome.result == {
        "status": "error",
        "error_type": "invalid_arguments",
        "message": f"Tool arguments hold a non-finite number: {why}",
    }
    assert runtime.call("get_order", f'{{"order_id": {amount}}}').result == outcome.result
    assert db_hash(db, shop.domain.hash_rules) == before
    assert runtime.actions == []
    json.dumps(db, allow_nan=False)  # the DB stays strict JSON


def test_non_finite_amount_given_as_a_mapping_is_refused_by_the_check(shop: Scenario) -> None:
    runtime = ToolRuntime(shop.tools, shop.fresh_db())
    outcome = runtime.call(
        "issue_credit", {"customer_id": "C-2", "credit_amount": float("nan"), "reason": "x"}
    )
    assert outcome.result == {
        "status": "error",
        "error_type": "invalid_parameter",
        "message": "Invalid or missing parameter 'credit_amount': Input should be a finite number",
    }


def test_an_integer_of_5000_digits_is_invalid_arguments(shop: Scenario) -> None:
    # before: execution_error "Exceeds the limit (4300 digits) ... sys.set_int_max_str_digits()"
    result = (
        ToolRuntime(shop.tools, shop.fresh_db()).call("get_order", f'{{"order_id": {"9" * 5000}}}').result
    )
    assert result == {
        "status": "error",
        "error_type": "invalid_arguments",
        "message": "Tool arguments hold an integer of more than 4300 digits",
    }


def test_finite_amount_still_issues_credit(shop: Scenario) -> None:
    runtime = ToolRuntime(shop.tools, shop.fresh_db())
    assert runtime.call("issue_credit", CREDIT % "25").result["status"] == "success"


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("x" * 1_000_000, {}),
    ],
    ids=["huge_tool_name"],
)
def test_huge_inputs_are_not_echoed_whole(shop: Scenario, name: str, arguments: dict) -> None:
    outcome = ToolRuntime(shop.tools, shop.fresh_db()).call(name, arguments)
    assert outcome.result["status"] == "error"
    assert len(outcome.result["message"]) < 1000
    assert "chars)" in outcome.result["message"]


@pytest.mark.parametrize("raw", ["[" * 100_000 + "]" * 100_000, '{"a":' * 5000 + "1" + "}" * 5000])
def test_deeply_nested_arguments_are_invalid_arguments(shop: Scenario, raw: str) -> None:
    outcome = ToolRuntime(shop.tools, shop.fresh_db()).call("get_order", raw)
    assert outcome.result == {
        "status": "error",
        "error_type": "invalid_arguments",
        "message": "Tool arguments are nested too deeply",
    }


def test_unknown_tool_lists_the_tools(shop: Scenario) -> None:
    result = ToolRuntime(shop.tools, shop.fresh_db()).call("book_hotel", {}).result
    assert result["error_type"] == "tool_not_found"
    assert "'book_hotel'" in result["message"] and "cancel_order" in result["message"]
    assert "end_conversation" in result["message"]


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ('{"order_id": "O-100", ', "not valid JSON"),
        ("[1, 2]", "must be a JSON object, got list"),
        ("42", "must be a JSON object, got int"),
    ],
)
def test_malformed_json_arguments(shop: Scenario, raw: str, fragment: str) -> None:
    result = ToolRuntime(shop.tools, shop.fresh_db()).call("get_order", raw).result
    assert result["status"] == "error" and result["error_type"] == "invalid_arguments"
    assert fragment in result["message"]


def test_handler_that_raises_rolls_back(declared: Scenario) -> None:
    scenario = declared

    def half_write(db: dict[str, Any], args: Any, ctx: Any) -> dict[str, Any]:
        db["orders"][args["order_id"]]["status"] = "cancelled"
        db["hotel_vouchers"] = {"x": 1}
        raise RuntimeError("boom")

    db = scenario.fresh_db()
    assert db["orders"]["O-100"]["status"] != "cancelled"
    before = db_hash(db, scenario.domain.hash_rules)
    runtime = ToolRuntime(scenario.tools, db, handlers={"mock_cancel_order": half_write})
    outcome = runtime.call("cancel_order", {"order_id": "O-100"})
    assert outcome.result == {
        "status": "error",
        "error_type": "execution_error",
        "message": "Tool execution failed: boom",
    }
    assert runtime.db is db and "hotel_vouchers" not in db
    assert db_hash(db, scenario.domain.hash_rules) == before and runtime.actions == []


def test_handler_that_writes_then_returns_an_error_rolls_back(declared: Scenario) -> None:
    # an error result never half-applies, whether the handler raised or returned it
    scenario = declared

    def write_then_refuse(db: dict[str, Any], args: Any, ctx: Any) -> dict[str, Any]:
        db["orders"][args["order_id"]]["status"] = "cancelled"
        return {"status": "error", "error_type": "not_allowed", "message": "refused after writing"}

    db = scenario.fresh_db()
    before = db_hash(db, scenario.domain.hash_rules)
    runtime = ToolRuntime(scenario.tools, db, handlers={"mock_cancel_order": write_then_refuse})
    outcome = runtime.call("cancel_order", {"order_id": "O-100"})
    assert outcome.result["error_type"] == "not_allowed" and outcome.action is None
    assert runtime.db is db and db_hash(db, scenario.domain.hash_rules) == before and runtime.actions == []
