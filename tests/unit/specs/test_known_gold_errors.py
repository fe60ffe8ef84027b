"""``known_gold_errors``: a gold call that fails is a validation problem unless the domain declares
it (then a warning) or the gold trace itself records it failing; a declaration that does not hold
(the call succeeds, the trace has no such call, no scenario has the id) is a problem too. A tiny
shop domain on the ``mock`` plugin, written into a temporary folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.domains.registry import plugins
from engine.spec.validate import validate_specs

DOMAIN = """
name: shop
description: A shop whose gold actions sometimes fail.
max_duration: 60
success_signals: [db_state_match, clean_exit]
scenarios: {name: "shop__{id}"}
dataset: {path: shop-1.0/tasks.json, key: id}
initial_db: {file: shop-1.0/db.json}
expected_db: {from: gold_replay}
gold_trace: {pointer: /actions, format: actions}
user: {persona: /persona, goal: /goal}
policy: {instructions: Cancel placed orders only.}
tool_table: tools.yaml
templates: {agent: agent.md.j2, user: user.md.j2}
plugin: mock
"""

TOOLS = """
tools:
  - {name: get_order, kind: read, handler: mock_get_order, description: Look an order up.,
     parameters: {type: object, properties: {order_id: {type: string}}, required: [order_id]}}
  - {name: cancel_order, kind: write, handler: mock_cancel_order, action_type: cancel_order,
     writes: ["/orders/{order_id}"], description: Cancel a placed order.,
     parameters: {type: object, properties: {order_id: {type: string}}, required: [order_id]}}
  - {name: end_conversation, kind: harness, handler: end_conversation, ends_call: exit,
     description: Hang up., parameters: {type: object, properties: {}, required: []}}
"""


def _call(name: str, order: str) -> dict:
    return {"name": name, "arguments": {"order_id": order}}


TASKS = [
    {
        "id": "T1",
        "persona": None,
        "goal": "Check",
        "actions": [_call("get_order", "O-9"), _call("cancel_order", "O-1")],
    },
    {"id": "T2", "persona": None, "goal": "Cancel", "actions": [_call("cancel_order", "O-2")]},
    {"id": "T3", "persona": None, "goal": "Cancel", "actions": [_call("get_order", "O-8")]},
    {"id": "T4", "persona": None, "goal": "Cancel", "actions": [_call("cancel_order", "O-1")]},
]
DB = {"orders": {"O-1": {"status": "placed"}, "O-2": {"status": "shipped"}}}


@pytest.fixture
def shop(tmp_path: Path) -> tuple[Path, Path]:
    spec = tmp_path / "specs" / "shop"
    spec.mkdir(parents=True)
    (spec / "tools.yaml").write_text(TOOLS, encoding="utf-8")
    (spec / "agent.md.j2").write_text("{{ policy_instructions }}\n", encoding="utf-8")
    (spec / "user.md.j2").write_text("{{ user.goal }}\n", encoding="utf-8")
    data = tmp_path / "data" / "shop-1.0"
    data.mkdir(parents=True)
    (data / "tasks.json").write_text(json.dumps(TASKS), encoding="utf-8")
    (data / "db.json").write_text(json.dumps(DB), encoding="utf-8")
    return spec, tmp_path / "data"


def _validate(spec: Path, data: Path, known: str) -> list[str]:
    (spec / "domain.yaml").write_text(DOMAIN + known, encoding="utf-8")
    report = validate_specs(spec, data, plugins=plugins())
    return report.lines()


def test_declared_failures_warn_and_the_rest_fail(shop: tuple[Path, Path]) -> None:
    spec, data = shop
    lines = _validate(
        spec,
        data,
        "known_gold_errors:\n"
        "  - {id: T1, call: 1, tool: get_order, note: the customer first gives a wrong number}\n"
        "  - {id: T2, call: 1, tool: cancel_order, note: the order has shipped}\n"
        "  - {id: T4, call: 1, tool: cancel_order}\n"
        "  - {id: T4, call: 2, tool: get_order}\n"
        "  - {id: T9, call: 1, tool: get_order}\n",
    )
    where = f"{spec / 'domain.yaml'}"
    assert lines[0].endswith("$.known_gold_errors[4].id: no scenario has record id 'T9'")
    assert any(
        line.startswith(where)
        and ": warning: known gold error: call 1 (get_order) fails as declared: "
        "Order O-9 not found (the customer first gives a wrong number) [shop__T1]"
        in line
        for line in lines
    )
    t2 = next(line for line in lines if line.endswith("[shop__T2]"))
    assert "(the order has shipped); no gold write succeeds, so the expected DB is the initial DB" in t2
    failed = "\n".join(lines)
    assert "gold call get_order failed: not_found: Order O-8 not found" in failed  # T3: undeclared
    assert "known_gold_errors declares gold call 1 (cancel_order) failing, but it succeeds" in failed
    assert "known_gold_errors names gold call 2 (get_order), which the gold trace lacks" in failed
    assert lines[-1].endswith("1 problem(s) found; specs not valid")


def test_all_declared_is_valid_and_counted(shop: tuple[Path, Path]) -> None:
    spec, data = shop
    lines = _validate(
        spec,
        data,
        "known_gold_errors:\n"
        "  - {id: T1, call: 1, tool: get_order}\n"
        "  - {id: T2, call: 1, tool: cancel_order}\n"
        "  - {id: T3, call: 1, tool: get_order}\n",
    )
    assert sum(": warning: " in line for line in lines) == 3
    assert lines[-1].endswith("gold replay 4/4 (3 known gold error(s) in 3 scenario(s), warnings above)")
