"""tau2 retail pending-order changes that move money: modify items, modify payment.

Each handler is ``(db, args, ctx) -> result`` and mirrors the same-named tool of tau2 17e07b1's
retail toolkit, bugs that change an end state included (docs/domains/tau2_airline_retail.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.core.tools.context import CallContext
from engine.domains.tau2_common.coerce import as_float
from engine.domains.tau2_common.results import ToolFailure, ok, tau2_tool
from engine.domains.tau2_retail import shapes
from engine.domains.tau2_retail.orders import is_gift_card, own_user
from engine.domains.tau2_retail.read import count_check, order_of, payment_method_of, variant_of


@tau2_tool
def modify_pending_order_items(
    db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext
) -> dict[str, Any]:
    """Swap items of a ``pending`` order for other variants; returns the order as JSON.

    The difference is the sum of (new variant price − old item price), not rounded. One entry is
    appended to ``payment_history``: ``payment`` when the difference is positive, else ``refund``,
    with amount ``abs(difference)`` (unrounded float, e.g. ``12.340000000000003``); a gift card's
    balance is reduced by the difference and rounded to cents. Then tau2's bug, kept: every listed
    item gets the new id it is paired with but the price and options of the *last* pair's new
    variant. ``status`` becomes ``pending (item modified)``.
    Errors, in order: ``not_found`` ``Order not found``; ``invalid_state`` ``Non-pending order cannot
    be modified``; ``not_found`` ``<id> not found``; ``invalid_argument`` ``The number of items to be
    exchanged should match``; per pair ``invalid_argument`` ``The new item id should be different
    from the old item id``, ``not_found`` ``Variant not found``, ``unavailable`` ``New item <id> not
    found or available``; ``not_found`` ``User not found`` / ``Payment method not found``;
    ``payment`` ``Insufficient gift card balance to pay for the new item``.
    Writes ``/orders/{order_id}``, ``/users/-``.
    """
    order = order_of(db, args["order_id"])
    if order["status"] != "pending":
        raise ToolFailure("invalid_state", "Non-pending order cannot be modified")
    item_ids, new_item_ids = list(args["item_ids"]), list(args["new_item_ids"])
    count_check(item_ids, order, "{item_id} not found")
    if len(item_ids) != len(new_item_ids):
        raise ToolFailure("invalid_argument", "The number of items to be exchanged should match")
    diff_price: Any = 0
    variant: dict[str, Any] | None = None
    for item_id, new_item_id in zip(item_ids, new_item_ids, strict=True):
        if item_id == new_item_id:
            raise ToolFailure("invalid_argument", "The new item id should be different from the old item id")
        item = next(i for i in order["items"] if i["item_id"] == item_id)
        variant = variant_of(db, item["product_id"], new_item_id)
        if not variant["available"]:
            raise ToolFailure("unavailable", f"New item {new_item_id} not found or available")
        diff_price += variant["price"] - item["price"]
    method_id = args["payment_method_id"]
    method = payment_method_of(db, order["user_id"], method_id)
    if is_gift_card(method) and method["balance"] < diff_price:
        raise ToolFailure("payment", "Insufficient gift card balance to pay for the new item")

    order["payment_history"].append(
        {
            "transaction_type": "payment" if diff_price > 0 else "refund",
            "amount": as_float(abs(diff_price)),
            "payment_method_id": method_id,
        }
    )
    if is_gift_card(method):
        card = own_user(db, order["user_id"])["payment_methods"][method_id]
        card["balance"] = round(card["balance"] - diff_price, 2)
    for item_id, new_item_id in zip(item_ids, new_item_ids, strict=True):
        item = next(i for i in order["items"] if i["item_id"] == item_id)
        assert variant is not None  # the loop above ran for this pair
        item["item_id"] = new_item_id
        item["price"] = variant["price"]
        item["options"] = dict(variant["options"])
    order["status"] = "pending (item modified)"
    return ok(order, shapes.ORDER)


@tau2_tool
def modify_pending_order_payment(
    db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext
) -> dict[str, Any]:
    """Move a pending order's single payment to another method; returns the order as JSON.

    Appends a ``payment`` of the amount with the new method and a ``refund`` of it to the old one;
    a new gift card is charged and an old gift card credited (balances rounded to cents). The
    status stays as it is (so the order can later be cancelled, refunding all three entries).
    Errors, in order: ``not_found`` ``Order not found``; ``invalid_state`` ``Non-pending order cannot
    be modified`` (statuses containing ``pending`` pass); ``not_found`` ``User not found`` /
    ``Payment method not found``; ``invalid_state`` ``There should be exactly one payment for a
    pending order``; ``invalid_argument`` ``The new payment method should be different from the
    current one``; ``payment`` ``Insufficient gift card balance to pay for the order``; and, after
    tau2 has already changed the order, ``Payment method not found`` when the old method is gone
    from the user (the engine rolls back). Writes ``/orders/{order_id}``, ``/users/-``.
    """
    order = order_of(db, args["order_id"])
    if "pending" not in order["status"]:
        raise ToolFailure("invalid_state", "Non-pending order cannot be modified")
    method_id = args["payment_method_id"]
    method = payment_method_of(db, order["user_id"], method_id)
    history = order["payment_history"]
    if len(history) != 1 or history[0]["transaction_type"] != "payment":
        raise ToolFailure("invalid_state", "There should be exactly one payment for a pending order")
    old_id = history[0]["payment_method_id"]
    if old_id == method_id:
        raise ToolFailure(
            "invalid_argument", "The new payment method should be different from the current one"
        )
    amount = history[0]["amount"]
    if is_gift_card(method) and method["balance"] < amount:
        raise ToolFailure("payment", "Insufficient gift card balance to pay for the order")
    history.extend(
        [
            {"transaction_type": "payment", "amount": as_float(amount), "payment_method_id": method_id},
            {"transaction_type": "refund", "amount": as_float(amount), "payment_method_id": old_id},
        ]
    )
    user_id = order["user_id"]
    if is_gift_card(method):
        card = own_user(db, user_id)["payment_methods"][method_id]
        card["balance"] = round(card["balance"] - amount, 2)
    old_method = payment_method_of(db, user_id, old_id)
    if is_gift_card(old_method):
        card = own_user(db, user_id)["payment_methods"][old_id]
        card["balance"] = round(card["balance"] + amount, 2)
    return ok(order, shapes.ORDER)
