"""Property: random bad arguments to any eva_airline tool give an error result and leave the DB
hash unchanged (no half-applied write, no action record).

Each tool starts from the DB state and arguments of its first call in a gold trace; one argument is
then corrupted with a value eva's lax validation rejects whatever the handler would do: a wrong
JSON type, text that breaks the field's format or enum, or the argument left out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.core.dbhash import db_hash
from engine.core.gold import GoldTrace
from engine.core.model import HashRules, ToolTable
from engine.core.toolruntime import ToolRuntime, json_copy
from engine.domains.registry import plugins
from engine.spec.gold_replay import replay_trace
from engine.spec.loader import load_domain
from tests.conftest import SPEC_DIR

# Fields whose values have a format or an enum: text ending in "!" never matches either.
FORMATTED = {
    "confirmation_number", "flight_number", "flight_date", "date", "journey_id", "new_journey_id",
    "passenger_id", "origin", "destination", "fare_class", "new_fare_class", "rebooking_type",
    "seat_preference", "meal_type", "credit_reason", "voucher_reason", "refund_type", "cancellation_reason",
}  # fmt: skip


@dataclass(frozen=True)
class Start:
    tool: str
    db: dict[str, Any]
    args: dict[str, Any]
    schema: dict[str, Any]


@pytest.fixture(scope="module")
def starts(data_root: Path) -> tuple[ToolTable, HashRules, dict[str, Start]]:
    loaded = load_domain(SPEC_DIR, data_root, plugins=plugins())
    found: dict[str, Start] = {}
    for s in loaded.scenarios:
        calls = s.gold_trace.tool_calls() if s.gold_trace else ()
        for i, call in enumerate(calls):
            name = call.tool
            if name not in found:
                db = json_copy(replay_trace(s.tools, s.initial_db, GoldTrace(calls[:i])).db)
                schema = dict(s.tools.get(name).parameters)
                found[name] = Start(name, db, dict(call.arguments), schema)
    assert set(found) == set(loaded.domain.tools.names) - {"end_conversation"}
    return loaded.domain.tools, loaded.domain.hash_rules, found


_WRONG_TYPE = st.one_of(
    st.none(),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


def _bad_value(field: str, prop: dict[str, Any]) -> st.SearchStrategy[Any]:
    kind = prop.get("type")
    if kind == "array":  # any list of non-strings is bad; an empty list is valid
        return st.one_of(
            st.none(), st.text(max_size=5), st.integers(), st.lists(st.integers(), min_size=1, max_size=2)
        )
    options = [_WRONG_TYPE]
    if kind == "string" and field in FORMATTED:
        options.append(st.text(max_size=8).map(lambda t: t + "!"))
        options.append(st.integers())
    elif kind == "string":
        options.append(st.integers())
    elif kind in ("integer", "number"):
        options.append(st.text(alphabet="abcxyz", min_size=1, max_size=5))
    elif kind == "boolean":
        options.append(st.sampled_from(["maybe", "2", "yes please"]) | st.integers(min_value=2))
    return st.one_of(options)


@st.composite
def bad_call(draw: st.DrawFn, starts: dict[str, Start]) -> tuple[str, dict[str, Any] | str]:
    start = draw(st.sampled_from(sorted(starts.values(), key=lambda s: s.tool)))
    required = start.schema.get("required", [])
    field = draw(st.sampled_from(required))
    args = dict(start.args)
    if draw(st.booleans()) and draw(st.booleans()):
        args.pop(field, None)
    else:
        args[field] = draw(_bad_value(field, start.schema["properties"][field]))
    if draw(st.integers(0, 9)) == 0:
        return start.tool, json.dumps(args)[:-1]  # truncated JSON
    return start.tool, args


def test_bad_arguments_never_change_the_db(starts: tuple[ToolTable, HashRules, dict[str, Start]]) -> None:
    table, rules, by_tool = starts
    hashes = {name: db_hash(s.db, rules) for name, s in by_tool.items()}

    @settings(max_examples=100, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
    @given(bad_call(by_tool))
    def check(call: tuple[str, dict[str, Any] | str]) -> None:
        tool, args = call
        runtime = ToolRuntime(table, json_copy(by_tool[tool].db))
        outcome = runtime.call(tool, args)
        assert outcome.result["status"] == "error", (tool, args, outcome.result)
        assert outcome.result["error_type"] and outcome.result["message"]
        assert outcome.action is None and outcome.ended is None and runtime.actions == []
        assert db_hash(runtime.db, rules) == hashes[tool]

    check()


def test_the_starting_calls_are_valid(starts: tuple[ToolTable, HashRules, dict[str, Start]]) -> None:
    """Guard for the property: unmodified, every starting call succeeds."""
    table, _, by_tool = starts
    for start in by_tool.values():
        result = ToolRuntime(table, json_copy(start.db)).call(start.tool, start.args).result
        assert result["status"] == "success", (start.tool, result)
