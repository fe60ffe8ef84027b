"""ToolRuntime on hostile tool calls: non-finite numbers, huge values and names, deeply nested
arguments. An error result is short and structured, and the DB stays unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.dbhash import db_hash
from engine.domains.registry import load_domain
from engine.model import Scenario
from engine.toolruntime import ToolRuntime
from tests.conftest import SPEC_DIR


@pytest.fixture(scope="module")
def scenario_112(data_root: Path) -> Scenario:
    return next(s for s in load_domain(SPEC_DIR, data_root).scenarios if s.eva_id == "1.1.2")


CREDIT = (
    '{"confirmation_number": "ZK3FFW", "passenger_id": "PAX001", "amount": %s, "credit_reason": "goodwill"}'
)


@pytest.mark.parametrize("amount", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_non_finite_amount_is_refused_and_db_unchanged(scenario_112: Scenario, amount: str) -> None:
    db = scenario_112.fresh_db()
    before = db_hash(db, scenario_112.domain.hash_rules)
    runtime = ToolRuntime(scenario_112.tools, db)
    outcome = runtime.call("issue_travel_credit", CREDIT % amount)
    assert outcome.result == {
        "status": "error",
        "error_type": "invalid_parameter",
        "message": "Invalid or missing parameter 'amount': Input should be a finite number",
    }
    assert db_hash(db, scenario_112.domain.hash_rules) == before
    assert runtime.actions == []
    json.dumps(db, allow_nan=False)  # the DB stays strict JSON


def test_finite_amount_still_issues_credit(scenario_112: Scenario) -> None:
    runtime = ToolRuntime(scenario_112.tools, scenario_112.fresh_db())
    assert runtime.call("issue_travel_credit", CREDIT % "25").result["status"] == "success"


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("get_reservation", {"confirmation_number": "A" * 1_000_000, "last_name": "Rodriguez"}),
        ("get_reservation", {"last_name": "B" * 1_000_000}),
        ("x" * 1_000_000, {}),
    ],
    ids=["bad_value", "missing_with_huge_other", "huge_tool_name"],
)
def test_huge_inputs_are_not_echoed_whole(scenario_112: Scenario, name: str, arguments: dict) -> None:
    outcome = ToolRuntime(scenario_112.tools, scenario_112.fresh_db()).call(name, arguments)
    assert outcome.result["status"] == "error"
    assert len(outcome.result["message"]) < 1000
    assert "chars)" in outcome.result["message"]


@pytest.mark.parametrize("raw", ["[" * 100_000 + "]" * 100_000, '{"a":' * 5000 + "1" + "}" * 5000])
def test_deeply_nested_arguments_are_invalid_arguments(scenario_112: Scenario, raw: str) -> None:
    outcome = ToolRuntime(scenario_112.tools, scenario_112.fresh_db()).call("get_reservation", raw)
    assert outcome.result == {
        "status": "error",
        "error_type": "invalid_arguments",
        "message": "Tool arguments are nested too deeply",
    }
