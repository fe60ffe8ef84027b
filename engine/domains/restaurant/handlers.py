"""Handlers of the restaurant domain (upstream GetMenuTool, PlaceOrderTool, JoinWaitListTool,
DropWaitListTool, GetWaitlistTool of NeMo labs-Voice-Agent 1a83139; written anew from their
behaviour).

DB shape (built by :func:`engine.domains.restaurant.scenario.initial_db`)::

    {"menu": str,                                   # only when the scenario has a menu tool
     "orders": [order, ...],                        # only when it takes orders
     "waitlist": [{"name", "phone", "party_size"}]} # only when it keeps a waitlist

An order is ``{order_id: "ORD-001", items: [{name, unit_price (dollars), quantity}],
customer_name, customer_phone, total_price (dollars)}``. A tool whose part of the DB is absent
returns an error (``no_menu``, ``no_orders``, ``no_waitlist``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from engine.core.plugin import Handler
from engine.core.tools.context import CallContext
from engine.domains.nemo_common.results import error, number, ok, text

#: ``np.isclose`` defaults, which upstream's total check uses: |a - b| <= ATOL + RTOL * |b|.
TOTAL_RTOL = 1e-5
TOTAL_ATOL = 1e-8


def get_menu(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    """GetMenuTool: ``{status, menu}`` with the scenario's menu text; ``no_menu`` when the DB has
    none (a scenario whose menu is in the prompt). No arguments, no write."""
    menu = db.get("menu")
    if not isinstance(menu, str) or not menu.strip():
        return error("no_menu", "No menu is available from this tool here.")
    return ok(menu=menu)


def _order_items(raw: Any, validate: bool) -> tuple[list[dict[str, Any]], float] | dict[str, Any]:
    """Checked, normalised order lines and their computed total, or an error result."""
    if not isinstance(raw, list):
        return error("invalid_items", "items must be a list of {name, unit_price, quantity}.")
    lines: list[dict[str, Any]] = []
    total = 0.0
    for position, item in enumerate(raw, start=1):
        if not isinstance(item, Mapping):
            return error(
                "invalid_items", f"Item {position} is not an object with name, unit_price, quantity."
            )
        for key in ("name", "unit_price", "quantity"):
            if key not in item:
                return error("invalid_items", f"Item {position} has no '{key}'.")
        name = text(item["name"])
        price, quantity = number(item["unit_price"]), number(item["quantity"])
        if not name:
            return error("invalid_items", f"Item {position} has an empty name.")
        if price is None or quantity is None:
            return error("invalid_items", f"Item '{name}' needs a numeric unit_price and quantity.")
        if validate and price < 0:
            return error("negative_price", f"The unit price of '{name}' is negative.")
        if validate and quantity < 0:
            return error("negative_quantity", f"The quantity of '{name}' is negative.")
        count: int | float = int(quantity) if quantity.is_integer() else quantity
        lines.append({"name": name, "unit_price": price, "quantity": count})
        total += price * quantity
    return lines, total


def place_order(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    """PlaceOrderTool: append an order to ``orders``.

    Args: ``items`` ([{name, unit_price, quantity}], numbers may be numeric strings),
    ``customer_name`` (non-blank), ``customer_phone`` (optional), ``total_price`` (dollars).
    Every item needs the three keys and numbers. With ``ctx.options["validate"]`` (default true,
    as upstream's truthy ``auto_validate="False"`` makes it) prices and quantities must not be
    negative and ``total_price`` must equal the sum of price x quantity within np.isclose
    tolerance. Errors: ``no_orders``, ``invalid_items``, ``negative_price``,
    ``negative_quantity``, ``missing_customer_name``, ``invalid_total``, ``total_mismatch``.
    Returns ``{status, message, order}``.
    """
    orders = db.get("orders")
    if not isinstance(orders, list):
        return error("no_orders", "This restaurant takes no orders through this tool.")
    validate = bool(ctx.options.get("validate", True))
    checked = _order_items(args.get("items"), validate)
    if isinstance(checked, dict):
        return checked
    lines, computed = checked
    name = text(args.get("customer_name"))
    if not name:
        return error("missing_customer_name", "customer_name is required.")
    total = number(args.get("total_price"))
    if total is None:
        return error("invalid_total", "total_price must be a number.")
    if validate and abs(computed - total) > TOTAL_ATOL + TOTAL_RTOL * abs(total):
        return error(
            "total_mismatch",
            f"The total price is wrong: the items add up to {computed:.2f}, not {total:.2f}.",
        )
    phone = args.get("customer_phone")
    order = {
        "order_id": f"ORD-{len(orders) + 1:03d}",
        "items": lines,
        "customer_name": name,
        "customer_phone": phone.strip() if isinstance(phone, str) else "",
        "total_price": total,
    }
    orders.append(order)
    return ok(message=f"Order placed for {name}, total {total:.2f}.", order=order)


def _waitlist(db: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    waitlist = db.get("waitlist")
    return waitlist if isinstance(waitlist, list) else None


def join_waitlist(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    """JoinWaitListTool: append ``{name, phone, party_size}`` to ``waitlist``.

    ``name`` and ``phone`` must not be blank, ``party_size`` is an integer >= 1. The same name may
    be listed twice, as upstream allows. Errors: ``no_waitlist``, ``missing_name``,
    ``missing_phone``, ``invalid_party_size``. Returns ``{status, message, position,
    total_in_waitlist}`` (position is 1-based, the last place).
    """
    waitlist = _waitlist(db)
    if waitlist is None:
        return error("no_waitlist", "This restaurant keeps no waitlist here.")
    name, phone = text(args.get("name")), text(args.get("phone"))
    size = number(args.get("party_size"))
    if not name:
        return error("missing_name", "name is required.")
    if not phone:
        return error("missing_phone", "phone is required.")
    if size is None or not size.is_integer() or size < 1:
        return error("invalid_party_size", "party_size must be a whole number of at least 1.")
    waitlist.append({"name": name, "phone": phone, "party_size": int(size)})
    position = len(waitlist)
    return ok(message=f"{name} has joined the waitlist.", position=position, total_in_waitlist=position)


def drop_waitlist(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    """DropWaitListTool: remove every ``waitlist`` entry whose name equals ``name`` exactly.

    Errors: ``no_waitlist``, ``missing_name``, and ``not_on_waitlist`` when no entry has that name
    (upstream reports ``success: false`` but still pushes a summary; here nothing is recorded).
    Returns ``{status, message, removed, remaining_in_waitlist}``.
    """
    waitlist = _waitlist(db)
    if waitlist is None:
        return error("no_waitlist", "This restaurant keeps no waitlist here.")
    name = text(args.get("name"))
    if not name:
        return error("missing_name", "name is required.")
    keep = [entry for entry in waitlist if entry.get("name") != name]
    removed = len(waitlist) - len(keep)
    if not removed:
        return error("not_on_waitlist", f"{name} is not on the waitlist.")
    waitlist[:] = keep  # in place: the container, not its entries, changes
    return ok(message=f"{name} has left the waitlist.", removed=removed, remaining_in_waitlist=len(waitlist))


def get_waitlist(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    """GetWaitlistTool: ``{status, waitlist (a copy, in order), total_in_waitlist}``;
    ``no_waitlist`` when the DB keeps none. No arguments, no write."""
    waitlist = _waitlist(db)
    if waitlist is None:
        return error("no_waitlist", "This restaurant keeps no waitlist here.")
    return ok(waitlist=copy.deepcopy(waitlist), total_in_waitlist=len(waitlist))


HANDLERS: dict[str, Handler] = {
    "GetMenuTool": get_menu,
    "PlaceOrderTool": place_order,
    "JoinWaitListTool": join_waitlist,
    "DropWaitListTool": drop_waitlist,
    "GetWaitlistTool": get_waitlist,
}
