"""tau2 retail order writes: cancel, exchange, return, change the shipping or the user's address.

Each handler is ``(db, args, ctx) -> result`` and mirrors the same-named tool of tau2 17e07b1's
retail toolkit, checks and quirks included (docs/domains/tau2_airline_retail.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.core.tools.context import CallContext
from engine.core.tools.writeset import json_copy
from engine.domains.tau2_common.coerce import as_float
from engine.domains.tau2_common.results import ToolFailure, ok, tau2_tool
from engine.domains.tau2_retail import shapes
from engine.domains.tau2_retail.read import count_check, order_of, payment_method_of, user_of, variant_of

CANCEL_REASONS = ("no longer needed", "ordered by mistake")


def own_user(db: dict[str, Any], user_id: str) -> dict[str, Any]:
    """Replace the user entry by a copy and return the copy (for tools declaring ``/users/-``)."""
    user = json_copy(db["users"][user_id])
    db["users"][user_id] = user
    return user


def is_gift_card(method: Mapping[str, Any]) -> bool:
    """Whether a payment method is a gift card (tau2 decides by the model type, i.e. ``source``)."""
    return method.get("source") == "gift_card"


def address_from(args: Mapping[str, Any]) -> dict[str, Any]:
    """The address record tau2 builds from the tool's six address arguments (model order)."""
    return {k: args[k] for k in ("address1", "address2", "city", "country", "state", "zip")}


