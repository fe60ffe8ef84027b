"""The shape of tau2's telecom DBs as a declared table, and tau2's DB hash reproduced from it.

tau2 17e07b1 keeps both DBs as pydantic models (``data_model.py`` for the carrier,
``user_data_model.py`` for the phone). Two things of those models matter outside tau2:

- **field order and defaults**: ``model_dump()`` lists every field in declaration order and fills
  absent optional fields with their defaults (mostly null). Tool results that show a record
  (``get_details_by_id``, ``resume_line``, ...) are JSON of that dump, so their key order is the
  model's; the hash sees the defaults.
- **datetimes**: the TOML holds ``"2025-01-15T10:30:00"``; pydantic parses it and
  ``json.dumps(default=str)`` prints ``"2025-01-15 10:30:00"``. Dates print unchanged.

The tables below restate those models (names, order, defaults; no validation). ``materialise``
applies them to a plain JSON-shaped DB; ``tau2_hash`` is then tau2's
``sha256(json.dumps(model_dump(), sort_keys=True, default=str))``. Numbers are not coerced: the
upstream files hold floats wherever the models say float, and tau2 never re-validates after a
write, so an int written by a tool stays an int in tau2's dump too.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from engine.core.tools.writeset import json_copy

#: A field without a default (tau2 refuses a record without it; materialise leaves it absent).
_REQUIRED: Any = object()
#: A nested record whose default is that record with all its own defaults.
_NESTED: Any = object()


@dataclass(frozen=True)
class F:
    """One model field: ``name``, ``default``, and for nested records their ``fields`` and
    ``shape`` (``one`` record, a ``list`` of records, or a ``map`` of name -> record);
    ``datetime`` marks a datetime field (printed ``YYYY-MM-DD HH:MM:SS``)."""

    name: str
    default: Any = _REQUIRED
    fields: tuple[F, ...] | None = None
    shape: Literal["one", "list", "map"] = "one"
    datetime: bool = False


# --- carrier DB (tau2.domains.telecom.data_model) -------------------------------------------------
PLAN = (F("plan_id"), F("name"), F("data_limit_gb"), F("price_per_month"), F("data_refueling_price_per_gb"))
DEVICE = (
    F("device_id"), F("device_type"), F("model"), F("imei", None), F("is_esim_capable"),
    F("activated", False), F("activation_date", None, datetime=True),
    F("last_esim_transfer_date", None, datetime=True),
)  # fmt: skip
LINE = (
    F("line_id"), F("phone_number"), F("status", "Pending Activation"), F("plan_id"), F("device_id", None),
    F("data_used_gb", 0.0), F("data_refueling_gb", 0.0), F("roaming_enabled", False),
    F("contract_end_date", None), F("last_plan_change_date", None), F("last_sim_replacement_date", None),
    F("suspension_start_date", None),
)  # fmt: skip
LINE_ITEM = (F("description"), F("amount"), F("date"), F("item_type"))
BILL = (
    F("bill_id"), F("customer_id"), F("period_start"), F("period_end"), F("issue_date"), F("total_due"),
    F("due_date"), F("line_items", [], LINE_ITEM, "list"), F("status", "Draft"),
)  # fmt: skip
ADDRESS = (F("street"), F("city"), F("state"), F("zip_code"))
PAYMENT_METHOD = (F("method_type"), F("account_number_last_4"), F("expiration_date"))
CUSTOMER = (
    F("customer_id"), F("full_name"), F("date_of_birth"), F("email"), F("phone_number"),
    F("address", _REQUIRED, ADDRESS), F("account_status", "Pending Verification"),
    F("payment_methods", [], PAYMENT_METHOD, "list"), F("line_ids", []), F("bill_ids", []),
    F("created_at", "2025-01-01", datetime=True), F("last_extension_date", None),
    F("goodwill_credit_used_this_year", 0.0),
)  # fmt: skip
AGENT_DB = (
    F("plans", [], PLAN, "list"), F("customers", [], CUSTOMER, "list"), F("lines", [], LINE, "list"),
    F("bills", [], BILL, "list"), F("devices", [], DEVICE, "list"),
)  # fmt: skip

# --- the phone (tau2.domains.telecom.user_data_model) ---------------------------------------------
APN = (
    F("apn_name", "internet"), F("reset_at_reboot", False), F("mms_apn", "mms"),
    F("mmsc_url", "http://mms.carrier.com/mms/wapenc"), F("mms_proxy", None), F("mms_port", None),
)  # fmt: skip
VPN_DETAILS = (F("server_address", None), F("protocol", None), F("server_performance", "unknown"))
PERMISSIONS = (F("sms", False), F("storage", False), F("phone", False), F("network", False))
APP = (F("app_name"), F("permissions", _NESTED, PERMISSIONS))
DEFAULT_APPS = {
    "messaging": {
        "app_name": "messaging",
        "permissions": {"sms": True, "storage": True, "phone": True, "network": False},
    },
    "browser": {
        "app_name": "browser",
        "permissions": {"sms": False, "storage": True, "phone": False, "network": True},
    },
}
DEVICE_STATE = (
    F("sim_card_status", "active"), F("sim_card_missing", False), F("airplane_mode", False),
    F("network_signal_strength", "good"), F("network_technology_connected", "5G"),
    F("network_connection_status", "connected"), F("battery_level", 80), F("data_enabled", True),
    F("roaming_enabled", False), F("network_mode_preference", "4g_5g_preferred"),
    F("active_apn_settings", _NESTED, APN), F("wifi_enabled", False), F("wifi_connected", False),
    F("wifi_ssid", None), F("wifi_signal_strength", "none"), F("wifi_calling_enabled", False),
    F("wifi_calling_mms_over_wifi", False), F("data_saver_mode", False), F("vpn_enabled_setting", False),
    F("vpn_connected", False), F("vpn_details", None, VPN_DETAILS),
    F("app_statuses", DEFAULT_APPS, APP, "map"),
)  # fmt: skip
PAYMENT_REQUEST = (F("bill_id"), F("amount_due"), F("paid", False))
SURROUNDINGS = (
    F("name", None), F("phone_number", None), F("is_abroad", False), F("roaming_allowed", False),
    F("signal_strength", {"2G": "poor", "3G": "fair", "4G": "good", "5G": "excellent"}),
    F("mobile_data_usage_exceeded", False), F("line_active", True),
    F("payment_request", None, PAYMENT_REQUEST),
)  # fmt: skip
USER_DB = (F("device", _NESTED, DEVICE_STATE), F("surroundings", _NESTED, SURROUNDINGS))

Side = Literal["agent", "user"]
TOP: dict[Side, tuple[F, ...]] = {"agent": AGENT_DB, "user": USER_DB}


def _datetime_text(value: Any) -> Any:
    """A datetime as tau2's dump prints it (``str(datetime)``): the ``T`` becomes a space."""
    if isinstance(value, dt.datetime):
        return str(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, str) and len(value) >= 19 and value[10] == "T":
        return value[:10] + " " + value[11:]
    return value


