"""The restaurant tool table as data: name -> ``{kind, handler, description, parameters}``.

Names are upstream's class names, because the upstream prompts name the tools that way
("use the `PlaceOrderTool` tool"). ``kind`` follows the tool-table kinds of docs/authoring.md;
every ``write`` tool records an action whose ``action_type`` is the tool name. Descriptions are
evalctl's own. ``parameters`` are JSON Schema; ``PlaceOrderTool.items[].unit_price`` and
``quantity`` are numbers inside objects inside an array, so a model's ``"9.99"`` only becomes
9.99 when the engine coerces nested objects.
"""

from __future__ import annotations

from typing import Any


def _no_args() -> dict[str, Any]:
    return {"type": "object", "properties": {}, "required": []}


TOOLS: dict[str, dict[str, Any]] = {
    "GetMenuTool": {
        "kind": "read",
        "handler": "GetMenuTool",
        "description": "Fetch the restaurant's menu: every item with its price.",
        "parameters": _no_args(),
    },
    "PlaceOrderTool": {
        "kind": "write",
        "handler": "PlaceOrderTool",
        "description": (
            "Place the customer's confirmed order. List every item with its unit price and quantity "
            "and give the total, which must equal the sum of unit price times quantity."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "items": {
                    "type": "array",
                    "description": "The ordered items, each with its name, unit price and quantity.",
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string", "description": "Item name as on the menu."},
                            "unit_price": {"type": "number", "description": "Price of one item in dollars."},
                            "quantity": {"type": "integer", "description": "How many of this item."},
                        },
                        "required": ["name", "unit_price", "quantity"],
                    },
                },
                "customer_name": {"type": "string", "description": "The customer's name."},
                "customer_phone": {
                    "type": "string",
                    "description": "The customer's phone number, like 123-456-7890.",
                },
                "total_price": {"type": "number", "description": "The order total in dollars."},
            },
            "required": ["items", "customer_name", "total_price"],
        },
    },
    "JoinWaitListTool": {
        "kind": "write",
        "handler": "JoinWaitListTool",
        "description": "Put a party on the waitlist; needs the customer's name, phone number and party size.",
        "parameters": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The customer's name, capitalised (luna -> Luna)."},
                "phone": {"type": "string", "description": "The customer's phone number, like 123-456-7890."},
                "party_size": {"type": "integer", "description": "How many people are in the party."},
            },
            "required": ["name", "phone", "party_size"],
        },
    },
    "DropWaitListTool": {
        "kind": "write",
        "handler": "DropWaitListTool",
        "description": "Take a party off the waitlist by the customer's name, when they decide to leave.",
        "parameters": {
            "type": "object",
            "properties": {
                "name": {
                    "type": "string",
                    "description": "The name the party joined under, capitalised (luna -> Luna).",
                },
            },
            "required": ["name"],
        },
    },
    "GetWaitlistTool": {
        "kind": "read",
        "handler": "GetWaitlistTool",
        "description": "Show the current waitlist in order, to tell a customer their place.",
        "parameters": _no_args(),
    },
    "EndConversationTool": {
        "kind": "harness",
        "handler": "end_conversation",
        "description": "Hang up once the customer is done and you have said goodbye.",
        "parameters": _no_args(),
    },
}