@tau2_tool
def cancel_pending_order(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    """Cancel a ``pending`` order; returns it as JSON.

    For every entry of ``payment_history`` (whatever its type) a refund of its amount to its
    method is appended, and a gift card gets the amount back at once (balance rounded to cents).
    ``status`` becomes ``cancelled`` and ``cancel_reason`` the reason.
    Errors: ``not_found`` ``Order not found``; ``invalid_state`` ``Non-pending order cannot be
    cancelled`` (``pending (item modified)`` included); ``invalid_argument`` ``Invalid reason``;
    per payment ``User not found`` / ``Payment method not found`` (tau2 has already credited the
    earlier gift cards then; the engine rolls back). Writes ``/orders/{order_id}``, ``/users/-``.
    """
    order = order_of(db, args["order_id"])
    if order["status"] != "pending":
        raise ToolFailure("invalid_state", "Non-pending order cannot be cancelled")
    reason = args["reason"]
    if reason not in CANCEL_REASONS:
        raise ToolFailure("invalid_argument", "Invalid reason")
    refunds: list[dict[str, Any]] = []
    owned: dict[str, dict[str, Any]] = {}
    for payment in order["payment_history"]:
        method_id = payment["payment_method_id"]
        refunds.append(
            {
                "transaction_type": "refund",
                "amount": as_float(payment["amount"]),
                "payment_method_id": method_id,
            }
        )
        user_id = user_of(db, order["user_id"])["user_id"]
        method = payment_method_of(db, user_id, method_id)
        if is_gift_card(method):
            if user_id not in owned:
                owned[user_id] = own_user(db, user_id)
            card = owned[user_id]["payment_methods"][method_id]
            card["balance"] = round(card["balance"] + payment["amount"], 2)
    order["status"] = "cancelled"
    order["cancel_reason"] = reason
    order["payment_history"].extend(refunds)
    return ok(order, shapes.ORDER)


@tau2_tool
def exchange_delivered_order_items(
    db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext
) -> dict[str, Any]:
    """Ask for an exchange of items of a ``delivered`` order; returns the order as JSON.

    The price difference is the sum of (new variant price − old item price) over the pairs,
    rounded to cents (an int 0 when no items are listed). Only the order changes: ``status``
    ``exchange requested``, ``exchange_items`` / ``exchange_new_items`` sorted,
    ``exchange_payment_method_id``, ``exchange_price_difference``; no balance is touched.
    Errors, in order: ``not_found`` ``Order not found``; ``invalid_state`` ``Non-delivered order
    cannot be exchanged``; ``not_found`` ``Number of <id> not found.``; ``invalid_argument`` ``The
    number of items to be exchanged should match.``; ``not_found`` ``Variant not found``;
    ``unavailable`` ``New item <id> not found or available``; ``not_found`` ``User not found`` /
    ``Payment method not found``; ``payment`` ``Insufficient gift card balance to pay for the price
    difference``. Writes ``/orders/{order_id}``.
    """
    order = order_of(db, args["order_id"])
    if order["status"] != "delivered":
        raise ToolFailure("invalid_state", "Non-delivered order cannot be exchanged")
    item_ids, new_item_ids = list(args["item_ids"]), list(args["new_item_ids"])
    count_check(item_ids, order, "Number of {item_id} not found.")
    if len(item_ids) != len(new_item_ids):
        raise ToolFailure("invalid_argument", "The number of items to be exchanged should match.")
    diff_price: Any = 0
    for item_id, new_item_id in zip(item_ids, new_item_ids, strict=True):
        item = next(i for i in order["items"] if i["item_id"] == item_id)
        variant = variant_of(db, item["product_id"], new_item_id)
        if not variant["available"]:
            raise ToolFailure("unavailable", f"New item {new_item_id} not found or available")
        diff_price += variant["price"] - item["price"]
    diff_price = round(diff_price, 2)
    method_id = args["payment_method_id"]
    method = payment_method_of(db, order["user_id"], method_id)
    if is_gift_card(method) and method["balance"] < diff_price:
        raise ToolFailure("payment", "Insufficient gift card balance to pay for the price difference")
    order["status"] = "exchange requested"
    order["exchange_items"] = sorted(item_ids)
    order["exchange_new_items"] = sorted(new_item_ids)
    order["exchange_payment_method_id"] = method_id
    order["exchange_price_difference"] = diff_price
    return ok(order, shapes.ORDER)


@tau2_tool
def return_delivered_order_items(
    db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext
) -> dict[str, Any]:
    """Ask for a return of items of a ``delivered`` order; returns the order as JSON.

    ``status`` becomes ``return requested``, ``return_items`` the sorted ids,
    ``return_payment_method_id`` the method; no refund is recorded and no balance changes.
    Errors, in order: ``not_found`` ``Order not found``; ``invalid_state`` ``Non-delivered order
    cannot be returned``; ``not_found`` ``User not found`` / ``Payment method not found``;
    ``payment`` ``Payment method should be the original payment method`` (any gift card of the
    user is accepted); ``not_found`` ``Some item not found``. Writes ``/orders/{order_id}``.
    """
    order = order_of(db, args["order_id"])
    if order["status"] != "delivered":
        raise ToolFailure("invalid_state", "Non-delivered order cannot be returned")
    user = user_of(db, order["user_id"])
    method_id = args["payment_method_id"]
    method = payment_method_of(db, user["user_id"], method_id)
    if not is_gift_card(method):
        if not order["payment_history"]:
            raise ToolFailure("invalid_state", "list index out of range")
        if method_id != order["payment_history"][0]["payment_method_id"]:
            raise ToolFailure("payment", "Payment method should be the original payment method")
    item_ids = list(args["item_ids"])
    count_check(item_ids, order, "Some item not found")
    order["status"] = "return requested"
    order["return_items"] = sorted(item_ids)
    order["return_payment_method_id"] = method_id
    return ok(order, shapes.ORDER)


@tau2_tool
def modify_pending_order_address(
    db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext
) -> dict[str, Any]:
    """Replace the shipping address of a pending order (any status containing ``pending``,
    ``pending (item modified)`` included); returns the order as JSON.
    Errors: ``not_found`` ``Order not found``; ``invalid_state`` ``Non-pending order cannot be
    modified``. Writes ``/orders/{order_id}``.
    """
    order = order_of(db, args["order_id"])
    if "pending" not in order["status"]:
        raise ToolFailure("invalid_state", "Non-pending order cannot be modified")
    order["address"] = address_from(args)
    return ok(order, shapes.ORDER)


@tau2_tool
def modify_user_address(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    """Replace the user's default address; returns the user as JSON (orders' addresses are not
    touched). Error ``not_found`` ``User not found``. Writes ``/users/{user_id}``.
    """
    user = user_of(db, args["user_id"])
    user["address"] = address_from(args)
    return ok(user, shapes.USER)