def _value(field: F, value: Any) -> Any:
    if field.datetime:
        return _datetime_text(value)
    if isinstance(value, dt.date):  # a TOML date literal; tau2 prints it ISO
        return value.isoformat()
    if field.fields is None or value is None:
        return json_copy(value)
    if field.shape == "list":
        return [materialise(item, field.fields) for item in value]
    if field.shape == "map":
        return {key: materialise(item, field.fields) for key, item in value.items()}
    return materialise(value, field.fields)


def materialise(record: Mapping[str, Any], fields: tuple[F, ...]) -> dict[str, Any]:
    """A new dict of ``record`` as tau2's ``model_dump`` shows it: declared fields in model order,
    absent ones filled with their defaults, datetimes in tau2's text; undeclared keys follow
    unchanged (tau2 forbids them, so they only appear if a caller put them there)."""
    out: dict[str, Any] = {}
    for field in fields:
        if field.name in record:
            out[field.name] = _value(field, record[field.name])
        elif field.default is _NESTED:
            out[field.name] = materialise({}, field.fields or ())
        elif field.default is not _REQUIRED:
            out[field.name] = json_copy(field.default)
    declared = {f.name for f in fields}
    out.update({k: json_copy(v) for k, v in record.items() if k not in declared})
    return out


def record_view(table: str, record: Mapping[str, Any]) -> dict[str, Any]:
    """One carrier record (``table`` = plans, customers, lines, bills or devices) as tau2 dumps it."""
    spec = next(f for f in AGENT_DB if f.name == table)
    assert spec.fields is not None
    return materialise(record, spec.fields)


def normalise(db: dict[str, Any], side: Side) -> None:
    """Rewrite ``db`` in place into tau2's dumped form (defaults filled, model order, datetimes as
    tau2 prints them). Top-level keys starting with ``_`` (engine metadata) are kept as they are."""
    meta = {k: v for k, v in db.items() if k.startswith("_")}
    view = materialise({k: v for k, v in db.items() if not k.startswith("_")}, TOP[side])
    db.clear()
    db.update(view)
    db.update(meta)


def tau2_hash(db: Mapping[str, Any], side: Side) -> str:
    """tau2's DB hash: sha256 hex of ``json.dumps(model_dump(), sort_keys=True, default=str)``.

    ``side`` picks the model (``agent``: carrier DB, ``user``: the phone). Works on a raw or a
    normalised DB; top-level keys starting with ``_`` (engine metadata) are left out.
    """
    view = materialise({k: v for k, v in db.items() if not str(k).startswith("_")}, TOP[side])
    text = json.dumps(view, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()
