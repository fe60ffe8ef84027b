"""Per-scenario data of the customer_service domain, derived from a ``nemo-1a83139`` record.

Upstream's reference is a ticket: free-text ``issue_summary`` and ``resolution_details``, a
``resolution_type``, the ``account_id`` and a snapshot of the account after the change. evalctl
splits it: the structured arguments (account, amount, order, plan, resolution type) are matched
as actions; the account fields the task changes are checked with predicates on the final DB;
the free text (the two ticket texts, the refund description, the return reason) becomes
plain-language claims for a judge. The operation each scenario needs is read off the difference
between the initial account and the snapshot, so the reference and the gold follow the data.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from engine.core.plugin import Predicate
from engine.domains.customer_service.handlers import REFUND_PREFIX, RETURN_STATUS, parse_money
from engine.domains.nemo_common import gold as st
from engine.domains.nemo_common.records import offered_tools, tool_arguments

#: The operation tools; a scenario offers at most one of them.
OP_TOOLS = (
    "ProcessRefundTool",
    "StartItemReturnTool",
    "ChangePlanTool",
    "UnlockAccountTool",
    "CancelSubscriptionTool",
)
#: The arguments of each write tool that are matched as actions (the rest is free text).
STRUCTURED_ARGS: dict[str, tuple[str, ...]] = {
    "ProcessRefundTool": ("account_id", "amount"),
    "StartItemReturnTool": ("account_id", "order_id"),
    "ChangePlanTool": ("account_id", "new_plan"),
    "UnlockAccountTool": ("account_id",),
    "CancelSubscriptionTool": ("account_id",),
    "ResolveTicketTool": ("account_id", "resolution_type"),
}
#: Order fields written from the agent's own words: judged, never compared.
FREE_TEXT_ORDER_FIELDS = frozenset({"return_reason"})
#: Account fields asserted in every scenario (a stray refund or plan change shows up).
ALWAYS_ASSERTED = ("balance", "plan")
_TODAY = re.compile(r"\btoday\b.*?(\d{4}-\d{2}-\d{2})", re.IGNORECASE)


def current_date(record: Mapping[str, Any]) -> str:
    """Today's date of the scenario, from the agent's reference line that gives it; ValueError
    when no line does."""
    for line in record["agent_resources"]["information"]:
        found = _TODAY.search(line)
        if found:
            return found.group(1)
    raise ValueError(f"{record['name']}: no date for today in the agent's information")


def initial_db(record: Mapping[str, Any]) -> dict[str, Any]:
    """The starting DB (shape in ``handlers.py``): accounts parsed from LookupAccountTool's
    ``accounts`` JSON, plans from ChangePlanTool's ``plans`` JSON (``{}`` when not offered), an
    empty ticket log and ``_current_date``."""
    plans = tool_arguments(record, "ChangePlanTool").get("plans") or "{}"
    return {
        "_current_date": current_date(record),
        "accounts": json.loads(tool_arguments(record, "LookupAccountTool")["accounts"]),
        "plans": json.loads(plans),
        "tickets": [],
    }


def _accounts(record: Mapping[str, Any]) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """``(account_id, initial account, reference account)``."""
    ref = record["reference_answer"]
    account_id = ref["account_id"]
    before = initial_db(record)["accounts"].get(account_id)
    if before is None:
        raise ValueError(f"{record['name']}: reference account {account_id} is not in the initial accounts")
    return account_id, before, ref["account"]


def operation(record: Mapping[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """The operation tool call the task needs, ``(tool, full arguments)``, read off the difference
    between the initial and the reference account; None when the task changes nothing. Raises
    ValueError when the data is inconsistent (two operation tools, no change where one is
    offered, a change without one)."""
    account_id, before, after = _accounts(record)
    ops = [tool for tool in OP_TOOLS if tool in record["agent_tools"]]
    if len(ops) > 1:
        raise ValueError(f"{record['name']}: more than one operation tool offered: {ops}")
    if not ops:
        if before != after:
            raise ValueError(f"{record['name']}: the account changes but no operation tool is offered")
        return None
    tool = ops[0]
    args: dict[str, Any] = {"account_id": account_id}
    if tool == "ProcessRefundTool":
        new = after.get("recent_charges", [])[len(before.get("recent_charges", [])) :]
        amount = parse_money(new[0]["amount"]) if len(new) == 1 else None
        if amount is None or not new[0]["description"].startswith(REFUND_PREFIX):
            raise ValueError(f"{record['name']}: expected one refund entry in the reference account")
        args |= {
            "amount": -amount,
            "description": new[0]["description"][len(REFUND_PREFIX) :],
            "date": new[0]["date"],
        }
    elif tool == "StartItemReturnTool":
        orders = before.get("orders", {})
        started = [
            oid
            for oid, order in after.get("orders", {}).items()
            if order.get("status") == RETURN_STATUS and orders.get(oid, {}).get("status") != RETURN_STATUS
        ]
        if len(started) != 1:
            raise ValueError(f"{record['name']}: expected one order with a return started")
        args |= {"order_id": started[0], "reason": after["orders"][started[0]]["return_reason"]}
    elif tool == "ChangePlanTool":
        args["new_plan"] = after["plan"]
    return tool, args


def _resolution(record: Mapping[str, Any]) -> dict[str, Any]:
    ref = record["reference_answer"]
    keys = ("account_id", "issue_summary", "resolution_type", "resolution_details")
    return {key: ref[key] for key in keys}


def reference_answer(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The expected write actions, structured arguments only: the operation (account, plus the
    refund amount as a number, the order or the new plan) when the task has one, then
    ``ResolveTicketTool`` with the account and the resolution type."""
    out: list[dict[str, Any]] = []
    op = operation(record)
    if op is not None:
        tool, args = op
        out.append({"action_type": tool, **{k: args[k] for k in STRUCTURED_ARGS[tool]}})
    ticket = _resolution(record)
    out.append(
        {"action_type": "ResolveTicketTool", **{k: ticket[k] for k in STRUCTURED_ARGS["ResolveTicketTool"]}}
    )
    return out


