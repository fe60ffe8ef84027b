"""eva_airline write handlers that pay out: refunds, travel credits, hotel and meal vouchers.

Each is ``(db, args, ctx) -> result`` with ``args`` already validated; ids are minted from the
confirmation number (and the successful-call index for refunds), never a clock or uuid. Tables are
created on first write (``hotel_vouchers`` does not exist in the initial DBs). Mirrors eva 0.1.3.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.core.tools.context import CallContext, error
from engine.domains.eva_airline.common import find_reservation, reservation_not_found

Result = dict[str, Any]
_MEAL_VOUCHER_AMOUNT = {
    "delay_over_2_hours": 12,
    "delay_over_4_hours": 15,
    "cancellation_wait_same_day": 15,
    "irrops_overnight": 25,
}


def process_refund(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> Result:
    """Record ``refunds["REF-<CONF>-<nnn>"]`` (nnn = successful-call index). Error: ``not_found``."""
    conf = args["confirmation_number"].upper()
    if not find_reservation(db, conf):
        return reservation_not_found(conf)
    amount, refund_type = float(args["refund_amount"]), args["refund_type"]
    refund_id = f"REF-{conf}-{ctx.call_index:03d}"
    db.setdefault("refunds", {})[refund_id] = {
        "refund_id": refund_id,
        "confirmation_number": conf,
        "refund_amount": amount,
        "refund_type": refund_type,
        "processing_days": 7,
        "initiated_date": ctx.today,
        "status": "processing",
    }
    return {
        "status": "success",
        "confirmation_number": conf,
        "refund_id": refund_id,
        "refund_amount": amount,
        "refund_type": refund_type,
        "processing_days": 7,
        "message": f"${amount} refund initiated, processing time 7 business days",
    }


def issue_travel_credit(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> Result:
    """Write ``travel_credits["TC<CONF><pid[:3]>"]`` valid 12 months. Error: ``not_found``."""
    conf = args["confirmation_number"].upper()
    if not find_reservation(db, conf):
        return reservation_not_found(conf)
    pax, amount = args["passenger_id"], float(args["amount"])
    code = f"TC{conf}{pax[:3].upper()}"
    today = ctx.today
    db.setdefault("travel_credits", {})[code] = {
        "credit_code": code,
        "confirmation_number": conf,
        "passenger_id": pax,
        "amount": amount,
        "credit_reason": args["credit_reason"],
        "issued_date": today,
        "expiry_date": str(int(today[:4]) + 1) + today[4:],
        "status": "active",
    }
    return {
        "status": "success",
        "confirmation_number": conf,
        "passenger_id": pax,
        "credit_code": code,
        "amount": amount,
        "valid_months": 12,
        "message": f"${amount} travel credit issued with code {code}",
    }


def issue_hotel_voucher(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> Result:
    """Write ``hotel_vouchers["HOTEL-<CONF>"]`` (table created on first use). Errors: ``not_found``,
    ``exceeds_authority`` (more than 3 nights)."""
    conf = args["confirmation_number"].upper()
    if not find_reservation(db, conf):
        return reservation_not_found(conf)
    nights = args["num_nights"]
    if nights > 3:
        return error("exceeds_authority", "Hotel vouchers can be issued for maximum of 3 nights")
    code = f"HOTEL-{conf}"
    db.setdefault("hotel_vouchers", {})[code] = {
        "voucher_code": code,
        "confirmation_number": conf,
        "passenger_id": args["passenger_id"],
        "num_nights": nights,
        "issued_date": ctx.today,
        "status": "active",
    }
    return {
        "status": "success",
        "confirmation_number": conf,
        "passenger_id": args["passenger_id"],
        "voucher_code": code,
        "number_of_nights": nights,
        "valid_at": "Any hotels in airport area",
        "message": f"Hotel voucher issued with code {code} for {nights} nights",
    }


def issue_meal_voucher(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> Result:
    """Write ``meal_vouchers["MEAL-<CONF>-<pid[:4]>"]``, amount by reason. Error: ``not_found``."""
    conf = args["confirmation_number"].upper()
    if not find_reservation(db, conf):
        return reservation_not_found(conf)
    pax, reason = args["passenger_id"], args["voucher_reason"]
    amount = _MEAL_VOUCHER_AMOUNT.get(reason, 12)
    code = f"MEAL-{conf}-{pax[:4].upper()}"
    db.setdefault("meal_vouchers", {})[code] = {
        "voucher_code": code,
        "confirmation_number": conf,
        "passenger_id": pax,
        "amount": amount,
        "voucher_reason": reason,
        "issued_date": ctx.today,
        "status": "active",
    }
    return {
        "status": "success",
        "confirmation_number": conf,
        "passenger_id": pax,
        "voucher_code": code,
        "amount": amount,
        "valid_at": "Airport terminal restaurants",
        "message": f"${amount} meal voucher issued with code {code}",
    }
