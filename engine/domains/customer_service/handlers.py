"""Handlers of the customer_service domain (upstream LookupAccountTool, CheckOrderStatusTool,
ProcessRefundTool, StartItemReturnTool, ChangePlanTool, UnlockAccountTool, CancelSubscriptionTool
and ResolveTicketTool of NeMo labs-Voice-Agent 1a83139; written anew from their behaviour).

DB shape (built by :func:`engine.domains.customer_service.scenario.initial_db`)::

    {"_current_date": "YYYY-MM-DD",
     "accounts": {account_id: {name, email, plan, balance: "$142.50", ...,
                               recent_charges?: [{description, amount: "-$49.99", date}],
                               orders?: {order_id: {product, status, ...}}}},
     "plans": {plan_name: "$19.99"},                 # monthly rate of each plan on offer
     "tickets": [{ticket_id, account_id, issue_summary, resolution_type, resolution_details}]}

Money stays in upstream's text form (``"$1,299.00"``, ``"-$49.99"``). Account and order ids
are matched exactly as given: the tool table's write paths (``/accounts/{account_id}``) are
built from the raw argument, so a handler must never write under a normalised key.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from engine.core.plugin import Handler
from engine.core.tools.context import CallContext
from engine.domains.nemo_common.results import error, number, ok, text

#: The resolution types upstream's ResolveTicketTool accepts (its default list, used by all 10).
RESOLUTION_TYPES: tuple[str, ...] = ("refund", "replacement", "information", "escalation", "account_change")
#: What a refund entry's description starts with, before the agent's own description.
REFUND_PREFIX = "Refund - "
RETURN_STATUS = "Return Started"
UNLOCKED_STATUS = "Active"
CANCELED_PLAN = "Canceled"
ZERO_RATE = "$0.00"


def parse_money(value: Any) -> float | None:
    """``"$1,234.56"`` -> 1234.56, ``"-$49.99"`` -> -49.99; a number passes through; None when
    the text is not money."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, str):
        return None
    raw = value.strip().replace(",", "")
    amount = number(raw.lstrip("+-").lstrip("$"))
    if amount is None:
        return None
    return -amount if raw.startswith("-") else amount


def format_money(value: float) -> str:
    """Dollars as upstream writes them: ``1234.5`` -> ``"$1,234.50"``, ``-49.99`` -> ``"-$49.99"``
    (rounded to cents; a zero is never negative)."""
    cents = round(value, 2) + 0.0
    return f"-${abs(cents):,.2f}" if cents < 0 else f"${cents:,.2f}"


def _account(db: Mapping[str, Any], args: Mapping[str, Any]) -> dict[str, Any] | None:
    key = args.get("account_id")
    account = (db.get("accounts") or {}).get(key) if isinstance(key, str) else None
    return account if isinstance(account, dict) else None


def _no_account(args: Mapping[str, Any]) -> dict[str, Any]:
    return error("account_not_found", f"Account '{args.get('account_id')}' not found.")


def _order(account: Mapping[str, Any], args: Mapping[str, Any]) -> dict[str, Any] | None:
    key = args.get("order_id")
    order = (account.get("orders") or {}).get(key) if isinstance(key, str) else None
    return order if isinstance(order, dict) else None


def _no_order(args: Mapping[str, Any]) -> dict[str, Any]:
    return error(
        "order_not_found", f"Order '{args.get('order_id')}' not found for account '{args.get('account_id')}'."
    )


