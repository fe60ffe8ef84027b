"""The two-DB environment around the tools: the sync step and task initialisation.

Mirrors tau2 17e07b1 ``TelecomEnvironment.sync_tools`` and ``Environment.set_state``. The init
functions are the non-tool methods tau2 tasks call in ``initial_state.initialization_actions``
(``set_data_usage``, ``turn_airplane_mode_on``, ``break_apn_settings``, ...); tau2 runs each one
and then syncs. They raise ``ValueError`` where tau2 would raise (a task that cannot be set up).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from typing import Any

from engine.core.tools.context import CallContext
from engine.domains.tau2_telecom import agent_tools as carrier
from engine.domains.tau2_telecom import device as phone
from engine.domains.tau2_telecom import user_apps, user_tools
from engine.domains.tau2_telecom.common import TODAY, ToolError
from engine.domains.tau2_telecom.shapes import normalise, record_view

Init = Callable[..., Any]


def sync(agent_db: dict[str, Any], user_db: dict[str, Any]) -> None:
    """Carry state between the carrier DB and the phone (tau2 ``sync_tools``), in place.

    No-op until the phone knows its number (``surroundings.phone_number``). Then, from the line
    with that number: ``line_active`` (status Active), ``roaming_allowed`` (line roaming) and
    ``mobile_data_usage_exceeded`` (used >= plan limit + refuelled) go to the phone; a paid
    payment request marks its bill ``Paid`` and is cleared; with no request pending, the
    customer's first bill ``Awaiting Payment`` becomes the phone's payment request.
    Writes: agent ``/bills``; user ``/surroundings``. Raises ValueError when the number has no
    line, the line no plan, or a bill id is dangling (tau2 raises there too).
    """
    places = user_db["surroundings"]
    number = places.get("phone_number")
    if number is None:
        return
    try:
        line = carrier.get_line_by_phone(agent_db, number)
        places["line_active"] = line.get("status") == "Active"
        places["roaming_allowed"] = bool(line.get("roaming_enabled"))
        plan = carrier.get_plan(agent_db, line["plan_id"])
        limit = plan["data_limit_gb"] + line.get("data_refueling_gb", 0.0)
        places["mobile_data_usage_exceeded"] = line.get("data_used_gb", 0.0) >= limit
        request = places.get("payment_request")
        if request is not None and request.get("paid"):
            carrier.get_bill(agent_db, request["bill_id"])["status"] = "Paid"
            places["payment_request"] = None
        if places.get("payment_request") is None:
            awaiting = carrier.bills_awaiting_payment(agent_db, carrier.customer_by_phone(agent_db, number))
            if awaiting:
                bill = awaiting[0]
                places["payment_request"] = {
                    "bill_id": bill["bill_id"],
                    "amount_due": bill["total_due"],
                    "paid": False,
                }
    except ToolError as exc:
        raise ValueError(exc.message) from None


# --- carrier-side init functions (tau2 TelecomTools, not tools) -----------------------------------


def set_data_usage(db: dict[str, Any], customer_id: str, line_id: str, data_used_gb: float) -> str:
    """Set an owned line's data used this cycle (GB)."""
    carrier.target_line(db, customer_id, line_id)["data_used_gb"] = data_used_gb
    return f"Data usage set to {data_used_gb} GB for line {line_id}"


def suspend_line_for_overdue_bill(
    db: dict[str, Any], customer_id: str, line_id: str, new_bill_id: str, contract_ended: bool
) -> str:
    """Give the customer an Overdue bill ``new_bill_id`` for last month (one charge of the line's
    monthly price, dated today) and suspend the active line from today; with ``contract_ended``
    the line's contract ends on last month's last day."""
    line = carrier.get_line(db, line_id)
    if line.get("status") != "Active":
        raise ToolError("invalid_state", "Line must be active to suspend for unpaid bill")
    amount = carrier.get_plan(db, line["plan_id"])["price_per_month"]
    if amount <= 0:
        raise ToolError("invalid_value", "Amount must be positive for overdue bill")
    customer = carrier.get_customer(db, customer_id)
    if any(carrier.get_bill(db, b).get("status") == "Overdue" for b in customer.get("bill_ids", [])):
        raise ToolError("invalid_state", "Customer already has an overdue bill")
    last_day = dt.date.fromisoformat(TODAY).replace(day=1) - dt.timedelta(days=1)
    first_day = last_day.replace(day=1)
    first, last = first_day.isoformat(), last_day.isoformat()
    item = {"description": f"Charge for line {line['line_id']}", "amount": amount, "date": TODAY,
            "item_type": "Charge" if amount > 0 else "Credit"}  # fmt: skip
    due = (first_day + dt.timedelta(days=14)).isoformat()
    bill = record_view("bills", {
        "bill_id": new_bill_id, "customer_id": customer_id, "period_start": first, "period_end": last,
        "issue_date": first, "total_due": 0.0 + amount, "due_date": due, "line_items": [item],
        "status": "Overdue",
    })  # fmt: skip
    db.setdefault("bills", []).append(bill)
    customer.setdefault("bill_ids", []).append(new_bill_id)
    line["status"] = "Suspended"
    line["suspension_start_date"] = TODAY
    if contract_ended:
        line["contract_end_date"] = last
    return f"Line {line_id} suspended for unpaid bill {new_bill_id}. Contract ended: {contract_ended}"


