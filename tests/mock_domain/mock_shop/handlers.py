"""Handlers and predicates of the tiny ``mock`` shop of the tests (``tests/mock_domain/``): a shop with
orders and store credit. DB shape: ``{_current_date, customers: {id: {name, credit}},
orders: {id: {customer_id, status, total}}, credits: [{customer_id, credit_amount, reason}]}``.
Amounts are dollars.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from engine.core.tools.context import CallContext


def _error(kind: str, message: str) -> dict[str, Any]:
    return {"status": "error", "error_type": kind, "message": message}


def get_order(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    """Read ``orders[order_id]`` (a copy); ``not_found`` when absent."""
    order = db.get("orders", {}).get(args["order_id"])
    if order is None:
        return _error("not_found", f"Order {args['order_id']} not found")
    return {"status": "success", "order": copy.deepcopy(order)}


def cancel_order(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    """Set a ``placed`` order to ``cancelled``; ``not_found`` / ``not_cancellable`` otherwise."""
    order = db.get("orders", {}).get(args["order_id"])
    if order is None:
        return _error("not_found", f"Order {args['order_id']} not found")
    if order.get("status") != "placed":
        return _error("not_cancellable", f"Order {args['order_id']} is {order.get('status')}")
    order["status"] = "cancelled"
    return {"status": "success", "order_id": args["order_id"], "order_status": "cancelled"}


def issue_credit(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    """Add ``credit_amount`` dollars to the customer's credit and log it in ``credits``."""
    customer = db.get("customers", {}).get(args["customer_id"])
    if customer is None:
        return _error("not_found", f"Customer {args['customer_id']} not found")
    amount = float(args["credit_amount"])
    if amount <= 0:
        return _error("invalid_amount", "credit_amount must be positive")
    customer["credit"] = float(customer.get("credit", 0)) + amount
    db.setdefault("credits", []).append(
        {"customer_id": args["customer_id"], "credit_amount": amount, "reason": args.get("reason", "")}
    )
    return {"status": "success", "customer_id": args["customer_id"], "credit_balance": customer["credit"]}


def mock_order_status(db: Mapping[str, Any], order_id: str) -> Any:
    """``orders[order_id].status``."""
    order = db.get("orders", {}).get(order_id)
    if order is None:
        raise KeyError(f"order {order_id!r} not in DB")
    return order.get("status")


def mock_credit_balance(db: Mapping[str, Any], customer_id: str) -> float:
    """``customers[customer_id].credit`` in dollars (0 when unset)."""
    return float(db.get("customers", {}).get(customer_id, {}).get("credit", 0))
