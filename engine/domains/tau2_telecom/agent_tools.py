"""The carrier's 13 agent tools (tau2 17e07b1 ``TelecomTools``), on the carrier DB.

The DB is tau2's carrier DB as plain data: lists ``plans``, ``customers``, ``lines``, ``bills``,
``devices`` of records keyed by their ``*_id``. Texts, checks and their order mirror tau2's tools;
records in results are shown as tau2 dumps them (model field order, defaults, datetimes with a
space). See docs/domains/tau2_telecom.md for the per-tool contract.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from typing import Any

from engine.core.tools.context import CallContext
from engine.domains.tau2_telecom.common import REQUIRED, Result, ToolError, success, tau2_tool, today
from engine.domains.tau2_telecom.shapes import record_view

_OWNER = "TelecomTools"
_CUSTOMER_LINE = {"customer_id": REQUIRED, "line_id": REQUIRED}

# --- lookups (tau2's private helpers; each raises tau2's text) ------------------------------------


def _find(db: dict[str, Any], table: str, key: str, value: Any) -> dict[str, Any] | None:
    return next((r for r in db.get(table, []) if r.get(key) == value), None)


def get_line(db: dict[str, Any], line_id: str) -> dict[str, Any]:
    """The line ``line_id``; ToolError ``Line with ID <id> not found``."""
    line = _find(db, "lines", "line_id", line_id)
    if line is None:
        raise ToolError("not_found", f"Line with ID {line_id} not found")
    return line


def get_line_by_phone(db: dict[str, Any], phone_number: str) -> dict[str, Any]:
    """The line with that number; ToolError ``Line with phone number <n> not found``."""
    line = _find(db, "lines", "phone_number", phone_number)
    if line is None:
        raise ToolError("not_found", f"Line with phone number {phone_number} not found")
    return line


def get_plan(db: dict[str, Any], plan_id: str) -> dict[str, Any]:
    """The plan ``plan_id``; ToolError ``Plan with ID <id> not found``."""
    plan = _find(db, "plans", "plan_id", plan_id)
    if plan is None:
        raise ToolError("not_found", f"Plan with ID {plan_id} not found")
    return plan


def get_bill(db: dict[str, Any], bill_id: str) -> dict[str, Any]:
    """The bill ``bill_id``; ToolError ``Bill with ID <id> not found``."""
    bill = _find(db, "bills", "bill_id", bill_id)
    if bill is None:
        raise ToolError("not_found", f"Bill with ID {bill_id} not found")
    return bill


def get_customer(db: dict[str, Any], customer_id: str) -> dict[str, Any]:
    """The customer ``customer_id``; ToolError ``Customer with ID <id> not found``."""
    customer = _find(db, "customers", "customer_id", customer_id)
    if customer is None:
        raise ToolError("not_found", f"Customer with ID {customer_id} not found")
    return customer


def customer_by_phone(db: dict[str, Any], phone_number: str) -> dict[str, Any]:
    """First customer whose contact number, or one of whose lines, has that number (tau2 checks
    each customer's own number, then its lines, customer by customer)."""
    for customer in db.get("customers", []):
        if customer.get("phone_number") == phone_number:
            return customer
        for line_id in customer.get("line_ids", []):
            if get_line(db, line_id).get("phone_number") == phone_number:
                return customer
    raise ToolError("not_found", f"Customer with phone number {phone_number} not found")


def target_line(db: dict[str, Any], customer_id: str, line_id: str) -> dict[str, Any]:
    """The line, after checking the customer exists and owns it (tau2 ``_get_target_line``)."""
    customer = get_customer(db, customer_id)
    if line_id not in customer.get("line_ids", []):
        raise ToolError("not_found", f"Line {line_id} not found for customer {customer_id}")
    return get_line(db, line_id)


def bills_awaiting_payment(db: dict[str, Any], customer: dict[str, Any]) -> list[dict[str, Any]]:
    """The customer's bills in status ``Awaiting Payment``, in ``bill_ids`` order."""
    bills = [get_bill(db, bill_id) for bill_id in customer.get("bill_ids", [])]
    return [b for b in bills if b.get("status") == "Awaiting Payment"]


def _dump(value: Any) -> str:
    """tau2's ``json.dumps(..., default=str)`` of a tool's return value (records already dumped)."""
    return json.dumps(value, default=str)


# --- read tools -----------------------------------------------------------------------------------


@tau2_tool(_OWNER, {"phone_number": REQUIRED})
def get_customer_by_phone(db: dict[str, Any], ctx: CallContext, phone_number: str) -> Result:
    """The customer record (JSON) owning that contact or line number."""
    return success(_dump(record_view("customers", customer_by_phone(db, phone_number))))


@tau2_tool(_OWNER, {"customer_id": REQUIRED})
def get_customer_by_id(db: dict[str, Any], ctx: CallContext, customer_id: str) -> Result:
    """The customer record (JSON)."""
    return success(_dump(record_view("customers", get_customer(db, customer_id))))


@tau2_tool(_OWNER, {"full_name": REQUIRED, "dob": REQUIRED})
def get_customer_by_name(db: dict[str, Any], ctx: CallContext, full_name: str, dob: str) -> Result:
    """JSON list of customers whose name matches (case-insensitive) and whose birth date equals
    ``dob`` exactly; ``[]`` when none (never an error)."""
    wanted = full_name.lower()
    found = [
        record_view("customers", c)
        for c in db.get("customers", [])
        if str(c.get("full_name", "")).lower() == wanted and c.get("date_of_birth") == dob
    ]
    return success(_dump(found))


_PREFIX_TABLES = {"L": ("lines", get_line), "D": ("devices", None), "B": ("bills", get_bill),
                  "C": ("customers", get_customer), "P": ("plans", get_plan)}  # fmt: skip


@tau2_tool(_OWNER, {"id": REQUIRED})
def get_details_by_id(db: dict[str, Any], ctx: CallContext, id: str) -> Result:
    """The record whose id has that first letter's table (L line, D device, B bill, C customer,
    P plan) as JSON; ``Unknown ID format or type: <id>`` for any other first letter."""
    hit = _PREFIX_TABLES.get(id[:1])
    if hit is None:
        raise ToolError("invalid_value", f"Unknown ID format or type: {id}")
    table, getter = hit
    if getter is None:
        record = _find(db, "devices", "device_id", id)
        if record is None:
            raise ToolError("not_found", f"Device with ID {id} not found")
    else:
        record = getter(db, id)
    return success(_dump(record_view(table, record)))


@tau2_tool(_OWNER, {"customer_id": REQUIRED, "limit": 12})
def get_bills_for_customer(db: dict[str, Any], ctx: CallContext, customer_id: str, limit: int) -> Result:
    """JSON list of the customer's bills, newest ``issue_date`` first (ties keep ``bill_ids``
    order), cut with Python's ``[:limit]`` (so a negative limit drops from the end)."""
    customer = get_customer(db, customer_id)
    bills = [get_bill(db, bill_id) for bill_id in customer.get("bill_ids", [])]
    ordered = sorted(bills, key=lambda b: str(b.get("issue_date")), reverse=True)
    return success(_dump([record_view("bills", b) for b in ordered[:limit]]))


@tau2_tool(_OWNER, _CUSTOMER_LINE)
def get_data_usage(db: dict[str, Any], ctx: CallContext, customer_id: str, line_id: str) -> Result:
    """Usage of an owned line: numbers shown as text (tau2 stringifies numbers of a returned
    dict) and ``cycle_end_date`` the last day of the current month."""
    line = target_line(db, customer_id, line_id)
    plan = get_plan(db, line["plan_id"])
    day = dt.date.fromisoformat(today(ctx))
    # tau2's formula, December included (it keeps the year, so December's end is the 31st before)
    first_next = dt.date(day.year, day.month + 1 if day.month < 12 else 1, 1)
    usage = {
        "line_id": line_id,
        "data_used_gb": str(line.get("data_used_gb", 0.0)),
        "data_limit_gb": str(plan["data_limit_gb"]),
        "data_refueling_gb": str(line.get("data_refueling_gb", 0.0)),
        "cycle_end_date": (first_next - dt.timedelta(days=1)).isoformat(),
    }
    return success(_dump(usage))


# --- write tools ----------------------------------------------------------------------------------


@tau2_tool(_OWNER, {**_CUSTOMER_LINE, "reason": REQUIRED})
def suspend_line(db: dict[str, Any], ctx: CallContext, customer_id: str, line_id: str, reason: str) -> Result:
    """Active owned line -> ``Suspended`` from today (the reason is only logged upstream)."""
    line = target_line(db, customer_id, line_id)
    if line.get("status", "Pending Activation") != "Active":
        raise ToolError("invalid_state", "Line must be active to suspend")
    line["status"] = "Suspended"
    line["suspension_start_date"] = today(ctx)
    message = "Line suspended successfully. $5/month holding fee will apply."
    return success(_dump({"message": message, "line": record_view("lines", line)}))


@tau2_tool(_OWNER, _CUSTOMER_LINE)
def resume_line(db: dict[str, Any], ctx: CallContext, customer_id: str, line_id: str) -> Result:
    """Suspended or pending-activation owned line -> ``Active``, suspension date cleared."""
    line = target_line(db, customer_id, line_id)
    if line.get("status", "Pending Activation") not in ("Suspended", "Pending Activation"):
        raise ToolError("invalid_state", "Line must be suspended to resume")
    line["status"] = "Active"
    line["suspension_start_date"] = None
    return success(_dump({"message": "Line resumed successfully", "line": record_view("lines", line)}))


@tau2_tool(_OWNER, {"customer_id": REQUIRED, "bill_id": REQUIRED})
def send_payment_request(db: dict[str, Any], ctx: CallContext, customer_id: str, bill_id: str) -> Result:
    """The customer's bill -> ``Awaiting Payment`` (whatever its status, even Paid), unless another
    of the customer's bills already awaits payment. The phone learns of it at the next sync."""
    customer = get_customer(db, customer_id)
    if bills_awaiting_payment(db, customer):
        raise ToolError("invalid_state", "A bill is already awaiting payment for this customer")
    if bill_id not in customer.get("bill_ids", []):
        raise ToolError("not_found", f"Bill {bill_id} not found for customer {customer_id}")
    bill = get_bill(db, bill_id)
    bill["status"] = "Awaiting Payment"
    return success(f"Payment request sent to the customer for bill {bill['bill_id']}")


def _set_roaming(db: dict[str, Any], customer_id: str, line_id: str, on: bool) -> Result:
    line = target_line(db, customer_id, line_id)
    word = "enabled" if on else "disabled"
    if bool(line.get("roaming_enabled", False)) == on:
        return success(f"Roaming was already {word}")
    line["roaming_enabled"] = on
    return success(f"Roaming {word} successfully")


@tau2_tool(_OWNER, _CUSTOMER_LINE)
def enable_roaming(db: dict[str, Any], ctx: CallContext, customer_id: str, line_id: str) -> Result:
    """Roaming on for an owned line (``Roaming was already enabled`` when it was)."""
    return _set_roaming(db, customer_id, line_id, True)


@tau2_tool(_OWNER, _CUSTOMER_LINE)
def disable_roaming(db: dict[str, Any], ctx: CallContext, customer_id: str, line_id: str) -> Result:
    """Roaming off for an owned line (``Roaming was already disabled`` when it was)."""
    return _set_roaming(db, customer_id, line_id, False)


@tau2_tool(_OWNER, {"summary": REQUIRED})
def transfer_to_human_agents(db: dict[str, Any], ctx: CallContext, summary: str) -> Result:
    """Hand the call to a human; changes nothing. The engine's tool table declares it call-ending."""
    return success("Transfer successful")


def _draft_bill_id(db: dict[str, Any], customer_id: str, ctx: CallContext) -> str:
    """A new draft bill's id, ``B`` + 8 hex digits like tau2's, but deterministic (tau2 draws a
    random uuid4): derived from the customer and the call index, skipping ids in use."""
    used = {b.get("bill_id") for b in db.get("bills", [])}
    salt = 0
    while True:
        seed = f"{customer_id}:{ctx.call_index}:{salt}".encode()
        bill_id = "B" + hashlib.sha256(seed).hexdigest()[:8]
        if bill_id not in used:
            return bill_id
        salt += 1


def apply_one_time_charge(
    db: dict[str, Any], ctx: CallContext, customer_id: str, amount: float, description: str
) -> None:
    """Add a charge (credit when negative) to the customer's first Draft bill, creating a draft
    for next month (issued on its 1st, due 14 days later) when there is none (tau2
    ``_apply_one_time_charge``)."""
    customer = get_customer(db, customer_id)
    draft = None
    for bill_id in customer.get("bill_ids", []):
        bill = get_bill(db, bill_id)
        if bill.get("status", "Draft") == "Draft":
            draft = bill
            break
    day = dt.date.fromisoformat(today(ctx))
    if draft is None:
        start = (day.replace(day=1) + dt.timedelta(days=32)).replace(day=1)
        after = dt.date(start.year + start.month // 12, start.month % 12 + 1, 1)
        draft = record_view("bills", {
            "bill_id": _draft_bill_id(db, customer_id, ctx), "customer_id": customer_id,
            "period_start": start.isoformat(), "period_end": (after - dt.timedelta(days=1)).isoformat(),
            "issue_date": start.isoformat(), "total_due": 0.0,
            "due_date": (start + dt.timedelta(days=14)).isoformat(), "line_items": [], "status": "Draft",
        })  # fmt: skip
        db.setdefault("bills", []).append(draft)
        customer.setdefault("bill_ids", []).append(draft["bill_id"])
    item_type = "Credit" if amount < 0 else "Charge"
    item = {
        "description": description,
        "amount": float(amount),
        "date": day.isoformat(),
        "item_type": item_type,
    }
    draft.setdefault("line_items", []).append(item)
    draft["total_due"] += amount


@tau2_tool(_OWNER, {**_CUSTOMER_LINE, "gb_amount": REQUIRED})
def refuel_data(
    db: dict[str, Any], ctx: CallContext, customer_id: str, line_id: str, gb_amount: float
) -> Result:
    """Add ``gb_amount`` GB to an owned line (any status: tau2's active check is commented out)
    and charge ``gb_amount x`` the plan's refuel price on the customer's draft bill."""
    line = target_line(db, customer_id, line_id)
    if gb_amount <= 0:
        raise ToolError("invalid_value", "Refuel amount must be positive")
    plan = get_plan(db, line["plan_id"])
    price = plan["data_refueling_price_per_gb"]
    charge = gb_amount * price
    line["data_refueling_gb"] = line.get("data_refueling_gb", 0.0) + gb_amount
    apply_one_time_charge(db, ctx, customer_id, charge, f"Data refueling: {gb_amount} GB at ${price}/GB")
    return success(_dump({
        "message": f"Successfully added {gb_amount} GB of data for line {line_id} for ${charge:.2f}",
        "new_data_refueling_gb": str(line["data_refueling_gb"]),
        "charge": str(charge),
    }))  # fmt: skip


AGENT_HANDLERS = {
    "get_customer_by_phone": get_customer_by_phone,
    "get_customer_by_id": get_customer_by_id,
    "get_customer_by_name": get_customer_by_name,
    "get_details_by_id": get_details_by_id,
    "suspend_line": suspend_line,
    "resume_line": resume_line,
    "get_bills_for_customer": get_bills_for_customer,
    "send_payment_request": send_payment_request,
    "get_data_usage": get_data_usage,
    "enable_roaming": enable_roaming,
    "disable_roaming": disable_roaming,
    "transfer_to_human_agents": transfer_to_human_agents,
    "refuel_data": refuel_data,
}

#: What each agent tool may change in the carrier DB (the tables are lists keyed by an id field,
#: so a write declares the whole list it touches).
AGENT_WRITES: dict[str, tuple[str, ...]] = {
    "get_customer_by_phone": (),
    "get_customer_by_id": (),
    "get_customer_by_name": (),
    "get_details_by_id": (),
    "suspend_line": ("/lines",),
    "resume_line": ("/lines",),
    "get_bills_for_customer": (),
    "send_payment_request": ("/bills",),
    "get_data_usage": (),
    "enable_roaming": ("/lines",),
    "disable_roaming": ("/lines",),
    "transfer_to_human_agents": (),
    "refuel_data": ("/lines", "/bills", "/customers"),
}