def _tool_as_init(name: str, tools: Mapping[str, Callable[..., dict[str, Any]]]) -> Init:
    """A tool used as an init function: its error result raises like tau2's tool would."""

    def run(db: dict[str, Any], **arguments: Any) -> str:
        result = tools[name](db, arguments, CallContext(tool=name))
        if result.get("status") != "success":
            raise ValueError(result.get("message"))
        return str(result["content"])

    run.__name__ = name
    return run


# --- phone-side init functions (tau2 TelecomUserTools, not tools) ---------------------------------


def set_user_info(db: dict[str, Any], name: str, phone_number: str) -> None:
    """Who the caller is: ``surroundings.name`` / ``phone_number`` (sync starts once it is set)."""
    db["surroundings"]["name"] = name
    db["surroundings"]["phone_number"] = phone_number


def set_user_location(db: dict[str, Any], abroad: bool) -> None:
    """Whether the caller is abroad."""
    db["surroundings"]["is_abroad"] = abroad


def _force(db: dict[str, Any], flip: Callable[[], bool], want: bool) -> None:
    """tau2's turn_*_on/off: flip, and flip once more if that landed on the wrong side."""
    if flip() != want:
        flip()


def _switch(field: str, want: bool, search: bool = True) -> Init:
    def run(db: dict[str, Any]) -> None:
        _force(db, lambda: phone.toggle_flag(db, field, search), want)

    return run


def turn_airplane_mode(want: bool) -> Init:
    def run(db: dict[str, Any]) -> None:
        _force(db, lambda: phone.toggle_airplane(db), want)

    return run


def turn_data_on(db: dict[str, Any]) -> None:
    """Data switch on, without a network search (as tau2 does)."""
    db["device"]["data_enabled"] = True


def unseat_sim_card(db: dict[str, Any]) -> None:
    """Take the SIM out and search (no service)."""
    db["device"]["sim_card_missing"] = True
    phone.network_search(db)


def lock_sim_card(db: dict[str, Any], mode: str) -> None:
    """Lock the SIM with a PIN (``pin``) or PUK (``puk``) and search; no tool can undo it."""
    if mode in ("pin", "puk"):
        db["device"]["sim_card_status"] = f"locked_{mode}"
    phone.network_search(db)


def break_apn_settings(db: dict[str, Any]) -> None:
    """APN name ``broken`` and search (no service until reset_apn_settings + reboot)."""
    db["device"]["active_apn_settings"]["apn_name"] = "broken"
    phone.network_search(db)


def break_apn_mms_setting(db: dict[str, Any]) -> None:
    """Clear the MMSC URL (no MMS until reset_apn_settings + reboot)."""
    db["device"]["active_apn_settings"]["mmsc_url"] = None


def set_wifi_calling(db: dict[str, Any], enabled: bool, mms_over_wifi: bool | None = None) -> None:
    """Set Wi-Fi Calling, and MMS over Wi-Fi when given."""
    device = db["device"]
    if device.get("wifi_calling_enabled") != enabled:
        device["wifi_calling_enabled"] = not device.get("wifi_calling_enabled")
    if mms_over_wifi is not None:
        device["wifi_calling_mms_over_wifi"] = mms_over_wifi


