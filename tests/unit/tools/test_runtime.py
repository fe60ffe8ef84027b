"""ToolRuntime: unknown tools, malformed and hostile arguments (non-finite numbers, huge values and
names, deep nesting), and handlers that raise or write before refusing. An error result is short and
structured, and the DB stays exactly as before the call.

Most cases run on the mock shop. Three need eva_airline's table: its field rules are what echo a
huge value (``bad_value``, ``missing_with_huge_other``), and its declared ``writes`` are the path
the rollback tests take (the mock tools declare none)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine.dbhash import db_hash
from engine.domains.registry import load_domain
from engine.model import Scenario
from engine.toolruntime import ToolRuntime
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR, SPEC_DIR


@pytest.fixture(scope="module")
def shop() -> Scenario:
    """The mock shop's late-delivery caller: customer C-2 (credit 5), order O-200."""
    return load_domain(MOCK_SPEC_DIR, MOCK_DATA_ROOT).scenario("mock__late_delivery_credit")


CONF, OLD, NEW = "ZK3FFW", "FL_SK621_20260320", "FL_SK703_20260325"


@pytest.fixture(scope="module")
def scenario(data_root: Path) -> Scenario:
    loaded = load_domain(SPEC_DIR, data_root)
    return next(s for s in loaded.scenarios if s.eva_id == "1.1.2")


def _rebook(**over: Any) -> dict[str, Any]:
    args = {
        "confirmation_number": CONF,
        "journey_id": OLD,
        "new_journey_id": NEW,
        "rebooking_type": "voluntary",
        "waive_change_fee": False,
    }
    return {**args, **over}


CREDIT = '{"customer_id": "C-2", "credit_amount": %s, "reason": "goodwill"}'


@pytest.mark.parametrize("amount", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_non_finite_amount_is_refused_and_db_unchanged(shop: Scenario, amount: str) -> None:
    db = shop.fresh_db()
    before = db_hash(db, shop.domain.hash_rules)
    runtime = ToolRuntime(shop.tools, db)
    outcome = runtime.call("issue_credit", CREDIT % amount)
    assert outcome.result == {
        "status": "error",
        "error_type": "invalid_parameter",
        "message": "Invalid or missing parameter 'credit_amount': Input should be a finite number",
    }
    assert db_hash(db, shop.domain.hash_rules) == before
    assert runtime.actions == []
    json.dumps(db, allow_nan=False)  # the DB stays strict JSON


def test_finite_amount_still_issues_credit(shop: Scenario) -> None:
    runtime = ToolRuntime(shop.tools, shop.fresh_db())
    assert runtime.call("issue_credit", CREDIT % "25").result["status"] == "success"


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("get_reservation", {"confirmation_number": "A" * 1_000_000, "last_name": "Rodriguez"}),
        ("get_reservation", {"last_name": "B" * 1_000_000}),
        ("x" * 1_000_000, {}),
    ],
    ids=["bad_value", "missing_with_huge_other", "huge_tool_name"],
)
def test_huge_inputs_are_not_echoed_whole(scenario: Scenario, name: str, arguments: dict) -> None:
    outcome = ToolRuntime(scenario.tools, scenario.fresh_db()).call(name, arguments)
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