def match_options(record: Mapping[str, Any]) -> dict[str, bool]:
    """Upstream's match flags as they are (case and punctuation ignored, text cleaned; extra
    actions allowed: a repeated refund is caught by the balance and charge assertions), numbers
    within NumPy ``isclose``'s tolerance as upstream compares them."""
    return {**{k: bool(v) for k, v in record["match"].items()}, "isclose_numbers": True}


def success_signals(record: Mapping[str, Any]) -> list[str]:
    """Gating signals: the structured action match, the account-field assertions, the free-text
    claims (``nl_assertion``: not applicable, so never failing, unless the run has a judge) and a
    clean exit."""
    return ["is_action_match", "db_state_assertion", "nl_assertion", "clean_exit"]


def expected_db(record: Mapping[str, Any]) -> None:
    """None: the final account holds the agent's free text, so it is checked field by field
    (:func:`db_state_assertions`), not by a DB hash."""
    return None


def tool_options(record: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """No tool of this domain has options."""
    return {}


def account_field(db: Mapping[str, Any], account_id: str, field: str) -> Any:
    """Predicate: ``accounts[account_id][field]`` (None when the field is absent); KeyError when
    the account is missing."""
    return db["accounts"][account_id].get(field)


def order_field(db: Mapping[str, Any], account_id: str, order_id: str, field: str) -> Any:
    """Predicate: ``accounts[account_id].orders[order_id][field]`` (None when absent); KeyError
    when the account or the order is missing."""
    return db["accounts"][account_id]["orders"][order_id].get(field)


def charge_amounts(db: Mapping[str, Any], account_id: str) -> list[Any]:
    """Predicate: the ``amount`` texts of the account's recent charges, in order (``[]`` when it
    has none); KeyError when the account is missing."""
    return [charge.get("amount") for charge in db["accounts"][account_id].get("recent_charges", [])]


PREDICATES: dict[str, Predicate] = {
    "account_field": account_field,
    "order_field": order_field,
    "charge_amounts": charge_amounts,
}


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool) or value is None


