"""Per-scenario data of the restaurant domain, derived from a ``nemo-1a83139`` record.

Two kinds of scenario: food orders (10 ``restaurant__*`` + the legacy ``fastbite``), scored on the
one order placed, and ``restaurant__waitlist_join_then_drop``, scored on its join and drop and on
the final waitlist. Upstream's reference holds every number as a string (``"9.99"``, ``"1"``);
here prices are floats and quantities and party sizes integers.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from engine.domains.nemo_common import gold as st
from engine.domains.nemo_common.records import offered_tools, tool_arguments, upstream_truthy

WAITLIST_TOOLS = ("JoinWaitListTool", "DropWaitListTool", "GetWaitlistTool")


def is_waitlist(record: Mapping[str, Any]) -> bool:
    """True for the waitlist scenario (it offers JoinWaitListTool), false for an order scenario."""
    return "JoinWaitListTool" in record["agent_tools"]


def initial_db(record: Mapping[str, Any]) -> dict[str, Any]:
    """The scenario's starting DB (shape in ``handlers.py``): ``menu`` from GetMenuTool's
    constructor text when offered, ``orders: []`` when PlaceOrderTool is offered, ``waitlist``
    parsed from JoinWaitListTool's ``initial_waitlist`` JSON when a waitlist tool is offered."""
    tools = offered_tools(record)
    db: dict[str, Any] = {}
    if "GetMenuTool" in tools:
        db["menu"] = str(tool_arguments(record, "GetMenuTool").get("menu", ""))
    if "PlaceOrderTool" in tools:
        db["orders"] = []
    if any(t in tools for t in WAITLIST_TOOLS):
        db["waitlist"] = json.loads(
            tool_arguments(record, "JoinWaitListTool").get("initial_waitlist") or "[]"
        )
    return db