def lookup_account(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    """LookupAccountTool(account_id): ``{status, account_id, account}`` (a copy);
    ``account_not_found``."""
    account = _account(db, args)
    if account is None:
        return _no_account(args)
    return ok(account_id=args["account_id"], account=account)


def check_order_status(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    """CheckOrderStatusTool(account_id, order_id): ``{status, order_id, order}`` (a copy);
    ``account_not_found``, ``order_not_found``."""
    account = _account(db, args)
    if account is None:
        return _no_account(args)
    order = _order(account, args)
    if order is None:
        return _no_order(args)
    return ok(order_id=args["order_id"], order=order)


def process_refund(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    """ProcessRefundTool(account_id, amount, description, date): append
    ``{description: "Refund - <description>", amount: "-$<amount>", date}`` to the account's
    ``recent_charges`` and lower its ``balance`` by ``amount`` dollars.

    Stricter than upstream: ``amount`` must be a positive number, ``description`` non-blank and
    ``date`` a real ``YYYY-MM-DD`` date. Errors: ``account_not_found``, ``invalid_amount``,
    ``missing_description``, ``invalid_date``, ``invalid_balance`` (the stored balance is not
    money). Returns ``{status, account_id, refund_entry, new_balance}``.
    """
    account = _account(db, args)
    if account is None:
        return _no_account(args)
    amount = number(args.get("amount"))
    if amount is None or amount <= 0:
        return error("invalid_amount", "amount must be a positive number of dollars.")
    description = text(args.get("description"))
    if not description:
        return error("missing_description", "description is required.")
    date = text(args.get("date"))
    try:
        if len(date) != 10:
            raise ValueError(date)
        datetime.date.fromisoformat(date)
    except ValueError:
        return error("invalid_date", f"date must be YYYY-MM-DD, got '{date}'.")
    balance = parse_money(account.get("balance", ZERO_RATE))
    if balance is None:
        return error("invalid_balance", f"The account balance '{account.get('balance')}' is not an amount.")
    charges = account.get("recent_charges")
    if charges is not None and not isinstance(charges, list):
        return error("invalid_charges", "The account's recent_charges is not a list.")
    entry = {"description": f"{REFUND_PREFIX}{description}", "amount": format_money(-amount), "date": date}
    account.setdefault("recent_charges", []).append(entry)
    account["balance"] = format_money(balance - amount)
    return ok(account_id=args["account_id"], refund_entry=entry, new_balance=account["balance"])


def start_item_return(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    """StartItemReturnTool(account_id, order_id, reason): set the order's ``status`` to
    ``Return Started`` and ``return_reason`` to ``reason`` (any earlier status, as upstream).
    Errors: ``account_not_found``, ``order_not_found``, ``missing_reason``.
    Returns ``{status, account_id, order_id, order}``."""
    account = _account(db, args)
    if account is None:
        return _no_account(args)
    order = _order(account, args)
    if order is None:
        return _no_order(args)
    reason = text(args.get("reason"))
    if not reason:
        return error("missing_reason", "reason is required.")
    order["status"] = RETURN_STATUS
    order["return_reason"] = reason
    return ok(account_id=args["account_id"], order_id=args["order_id"], order=order)


def change_plan(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    """ChangePlanTool(account_id, new_plan): set ``plan`` and ``monthly_rate`` from the DB's
    ``plans`` table (exact plan name). Errors: ``account_not_found``, ``unknown_plan`` (naming the
    plans on offer). Returns ``{status, account_id, new_plan, new_monthly_rate}``."""
    account = _account(db, args)
    if account is None:
        return _no_account(args)
    plans = db.get("plans") or {}
    plan = args.get("new_plan")
    if not isinstance(plan, str) or plan not in plans:
        offered = ", ".join(plans) or "none"
        return error("unknown_plan", f"Plan '{plan}' is not available. Available plans: {offered}.")
    account["plan"] = plan
    account["monthly_rate"] = plans[plan]
    return ok(account_id=args["account_id"], new_plan=plan, new_monthly_rate=plans[plan])


def unlock_account(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    """UnlockAccountTool(account_id): ``account_status`` -> ``Active``,
    ``failed_login_attempts`` -> ``"0"``. Error: ``account_not_found``.
    Returns ``{status, account_id, account_status}``."""
    account = _account(db, args)
    if account is None:
        return _no_account(args)
    account["account_status"] = UNLOCKED_STATUS
    account["failed_login_attempts"] = "0"
    return ok(account_id=args["account_id"], account_status=UNLOCKED_STATUS)


def cancel_subscription(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    """CancelSubscriptionTool(account_id): ``plan`` -> ``Canceled``, ``monthly_rate`` ->
    ``"$0.00"``. Error: ``account_not_found``. Returns ``{status, account_id, plan}``."""
    account = _account(db, args)
    if account is None:
        return _no_account(args)
    account["plan"] = CANCELED_PLAN
    account["monthly_rate"] = ZERO_RATE
    return ok(account_id=args["account_id"], plan=CANCELED_PLAN)


def resolve_ticket(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    """ResolveTicketTool(account_id, issue_summary, resolution_type, resolution_details): append a
    ticket ``{ticket_id: "TKT-001", account_id, issue_summary, resolution_type,
    resolution_details}`` to ``tickets``.

    Stricter than upstream (which logs a ticket for any id, with an empty account snapshot): the
    account must exist and both texts be non-blank. Errors: ``account_not_found``,
    ``invalid_resolution_type`` (one of :data:`RESOLUTION_TYPES`), ``missing_issue_summary``,
    ``missing_resolution_details``, ``no_tickets``. Returns ``{status, message, ticket_id}``.
    """
    tickets = db.get("tickets")
    if not isinstance(tickets, list):
        return error("no_tickets", "This DB keeps no ticket log.")
    if _account(db, args) is None:
        return _no_account(args)
    kind = args.get("resolution_type")
    if kind not in RESOLUTION_TYPES:
        return error(
            "invalid_resolution_type",
            f"resolution_type '{kind}' is not one of: {', '.join(RESOLUTION_TYPES)}.",
        )
    summary, details = text(args.get("issue_summary")), text(args.get("resolution_details"))
    if not summary:
        return error("missing_issue_summary", "issue_summary is required.")
    if not details:
        return error("missing_resolution_details", "resolution_details is required.")
    ticket_id = f"TKT-{len(tickets) + 1:03d}"
    tickets.append(
        {
            "ticket_id": ticket_id,
            "account_id": args["account_id"],
            "issue_summary": summary,
            "resolution_type": kind,
            "resolution_details": details,
        }
    )
    return ok(message="Ticket resolved.", ticket_id=ticket_id)


HANDLERS: dict[str, Handler] = {
    "LookupAccountTool": lookup_account,
    "CheckOrderStatusTool": check_order_status,
    "ProcessRefundTool": process_refund,
    "StartItemReturnTool": start_item_return,
    "ChangePlanTool": change_plan,
    "UnlockAccountTool": unlock_account,
    "CancelSubscriptionTool": cancel_subscription,
    "ResolveTicketTool": resolve_ticket,
}