def break_vpn(db: dict[str, Any]) -> None:
    """Connect the VPN (if not yet) and make its server slow (speed x 0.1)."""
    device = db["device"]
    phone.connect_vpn(device)
    if not device.get("vpn_details"):
        raise ValueError("VPN is connected without details")
    device["vpn_details"]["server_performance"] = "poor"


def remove_app_permission(db: dict[str, Any], app_name: str, permission: str) -> None:
    """Withdraw one permission from an installed app (unknown app or permission: no change)."""
    app = db["device"].get("app_statuses", {}).get(app_name)
    if app and permission.lower() in user_apps.PERMISSION_NAMES:
        app.setdefault("permissions", {})[permission.lower()] = False


def simulate_network_search(db: dict[str, Any]) -> None:
    """Search the network again (see ``device.network_search``)."""
    phone.network_search(db)


INIT_FUNCTIONS: dict[str, dict[str, Init]] = {
    "agent": {
        "set_data_usage": set_data_usage,
        "suspend_line_for_overdue_bill": suspend_line_for_overdue_bill,
        **{name: _tool_as_init(name, carrier.AGENT_HANDLERS) for name in carrier.AGENT_HANDLERS},
    },
    "user": {
        "set_user_info": set_user_info,
        "set_user_location": set_user_location,
        "turn_airplane_mode_on": turn_airplane_mode(True),
        "turn_airplane_mode_off": turn_airplane_mode(False),
        "unseat_sim_card": unseat_sim_card,
        "lock_sim_card": lock_sim_card,
        "turn_data_on": turn_data_on,
        "turn_data_off": _switch("data_enabled", False),
        "turn_roaming_on": _switch("roaming_enabled", True),
        "turn_roaming_off": _switch("roaming_enabled", False),
        "turn_data_saver_mode_on": _switch("data_saver_mode", True, search=False),
        "turn_data_saver_mode_off": _switch("data_saver_mode", False, search=False),
        "break_apn_settings": break_apn_settings,
        "break_apn_mms_setting": break_apn_mms_setting,
        "set_wifi_calling": set_wifi_calling,
        "break_vpn": break_vpn,
        "remove_app_permission": remove_app_permission,
        "simulate_network_search": simulate_network_search,
        **{name: _tool_as_init(name, user_tools.USER_HANDLERS) for name in user_tools.USER_HANDLERS},
    },
}

#: tau2's ``env_type`` -> our side name.
SIDES = {"assistant": "agent", "user": "user"}


def _merge(base: dict[str, Any], update: Mapping[str, Any]) -> None:
    """Deep merge of dicts (lists and values replaced), like tau2's addict update."""
    for key, value in update.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = value


def initialise(
    agent_db: dict[str, Any], user_db: dict[str, Any], initial_state: Mapping[str, Any] | None
) -> None:
    """Set both DBs up for a task, in place, before its first turn (tau2 ``set_state``).

    Both DBs are first normalised (tau2's defaults filled, see ``model.normalise``); then
    ``initialization_data`` (``agent_data`` / ``user_data``) is deep-merged, each
    ``initialization_actions`` entry ``{env_type, func_name, arguments}`` is run on its side
    followed by a sync, and one more sync closes. The DBs must be this session's own copies:
    init writes anywhere. A ``message_history`` (none of the 114 base tasks has one) is refused.
    Raises ValueError (unknown function, a function tau2 would fail on, a history).
    """
    normalise(agent_db, "agent")
    normalise(user_db, "user")
    sync(agent_db, user_db)  # tau2's Environment.__init__ syncs once
    state = initial_state or {}
    if state.get("message_history"):
        raise ValueError("initial_state.message_history is not supported for tau2 telecom tasks")
    data = state.get("initialization_data") or {}
    if data.get("agent_data"):
        _merge(agent_db, data["agent_data"])
    if data.get("user_data"):
        _merge(user_db, data["user_data"])
    for action in state.get("initialization_actions") or []:
        side = SIDES.get(str(action.get("env_type")))
        func = INIT_FUNCTIONS.get(side or "", {}).get(str(action.get("func_name")))
        if func is None:
            raise ValueError(
                f"Function {action.get('func_name')} not found in {action.get('env_type')} tools"
            )
        try:
            func(agent_db if side == "agent" else user_db, **(action.get("arguments") or {}))
        except ToolError as exc:
            raise ValueError(exc.message) from None
        sync(agent_db, user_db)
    sync(agent_db, user_db)
