"""The customer_service tool table as data: name -> ``{kind, handler, description, parameters}``.

Names are upstream's class names (the prompts name them: "use the `ResolveTicketTool` tool");
argument names are upstream's too, since the prompts quote them (``new_plan='Premium'``,
``reason='defective'``). Every ``write`` tool records an action whose ``action_type`` is the tool
name. Descriptions are evalctl's own. ``ProcessRefundTool.amount`` is a number a model may send
as text (top level, coerced by the engine as it stands).
"""

from __future__ import annotations

from typing import Any

from engine.domains.customer_service.handlers import RESOLUTION_TYPES


def _string(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


def _params(required: list[str], **properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


_ACCOUNT = _string("The customer's account ID, like TC-12345.")
_ORDER = _string("The order ID, like ORD-12345.")

TOOLS: dict[str, dict[str, Any]] = {
    "LookupAccountTool": {
        "kind": "read",
        "handler": "LookupAccountTool",
        "description": "Fetch a customer's account by its ID: plan, balance, recent charges and orders.",
        "parameters": _params(["account_id"], account_id=dict(_ACCOUNT)),
    },
    "CheckOrderStatusTool": {
        "kind": "read",
        "handler": "CheckOrderStatusTool",
        "description": "Fetch one order of a customer's account: product, status and delivery details.",
        "parameters": _params(["account_id", "order_id"], account_id=dict(_ACCOUNT), order_id=dict(_ORDER)),
    },
    "ProcessRefundTool": {
        "kind": "write",
        "handler": "ProcessRefundTool",
        "description": (
            "Refund an amount to a customer's account: adds a negative charge to its recent charges "
            "and lowers its balance by that amount."
        ),
        "parameters": _params(
            ["account_id", "amount", "description", "date"],
            account_id=dict(_ACCOUNT),
            amount={"type": "number", "description": "The refund in dollars, e.g. 49.99."},
            description=_string("What is refunded, in a few words, e.g. 'Extended Warranty'."),
            date=_string("The refund date, YYYY-MM-DD."),
        ),
    },
    "StartItemReturnTool": {
        "kind": "write",
        "handler": "StartItemReturnTool",
        "description": "Open a return for an order: marks it 'Return Started' and records why.",
        "parameters": _params(
            ["account_id", "order_id", "reason"],
            account_id=dict(_ACCOUNT),
            order_id=dict(_ORDER),
            reason=_string("Why the item goes back, in a word or two, e.g. 'defective' or 'wrong item'."),
        ),
    },
    "ChangePlanTool": {
        "kind": "write",
        "handler": "ChangePlanTool",
        "description": "Move a customer's account to another plan; the monthly rate follows the plan.",
        "parameters": _params(
            ["account_id", "new_plan"],
            account_id=dict(_ACCOUNT),
            new_plan=_string("The plan to switch to, by its exact name."),
        ),
    },
    "UnlockAccountTool": {
        "kind": "write",
        "handler": "UnlockAccountTool",
        "description": "Unlock an account locked after failed logins: Active again, failed attempts reset.",
        "parameters": _params(["account_id"], account_id=dict(_ACCOUNT)),
    },
    "CancelSubscriptionTool": {
        "kind": "write",
        "handler": "CancelSubscriptionTool",
        "description": (
            "Cancel a customer's subscription: the plan becomes Canceled at a $0.00 monthly rate; "
            "service lasts until the billing cycle ends."
        ),
        "parameters": _params(["account_id"], account_id=dict(_ACCOUNT)),
    },
    "ResolveTicketTool": {
        "kind": "write",
        "handler": "ResolveTicketTool",
        "description": "Log how the customer's issue was resolved, once it is fully handled.",
        "parameters": _params(
            ["account_id", "issue_summary", "resolution_type", "resolution_details"],
            account_id=dict(_ACCOUNT),
            issue_summary=_string("A short summary of the customer's issue."),
            resolution_type={
                "type": "string",
                "enum": list(RESOLUTION_TYPES),
                "description": f"The kind of resolution, exactly one of: {', '.join(RESOLUTION_TYPES)}.",
            },
            resolution_details=_string("What was done to resolve the issue."),
        ),
    },
    "EndConversationTool": {
        "kind": "harness",
        "handler": "end_conversation",
        "description": "Hang up once the issue is resolved and you have said goodbye.",
        "parameters": _params([]),
    },
}