def db_state_assertions(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Checks of the final DB, from the reference account: ``balance`` and ``plan`` always, every
    other top-level field the task changes, every structured order field it changes (the free-text
    return reason is an NL claim instead) and, when charges change, the list of charge amounts.
    Raises ValueError for a change of another kind (this derivation would miss it)."""
    account_id, before, after = _accounts(record)
    out: list[dict[str, Any]] = []

    def add(func: str, value: Any, **arguments: Any) -> None:
        out.append(
            {"func_name": func, "arguments": {"account_id": account_id, **arguments}, "assert_value": value}
        )

    for key, value in after.items():
        if key in ("orders", "recent_charges"):
            continue
        if not _scalar(value):
            if value != before.get(key):
                raise ValueError(f"{record['name']}: unexpected change of account field {key!r}")
            continue
        if key in ALWAYS_ASSERTED or before.get(key) != value:
            add("account_field", value, field=key)
    for order_id, order in after.get("orders", {}).items():
        old = before.get("orders", {}).get(order_id, {})
        for key, value in order.items():
            if old.get(key) != value and key not in FREE_TEXT_ORDER_FIELDS:
                add("order_field", value, order_id=order_id, field=key)
    if after.get("recent_charges", []) != before.get("recent_charges", []):
        add("charge_amounts", [c["amount"] for c in after["recent_charges"]])
    return out


def nl_assertions(record: Mapping[str, Any]) -> list[str]:
    """Plain-language claims for the free text upstream compared word for word: the ticket's issue
    summary and resolution details, and the refund description or return reason when the task has
    one (judged only when the run has a judge)."""
    ticket = _resolution(record)
    claims = [
        f'The issue summary the agent logged with the ticket says, in substance: "{ticket["issue_summary"]}"',
        f'The resolution details the agent logged say, in substance: "{ticket["resolution_details"]}"',
    ]
    op = operation(record)
    if op is not None and op[0] == "ProcessRefundTool":
        claims.append(f'The refund the agent issued is described as being for "{op[1]["description"]}".')
    if op is not None and op[0] == "StartItemReturnTool":
        claims.append(f'The agent opened the return giving the reason "{op[1]["reason"]}".')
    return claims


def _order_to_check(record: Mapping[str, Any], op: tuple[str, dict[str, Any]] | None) -> str | None:
    if "CheckOrderStatusTool" not in record["agent_tools"]:
        return None
    if op is not None and "order_id" in op[1]:
        return str(op[1]["order_id"])
    _, before, _ = _accounts(record)
    orders = list(before.get("orders", {}))
    mentioned = [oid for oid in orders if oid in record["user_persona"]["background"]]
    return (mentioned or orders or [None])[0]


def gold_steps(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """evalctl's gold conversation (:data:`~engine.domains.nemo_common.gold.GOLD_SOURCE`): the
    quoted greeting, the caller's instructions (the one naming the account becomes "My account ID
    is ..."), LookupAccountTool and CheckOrderStatusTool once the ID is given, then the operation
    and ResolveTicketTool with the reference texts, the resolution read out, the caller's quoted
    goodbye and EndConversationTool. Raises ValueError when the record lacks a piece of it."""
    greeting = st.first_quoted(record["agent_actions"]["instructions"])
    if not greeting:
        raise ValueError(f"{record['name']}: no quoted greeting in the agent instructions")
    op = operation(record)
    ticket = _resolution(record)
    account_id = ticket["account_id"]
    order_id = _order_to_check(record, op)
    said = record["user_actions"]["instructions"]
    out = [st.agent(greeting)]
    for index, line in enumerate(said):
        if account_id in line:
            own = f"My account ID is {account_id}"
            own += f" and the order number is {order_id}." if order_id and order_id in line else "."
            out.append(st.user(own))
            out.append(st.call("LookupAccountTool", {"account_id": account_id}))
            if order_id:
                out.append(st.call("CheckOrderStatusTool", {"account_id": account_id, "order_id": order_id}))
            out.append(st.agent("Thank you, I have your account in front of me."))
        else:
            out.append(st.user(line))
            if index == len(said) - 1:
                break
            out.append(
                st.agent("I can help with that. What is your account ID?" if index == 0 else "I understand.")
            )
    if op is not None:
        out.append(st.call(*op))
    out.append(st.call("ResolveTicketTool", ticket))
    out.append(st.agent(ticket["resolution_details"]))
    out.append(st.user(st.said_line(record["user_actions"]["guidelines"]) or "Thank you, goodbye."))
    out.append(st.agent("You are welcome. Goodbye!"))
    out.append(st.hang_up())
    if not any(s["tool"] == "LookupAccountTool" for s in out):
        raise ValueError(f"{record['name']}: no caller instruction gives the account ID {account_id}")
    return out


def offered_operation_tools(record: Mapping[str, Any]) -> list[str]:
    """The operation tools this scenario offers (zero or one)."""
    return [tool for tool in offered_tools(record) if tool in OP_TOOLS]