def tool_options(record: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Tool-table ``options`` per tool: PlaceOrderTool's ``validate`` is upstream's
    ``auto_validate`` read with Python truthiness, so the string ``"False"`` every scenario passes
    turns the check on (upstream's behaviour, kept)."""
    if "PlaceOrderTool" not in record["agent_tools"]:
        return {}
    flag = tool_arguments(record, "PlaceOrderTool").get("auto_validate", False)
    return {"PlaceOrderTool": {"validate": upstream_truthy(flag)}}


def _order(record: Mapping[str, Any]) -> dict[str, Any]:
    ref = record["reference_answer"]
    return {
        "items": [
            {"name": i["name"], "unit_price": float(i["unit_price"]), "quantity": int(i["quantity"])}
            for i in ref["items"]
        ],
        "customer_name": ref["customer_name"],
        "customer_phone": ref["customer_phone"],
        "total_price": float(ref["total_price"]),
    }


def _summary(record: Mapping[str, Any], action: str) -> dict[str, Any]:
    found = [s for s in record["reference_answer"] if s.get("action") == action]
    if len(found) != 1:
        raise ValueError(f"{record['name']}: expected one '{action}' summary in the reference")
    return found[0]


def _joined(record: Mapping[str, Any]) -> dict[str, Any]:
    customer = _summary(record, "join")["customer"]
    return {"name": customer["name"], "phone": customer["phone"], "party_size": int(customer["party_size"])}


def reference_answer(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The expected write actions, ``[{action_type: <tool>, <argument>: <value>, ...}]``.

    Order scenario: one PlaceOrderTool action with the reference order (prices and total as
    floats, quantities as integers). Waitlist: a JoinWaitListTool action (name, phone, integer
    party_size) and a DropWaitListTool action (name).
    """
    if is_waitlist(record):
        dropped = _summary(record, "drop")["customer"]["name"]
        return [
            {"action_type": "JoinWaitListTool", **_joined(record)},
            {"action_type": "DropWaitListTool", "name": dropped},
        ]
    return [{"action_type": "PlaceOrderTool", **_order(record)}]


def match_options(record: Mapping[str, Any]) -> dict[str, bool]:
    """Upstream's match flags with ``disallow_extra_items`` switched on: one order only (a second
    order, or an extra item in it, fails the match), and for the waitlist exactly a join and a drop;
    numbers within NumPy ``isclose``'s tolerance, as upstream compares them."""
    flags = {k: bool(v) for k, v in record["match"].items()}
    return {**flags, "disallow_extra_items": True, "isclose_numbers": True}


def success_signals(record: Mapping[str, Any]) -> list[str]:
    """Gating signals: the action match and a clean exit; the waitlist also gates on the final DB,
    since join-then-drop leaves it as it started."""
    if is_waitlist(record):
        return ["is_action_match", "db_state_match", "clean_exit"]
    return ["is_action_match", "clean_exit"]


def expected_db(record: Mapping[str, Any]) -> dict[str, Any] | None:
    """The expected final DB of the waitlist scenario (its waitlist is the reference's list after
    the drop); None for order scenarios, which are scored on the action, not on a DB hash."""
    if not is_waitlist(record):
        return None
    return {**initial_db(record), "waitlist": json.loads(json.dumps(_summary(record, "drop")["waitlist"]))}


def order_count(db: Mapping[str, Any]) -> int:
    """Predicate: how many orders the DB holds (0 when it takes none)."""
    return len(db.get("orders") or [])


def waitlist_names(db: Mapping[str, Any]) -> list[str]:
    """Predicate: the names on the waitlist, in order (``[]`` when there is none)."""
    return [str(entry.get("name")) for entry in db.get("waitlist") or []]


PREDICATES = {"order_count": order_count, "waitlist_names": waitlist_names}


def db_state_assertions(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Diagnostic (non-gating) DB checks: exactly one order placed; for the waitlist, the names
    left after the drop."""
    if is_waitlist(record):
        names = [str(e["name"]) for e in _summary(record, "drop")["waitlist"]]
        return [{"func_name": "waitlist_names", "arguments": {}, "assert_value": names}]
    return [{"func_name": "order_count", "arguments": {}, "assert_value": 1}]


def nl_assertions(record: Mapping[str, Any]) -> list[str]:
    """None: everything the restaurant scores is structured."""
    return []


def _spoken_items(order: Mapping[str, Any]) -> str:
    parts = [f"{i['quantity']} {i['name']}" for i in order["items"]]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + f" and {parts[-1]}"


def _greeting(record: Mapping[str, Any]) -> str:
    line = st.first_quoted(record["agent_actions"]["instructions"])
    if not line:
        raise ValueError(f"{record['name']}: no quoted greeting in the agent instructions")
    return line


def _order_steps(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    order = _order(record)
    tools = offered_tools(record)
    out = [st.agent(_greeting(record))]
    for index, instruction in enumerate(record["user_actions"]["instructions"]):
        out.append(st.user(instruction))
        if index == 0 and "GetMenuTool" in tools:
            out.append(st.call("GetMenuTool"))
            out.append(st.agent("Let me read you what we have on the menu."))
        else:
            out.append(st.agent("Sure, noted."))
    out.append(
        st.agent(
            f"So that is {_spoken_items(order)}, ${order['total_price']:.2f} in total. "
            "May I have your name and phone number for the order?"
        )
    )
    out.append(
        st.user(f"My name is {order['customer_name']} and my phone number is {order['customer_phone']}.")
    )
    out.append(st.call("PlaceOrderTool", order))
    out.append(st.agent(f"Thank you, {order['customer_name']}, your order is placed."))
    out.append(st.user("Thank you, goodbye."))
    out.append(st.agent("Enjoy your meal, goodbye!"))
    out.append(st.hang_up())
    return out


def _waitlist_steps(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    joined = _joined(record)
    ahead = len(_summary(record, "join")["waitlist"]) - 1
    said = record["user_actions"]["instructions"]
    if len(said) < 4:
        raise ValueError(f"{record['name']}: expected at least four caller instructions")
    return [
        st.agent(_greeting(record)),
        st.user(said[0]),
        st.agent("Of course. May I have your name, phone number and party size?"),
        st.user(
            f"My name is {joined['name']}, my phone number is {joined['phone']}, "
            f"and we are a party of {joined['party_size']}."
        ),
        st.call("JoinWaitListTool", joined),
        st.agent(f"You are on the waitlist, {joined['name']}."),
        st.user(said[2]),
        st.call("GetWaitlistTool"),
        st.agent(f"There are {ahead} parties ahead of you, I am sorry for the wait."),
        st.user(said[3]),
        st.call("DropWaitListTool", {"name": joined["name"]}),
        st.agent("I have taken you off the waitlist."),
        *[st.user(line) for line in said[4:]],
        st.agent("Thank you for stopping by, goodbye!"),
        st.hang_up(),
    ]


def gold_steps(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """evalctl's gold conversation (:data:`~engine.domains.nemo_common.gold.GOLD_SOURCE`): the
    agent greets with the quoted line of its first instruction, the caller speaks its instructions,
    the agent calls the tools with the reference arguments, both close, and the agent hangs up with
    EndConversationTool. Raises ValueError when the record lacks what the conversation needs."""
    return _waitlist_steps(record) if is_waitlist(record) else _order_steps(record)
