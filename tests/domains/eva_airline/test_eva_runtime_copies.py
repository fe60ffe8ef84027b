"""What a tool call copies, seen through object identity on eva_airline's real DB: a read copies
nothing (every record stays the shared base's object), a write copies only the nodes its tool
declares, and the shared base DB is never changed."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import pytest

from engine.core.dbhash import db_hash
from engine.core.model import Scenario
from engine.core.toolruntime import ToolRuntime
from engine.core.tools.writeset import deep_copy, json_copy
from engine.domains.registry import plugins
from engine.spec.loader import load_domain
from tests.conftest import SPEC_DIR

CONF = "ZK3FFW"


@pytest.fixture(scope="module")
def scenario(data_root: Path) -> Scenario:
    return next(
        s for s in load_domain(SPEC_DIR, data_root, plugins=plugins()).scenarios if s.record_id == "1.1.2"
    )


def _containers(value: Any, path: str = "") -> dict[str, int]:
    """JSON Pointer -> id of every dict and list in ``value``."""
    out: dict[str, int] = {}
    if isinstance(value, dict | list):
        out[path or "/"] = id(value)
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, child in items:
            out.update(_containers(child, f"{path}/{key}"))
    return out


def test_read_calls_copy_nothing(scenario: Scenario) -> None:
    runtime = ToolRuntime(scenario.tools, scenario.session_db())
    before = _containers(runtime.db)
    calls = {
        "get_flight_status": {"flight_number": "SK621", "flight_date": "2026-03-20"},
        "search_rebooking_options": {
            "origin": "AUS",
            "destination": "LAX",
            "date": "2026-03-25",
            "passenger_count": 1,
            "fare_class": "main_cabin",
        },
    }
    for tool, args in calls.items():
        assert runtime.call(tool, args).result["status"] == "success", tool
    assert _containers(runtime.db) == before  # not one dict or list replaced
    base = scenario.initial_db
    assert all(runtime.db["journeys"][k] is v for k, v in base["journeys"].items())


def test_get_reservation_copies_only_the_session(scenario: Scenario) -> None:
    runtime = ToolRuntime(scenario.tools, scenario.session_db())
    records = {t: dict(runtime.db[t]) for t in ("reservations", "journeys")}
    result = runtime.call("get_reservation", {"confirmation_number": CONF, "last_name": "Rodriguez"})
    assert result.result["status"] == "success"
    assert runtime.db["session"] == {"confirmation_number": CONF, "last_name": "rodriguez"}
    for table, kept in records.items():
        assert all(runtime.db[table][k] is v for k, v in kept.items()), table


def test_a_write_copies_only_what_its_tool_declares(scenario: Scenario) -> None:
    base_hash = db_hash(scenario.initial_db, scenario.domain.hash_rules)
    runtime = ToolRuntime(scenario.tools, scenario.session_db())
    spec = scenario.tools.get("assign_seat")
    assert spec is not None and spec.writes == ("/reservations/{confirmation_number}",)
    args = {"confirmation_number": CONF, "passenger_id": "PAX001", "journey_id": "FL_SK621_20260320"}
    outcome = runtime.call("assign_seat", {**args, "seat_preference": "aisle"})
    assert outcome.result["status"] == "success", outcome.result
    base = scenario.initial_db
    assert runtime.db["reservations"][CONF] is not base["reservations"][CONF]  # its own copy
    assert runtime.db["reservations"][CONF] != base["reservations"][CONF]  # changed there
    assert all(runtime.db["journeys"][k] is v for k, v in base["journeys"].items())
    assert db_hash(scenario.initial_db, scenario.domain.hash_rules) == base_hash  # base untouched


def test_deep_copy_equals_json_copy_and_takes_what_marshal_does_not(scenario: Scenario) -> None:
    db = scenario.initial_db
    copied = deep_copy(db)
    assert copied == json_copy(db) and copied is not db
    assert copied["reservations"][CONF] is not db["reservations"][CONF]
    odd = {"when": date(2026, 3, 1), "rows": [{"a": 1.0}]}  # marshal refuses the date
    again = deep_copy(odd)
    assert again == odd and again["rows"][0] is not odd["rows"][0]
