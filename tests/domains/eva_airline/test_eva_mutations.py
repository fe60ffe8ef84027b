"""The differential check of eva_airline's argument handling (issue #10): every gold tool call,
mutated the ways a model gets arguments wrong, run after the gold calls before it. The expected
outcome of each mutation comes from upstream's documented rules (pydantic lax mode, the eva models'
patterns and enums) and the tool contract, never from running evalctl:

- an id with a trailing newline is refused with the field's error type (pattern ends at ``$``);
- an enum value in another case is refused (enums are case-sensitive);
- a number or an integer sent as text, or a boolean as ``"true"``/``"no"``, is the same call;
- a boolean with surrounding whitespace is refused;
- a missing required argument is refused;
- a refused call changes nothing (the DB is as before it).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.core.dbhash import db_hash
from engine.core.gold import GoldTrace
from engine.core.toolruntime import ToolRuntime
from engine.core.tools.writeset import session_view
from engine.domains.eva_airline.common import FIELD_RULES
from engine.domains.registry import plugins
from engine.spec.gold_replay import replay_trace
from engine.spec.loader import LoadedDomain, load_domain
from tests.conftest import SPEC_DIR

IDS = ("confirmation_number", "passenger_id", "journey_id", "new_journey_id", "flight_number")


@pytest.fixture(scope="module")
def domain(data_root: Path) -> LoadedDomain:
    return load_domain(SPEC_DIR, data_root, plugins=plugins())


def _mutations(params: dict[str, Any], schema: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any], str]]:
    """``(label, mutated arguments, expected: 'same' | error_type)`` for one gold call."""
    props = schema.get("properties", {})
    for name, value in params.items():
        prop = props.get(name, {})
        rule = FIELD_RULES.get(name)
        if name in IDS and isinstance(value, str):
            yield (
                f"{name}+newline",
                {**params, name: value + "\n"},
                rule.error_type if rule else "invalid_parameter",
            )
        if "enum" in prop and isinstance(value, str) and value.upper() != value:
            yield (
                f"{name}.upper",
                {**params, name: value.upper()},
                rule.error_type if rule else "invalid_parameter",
            )
        if (
            prop.get("type") in ("number", "integer")
            and isinstance(value, int | float)
            and not isinstance(value, bool)
        ):
            yield f"{name} as text", {**params, name: f" {value} "}, "same"
        if prop.get("type") == "boolean" and isinstance(value, bool):
            yield f"{name} as word", {**params, name: "yes" if value else "no"}, "same"
            yield f"{name} padded", {**params, name: f" {str(value).lower()}"}, "invalid_parameter"
        if name in schema.get("required", []):
            yield f"without {name}", {k: v for k, v in params.items() if k != name}, "refused"


def test_gold_calls_mutated_as_models_do(domain: LoadedDomain) -> None:
    checked = 0
    for scenario in domain.scenarios:
        calls = scenario.gold_trace.tool_calls()
        for i, call in enumerate(calls):
            spec = scenario.tools.get(call.tool)
            if spec is None or call.tool == "transfer_to_agent":
                continue
            before = replay_trace(scenario.tools, scenario.initial_db, GoldTrace(calls[:i])).db
            # each runtime gets its own view: a write replaces records inside its tables
            reference = ToolRuntime(scenario.tools, session_view(before))
            wanted = reference.call(call.tool, dict(call.arguments)).result
            for label, args, expected in _mutations(dict(call.arguments), dict(spec.parameters)):
                runtime = ToolRuntime(scenario.tools, session_view(before))
                start = db_hash(runtime.db, scenario.domain.hash_rules)
                got = runtime.call(call.tool, args).result
                where = f"{scenario.name} call {i + 1} {call.tool}: {label}"
                if expected == "same":
                    assert got == wanted, where
                    assert db_hash(runtime.db, scenario.domain.hash_rules) == db_hash(
                        reference.db, scenario.domain.hash_rules
                    ), where
                else:
                    assert got["status"] == "error", where
                    if expected != "refused":
                        assert got["error_type"] == expected, (where, got)
                    assert db_hash(runtime.db, scenario.domain.hash_rules) == start, where
                checked += 1
    assert checked >= 200, checked
    print(f"{checked} mutated calls checked")
