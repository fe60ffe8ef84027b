"""restaurant handlers: success and error paths of every tool, on the real scenario DBs."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from engine.core.tools.arguments import ArgumentChecker
from engine.domains import restaurant
from tests.domains.nemo.helpers import (
    call_checked,
    checked_arguments,
    loaded,
    names,
    release_records,
    tool_spec,
)


def _db(name: str) -> dict[str, Any]:
    return restaurant.initial_db(release_records()[name])


def _order(**changes: Any) -> dict[str, Any]:
    order = {
        "items": [
            {"name": "Pepperoni Pizza", "unit_price": 9.99, "quantity": 1},
            {"name": "Extra Cheese", "unit_price": 1.5, "quantity": 1},
        ],
        "customer_name": "Charlie",
        "customer_phone": "314-527-8960",
        "total_price": 11.49,
    }
    return {**order, **changes}


def _place(db: dict[str, Any], args: dict[str, Any], validate: bool = True) -> dict[str, Any]:
    return call_checked(restaurant, "PlaceOrderTool", db, args, {"validate": validate})


def test_tables_cover_the_handlers() -> None:
    """The YAML tool table names every handler of the package once, and its writes and kinds agree."""
    table = loaded(restaurant.PLUGIN.name).domain.tools
    handled = [t.name for t in table.tools if t.kind != "harness"]
    assert sorted(handled) == sorted(restaurant.HANDLERS)
    for spec in table.tools:
        ArgumentChecker(spec.parameters, {})  # a valid JSON Schema
        if spec.kind == "harness":
            assert (spec.name, spec.handler) == ("EndConversationTool", "end_conversation")
            assert spec.ends_call == "exit"
            continue
        assert spec.handler == spec.name
        assert bool(spec.writes) == (spec.kind == "write"), spec.name
        assert (spec.action_type == spec.name) == (spec.kind == "write"), spec.name
    for name, record in release_records().items():  # the table's static options are every record's
        if name in names("restaurant"):
            for tool, options in restaurant.tool_options(record).items():
                assert dict(tool_spec(restaurant, tool).options) == options, (name, tool)


def test_get_menu_returns_the_scenario_menu() -> None:
    record = release_records()["restaurant__pizza_pepperoni"]
    result = call_checked(restaurant, "GetMenuTool", _db("restaurant__pizza_pepperoni"), {})
    assert result["status"] == "success"
    assert result["menu"] == record["agent_tools"]["GetMenuTool"]["menu"]
    assert "Pepperoni Pizza" in result["menu"]


def test_get_menu_without_a_menu_is_an_error() -> None:
    db = _db("fastbite")  # fastbite's menu is in the prompt, not behind the tool
    assert "menu" not in db
    assert call_checked(restaurant, "GetMenuTool", db, {})["error_type"] == "no_menu"


def test_place_order_appends_a_normalised_order() -> None:
    db = _db("restaurant__pizza_pepperoni")
    args = _order(
        items=[
            {"name": " Pepperoni Pizza ", "unit_price": "9.99", "quantity": "1"},
            {"name": "Extra Cheese", "unit_price": 1.5, "quantity": 1.0},
        ]
    )
    result = _place(db, args)
    assert result["status"] == "success"
    assert db["orders"] == [
        {
            "order_id": "ORD-001",
            "items": [
                {"name": "Pepperoni Pizza", "unit_price": 9.99, "quantity": 1},
                {"name": "Extra Cheese", "unit_price": 1.5, "quantity": 1},
            ],
            "customer_name": "Charlie",
            "customer_phone": "314-527-8960",
            "total_price": 11.49,
        }
    ]
    assert result["order"] == db["orders"][0]
    assert _place(db, _order())["order"]["order_id"] == "ORD-002"


def test_place_order_total_check_uses_isclose_tolerance() -> None:
    db = _db("restaurant__pizza_party_order")
    items = [
        {"name": "BBQ Chicken Pizza", "unit_price": 11.99, "quantity": 2},
        {"name": "Caesar Salad", "unit_price": 4.99, "quantity": 1},
        {"name": "Fountain Soda", "unit_price": 1.99, "quantity": 2},
    ]
    assert _place(db, _order(items=items, total_price=32.95 + 1e-6))["status"] == "success"
    wrong = _place(db, _order(items=items, total_price=32.96))
    assert wrong["error_type"] == "total_mismatch" and "32.95" in wrong["message"]


def test_place_order_with_validation_off_skips_the_value_checks() -> None:
    db = _db("restaurant__pizza_pepperoni")
    assert _place(db, _order(total_price=99.0), validate=False)["status"] == "success"
    negative = [{"name": "Extra Cheese", "unit_price": -1.5, "quantity": 1}]
    assert _place(db, _order(items=negative, total_price=-1.5), validate=False)["status"] == "success"


def test_every_scenario_turns_the_upstream_total_check_on() -> None:
    for name, record in release_records().items():
        if "PlaceOrderTool" in record["agent_tools"]:
            assert restaurant.tool_options(record) == {"PlaceOrderTool": {"validate": True}}, name


@pytest.mark.parametrize(
    ("args", "error_type"),
    [
        (
            _order(items=[{"name": "Extra Cheese", "unit_price": -1.5, "quantity": 1}], total_price=-1.5),
            "negative_price",
        ),
        (
            _order(items=[{"name": "Extra Cheese", "unit_price": 1.5, "quantity": -1}], total_price=-1.5),
            "negative_quantity",
        ),
        (_order(items=[{"name": "Extra Cheese", "unit_price": 1.5}], total_price=1.5), "invalid_items"),
        (_order(items=[{"name": "Extra Cheese", "unit_price": "cheap", "quantity": 1}]), "invalid_items"),
        (_order(items=[{"name": "  ", "unit_price": 1.5, "quantity": 1}], total_price=1.5), "invalid_items"),
        (_order(items=["Extra Cheese"]), "invalid_items"),
        (_order(items="Extra Cheese"), "invalid_items"),
        (_order(customer_name="  "), "missing_customer_name"),
        (_order(total_price="eleven"), "invalid_total"),
        (_order(total_price=11.50), "total_mismatch"),
    ],
)
def test_place_order_errors(args: dict[str, Any], error_type: str) -> None:
    db = _db("restaurant__pizza_pepperoni")
    assert _place(db, args)["error_type"] == error_type
    assert db["orders"] == []


def test_place_order_needs_an_order_book() -> None:
    db = _db("restaurant__waitlist_join_then_drop")
    assert "orders" not in db
    assert _place(db, _order())["error_type"] == "no_orders"


def test_place_order_schema_requires_upstream_fields() -> None:
    spec = tool_spec(restaurant, "PlaceOrderTool").parameters
    assert spec["required"] == ["items", "customer_name", "total_price"]
    assert (
        checked_arguments(restaurant, "PlaceOrderTool", {**_order(), "total_price": "11.49"})["total_price"]
        == 11.49
    )


def test_string_prices_inside_items_are_coerced_by_the_engine() -> None:
    items = [{"name": "Extra Cheese", "unit_price": "1.50", "quantity": "1"}]
    clean = checked_arguments(restaurant, "PlaceOrderTool", _order(items=items, total_price=1.5))
    assert clean["items"][0] == {"name": "Extra Cheese", "unit_price": 1.5, "quantity": 1}


def test_join_waitlist_appends_at_the_end() -> None:
    db = _db("restaurant__waitlist_join_then_drop")
    start = copy.deepcopy(db["waitlist"])
    result = call_checked(
        restaurant, "JoinWaitListTool", db, {"name": "Sam", "phone": "483-926-1057", "party_size": 2}
    )
    assert result["status"] == "success"
    assert result["position"] == result["total_in_waitlist"] == len(start) + 1 == 11
    assert db["waitlist"] == [*start, {"name": "Sam", "phone": "483-926-1057", "party_size": 2}]


@pytest.mark.parametrize(
    ("args", "error_type"),
    [
        ({"name": "Sam", "phone": "483-926-1057", "party_size": 0}, "invalid_party_size"),
        ({"name": "Sam", "phone": "483-926-1057", "party_size": 2.5}, "invalid_party_size"),
        ({"name": "", "phone": "483-926-1057", "party_size": 2}, "missing_name"),
        ({"name": "Sam", "phone": " ", "party_size": 2}, "missing_phone"),
    ],
)
def test_join_waitlist_errors(args: dict[str, Any], error_type: str) -> None:
    db = _db("restaurant__waitlist_join_then_drop")
    assert call_checked(restaurant, "JoinWaitListTool", db, args)["error_type"] == error_type


def test_waitlist_tools_need_a_waitlist() -> None:
    db = _db("restaurant__pizza_pepperoni")
    join = call_checked(restaurant, "JoinWaitListTool", db, {"name": "Sam", "phone": "1", "party_size": 2})
    assert join["error_type"] == "no_waitlist"
    assert call_checked(restaurant, "DropWaitListTool", db, {"name": "Sam"})["error_type"] == "no_waitlist"
    assert call_checked(restaurant, "GetWaitlistTool", db, {})["error_type"] == "no_waitlist"


def test_drop_waitlist_removes_every_entry_of_that_name() -> None:
    db = _db("restaurant__waitlist_join_then_drop")
    start = copy.deepcopy(db["waitlist"])
    for _ in range(2):
        call_checked(
            restaurant, "JoinWaitListTool", db, {"name": "Sam", "phone": "483-926-1057", "party_size": 2}
        )
    result = call_checked(restaurant, "DropWaitListTool", db, {"name": "Sam"})
    assert result["status"] == "success" and result["removed"] == 2
    assert result["remaining_in_waitlist"] == len(start)
    assert db["waitlist"] == start


def test_drop_waitlist_of_an_unknown_name_is_an_error() -> None:
    db = _db("restaurant__waitlist_join_then_drop")
    call_checked(
        restaurant, "JoinWaitListTool", db, {"name": "Sam", "phone": "483-926-1057", "party_size": 2}
    )
    assert (
        call_checked(restaurant, "DropWaitListTool", db, {"name": "sam"})["error_type"] == "not_on_waitlist"
    )
    assert call_checked(restaurant, "DropWaitListTool", db, {"name": "  "})["error_type"] == "missing_name"
    assert db["waitlist"][-1]["name"] == "Sam"


def test_get_waitlist_returns_a_copy_in_order() -> None:
    db = _db("restaurant__waitlist_join_then_drop")
    result = call_checked(restaurant, "GetWaitlistTool", db, {})
    assert result["status"] == "success"
    assert result["waitlist"] == db["waitlist"] and result["total_in_waitlist"] == 10
    result["waitlist"].clear()
    assert len(db["waitlist"]) == 10


def test_predicates_read_the_db() -> None:
    db = _db("restaurant__waitlist_join_then_drop")
    assert restaurant.PREDICATES["order_count"](db) == 0
    assert restaurant.PREDICATES["waitlist_names"](db)[:2] == ["Alice", "Bob"]
    orders = _db("restaurant__pizza_pepperoni")
    _place(orders, _order())
    assert restaurant.PREDICATES["order_count"](orders) == 1
    assert restaurant.PREDICATES["waitlist_names"](orders) == []
