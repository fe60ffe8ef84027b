"""The caller's 30 phone tools (tau2 17e07b1 ``TelecomUserTools``), on the user (device) DB.

The app, MMS and payment tools live in ``user_apps``; ``USER_HANDLERS`` below lists all 30.

Each returns tau2's exact text. Only ``set_apn_settings`` can fail (a bad settings object) besides
a call with arguments tau2's signature refuses; everything else answers in text, including the
"cannot" cases (``Error. App 'x' not found...`` from grant_app_permission is a success result,
as in tau2). Most actions end with a ``Status Bar:`` line.
"""

from __future__ import annotations

from typing import Any

from engine.core.tools.context import CallContext
from engine.domains.tau2_telecom import device as phone
from engine.domains.tau2_telecom.apn import build_apn
from engine.domains.tau2_telecom.common import REQUIRED, Result, success, tau2_tool
from engine.domains.tau2_telecom.user_apps import (
    can_send_mms,
    check_app_permissions,
    check_app_status,
    check_installed_apps,
    check_payment_request,
    grant_app_permission,
    make_payment,
)

_OWNER = "TelecomUserTools"
_NONE: dict[str, Any] = {}
_SIM_TEXT = {
    "active": "Your SIM card is active and working.",
    "missing": "No SIM card detected in the phone.",
    "locked_pin": "The SIM card is locked with a PIN code.",
    "locked_puk": "The SIM card is locked with a PUK code.",
}
_SPEED_ADVICE = {
    "Very Poor": "Connection is very slow. Basic web browsing might be difficult.",
    "Poor": "Connection is slow. Web browsing may be sluggish, streaming difficult.",
    "Fair": "Connection is okay for web browsing and some standard definition streaming.",
    "Good": "Connection is good for most activities, including HD streaming.",
    "Excellent": "Connection is very fast.",
}


def _on(flag: Any) -> str:
    return "ON" if flag else "OFF"


def _yes(flag: Any) -> str:
    return "Yes" if flag else "No"


# --- status and network ---------------------------------------------------------------------------


@tau2_tool(_OWNER, _NONE)
def check_status_bar(db: dict[str, Any], ctx: CallContext) -> Result:
    """``Status Bar: <icons>``."""
    return success(f"Status Bar: {phone.status_bar(db['device'])}")


@tau2_tool(_OWNER, _NONE)
def check_network_status(db: dict[str, Any], ctx: CallContext) -> Result:
    """Airplane mode, SIM, cellular status/signal/technology, data, roaming and Wi-Fi, one per line."""
    d = db["device"]
    lines = [
        f"Airplane Mode: {_on(d.get('airplane_mode'))}",
        f"SIM Card Status: {phone.sim_status(d)}",
        f"Cellular Connection: {d.get('network_connection_status')}",
        f"Cellular Signal: {d.get('network_signal_strength')}",
        f"Cellular Network Type: {d.get('network_technology_connected')}",
        f"Mobile Data Enabled: {_yes(d.get('data_enabled'))}",
        f"Data Roaming Enabled: {_yes(d.get('roaming_enabled'))}",
        f"Wi-Fi Radio: {_on(d.get('wifi_enabled'))}",
        f"Wi-Fi Connected: {_yes(d.get('wifi_connected'))}",
    ]
    if d.get("wifi_connected"):
        lines.append(f"Connected Wi-Fi Network: {d.get('wifi_ssid')}")
    return success("\n".join(lines))


@tau2_tool(_OWNER, _NONE)
def check_network_mode_preference(db: dict[str, Any], ctx: CallContext) -> Result:
    """``Network Mode Preference: <mode>``."""
    return success(f"Network Mode Preference: {db['device'].get('network_mode_preference')}")


@tau2_tool(_OWNER, {"mode": REQUIRED})
def set_network_mode_preference(db: dict[str, Any], ctx: CallContext, mode: Any) -> Result:
    """Set the preferred network mode and search again; an unknown mode changes nothing and
    answers with the valid ones (a success text, as in tau2)."""
    device = db["device"]
    if mode not in phone.NETWORK_MODES:
        listed = ", ".join(phone.NETWORK_MODES)
        text = f"Failed to set network mode: '{mode}' is not a valid option. Please use one of: {listed}"
        return success(phone.with_status_bar(text, device))
    device["network_mode_preference"] = mode
    phone.network_search(db)
    return success(phone.with_status_bar(f"Preferred Network Mode set to: {mode}", device))


@tau2_tool(_OWNER, _NONE)
def run_speed_test(db: dict[str, Any], ctx: CallContext) -> Result:
    """``Speed Test Result: <x.xx> Mbps (<label>). <advice>``, or ``Speed test failed: No Connection.``."""
    speed, label = phone.speed_test(db)
    if speed is None:
        return success(f"Speed test failed: {label or 'Could not determine speed'}.")
    return success(f"Speed Test Result: {speed:.2f} Mbps ({label}). {_SPEED_ADVICE.get(label, '')}")


@tau2_tool(_OWNER, _NONE)
def toggle_airplane_mode(db: dict[str, Any], ctx: CallContext) -> Result:
    """Flip airplane mode (see ``device.toggle_airplane``)."""
    state = phone.toggle_airplane(db)
    return success(phone.with_status_bar(f"Airplane Mode is now {_on(state)}.", db["device"]))


# --- SIM, data, roaming, data saver ---------------------------------------------------------------


@tau2_tool(_OWNER, _NONE)
def check_sim_status(db: dict[str, Any], ctx: CallContext) -> Result:
    """One sentence per SIM state (active, missing, PIN-locked, PUK-locked)."""
    status = phone.sim_status(db["device"])
    return success(_SIM_TEXT.get(status, f"Unknown SIM status: {status}"))


@tau2_tool(_OWNER, _NONE)
def reseat_sim_card(db: dict[str, Any], ctx: CallContext) -> Result:
    """Put the SIM back in and search again (a locked SIM stays locked)."""
    db["device"]["sim_card_missing"] = False
    phone.network_search(db)
    return success(phone.with_status_bar("SIM card re-seated successfully.", db["device"]))


@tau2_tool(_OWNER, _NONE)
def toggle_data(db: dict[str, Any], ctx: CallContext) -> Result:
    """Flip mobile data and search again."""
    state = phone.toggle_flag(db, "data_enabled")
    return success(phone.with_status_bar(f"Mobile Data is now {_on(state)}.", db["device"]))


@tau2_tool(_OWNER, _NONE)
def toggle_roaming(db: dict[str, Any], ctx: CallContext) -> Result:
    """Flip the phone's data-roaming switch and search again."""
    state = phone.toggle_flag(db, "roaming_enabled")
    return success(phone.with_status_bar(f"Data Roaming is now {_on(state)}.", db["device"]))


@tau2_tool(_OWNER, _NONE)
def check_data_restriction_status(db: dict[str, Any], ctx: CallContext) -> Result:
    """Whether Data Saver is on."""
    if db["device"].get("data_saver_mode"):
        return success("Data Saver mode is ON (limits data usage).")
    return success("Data Saver mode is OFF.")


@tau2_tool(_OWNER, _NONE)
def toggle_data_saver_mode(db: dict[str, Any], ctx: CallContext) -> Result:
    """Flip Data Saver (no network search)."""
    state = phone.toggle_flag(db, "data_saver_mode", search=False)
    return success(phone.with_status_bar(f"Data Saver Mode is now {_on(state)}.", db["device"]))


# --- APN ------------------------------------------------------------------------------------------


@tau2_tool(_OWNER, _NONE)
def check_apn_settings(db: dict[str, Any], ctx: CallContext) -> Result:
    """APN name and MMSC URL (``Not Set`` when empty), plus tau2's advice line."""
    apn = db["device"]["active_apn_settings"]
    return success(
        f"Current APN Name: {apn.get('apn_name') or 'Not Set'}\n"
        f"MMSC URL (for picture messages): {apn.get('mmsc_url') or 'Not Set'}\n"
        "(These are technical settings, usually best left unchanged.)"
    )


@tau2_tool(_OWNER, {"apn_settings": REQUIRED})
def set_apn_settings(db: dict[str, Any], ctx: CallContext, apn_settings: dict[str, Any]) -> Result:
    """Replace the APN with ``apn_settings`` (absent fields take defaults), then search again.
    Error ``validation_error`` with pydantic's text when the object does not make an APN."""
    record = build_apn(apn_settings)
    db["device"]["active_apn_settings"] = record
    phone.network_search(db)
    return success(phone.with_status_bar(f"APN settings set to: {record['apn_name']}", db["device"]))


@tau2_tool(_OWNER, _NONE)
def reset_apn_settings(db: dict[str, Any], ctx: CallContext) -> Result:
    """Mark the APN for reset at the next reboot (nothing else changes until then)."""
    db["device"]["active_apn_settings"]["reset_at_reboot"] = True
    phone.network_search(db)
    return success(phone.with_status_bar("APN settings will reset at reboot.", db["device"]))


# --- Wi-Fi, Wi-Fi calling, VPN --------------------------------------------------------------------


@tau2_tool(_OWNER, _NONE)
def check_wifi_status(db: dict[str, Any], ctx: CallContext) -> Result:
    """Wi-Fi off / on and connected (SSID, signal) / on but not connected."""
    d = db["device"]
    if not d.get("wifi_enabled"):
        return success("Wi-Fi is turned OFF.")
    if d.get("wifi_connected"):
        return success(
            f"Wi-Fi is ON and connected to '{d.get('wifi_ssid')}'. "
            f"Signal strength: {d.get('wifi_signal_strength')}."
        )
    return success("Wi-Fi is ON but not connected to any network.")


@tau2_tool(_OWNER, _NONE)
def toggle_wifi(db: dict[str, Any], ctx: CallContext) -> Result:
    """Flip the Wi-Fi radio (turning it on connects to nothing; off drops any connection);
    refused in airplane mode (a success text, as in tau2)."""
    d = db["device"]
    if d.get("airplane_mode"):
        return success(phone.with_status_bar("Cannot change Wi-Fi settings while Airplane Mode is ON.", d))
    d["wifi_enabled"] = not d.get("wifi_enabled")
    if not d["wifi_enabled"]:
        d["wifi_connected"] = False
        d["wifi_ssid"] = None
        d["wifi_signal_strength"] = "none"
    return success(phone.with_status_bar(f"Wi-Fi is now {_on(d['wifi_enabled'])}.", d))


@tau2_tool(_OWNER, _NONE)
def check_wifi_calling_status(db: dict[str, Any], ctx: CallContext) -> Result:
    """Whether Wi-Fi Calling is on."""
    return success(f"Wi-Fi Calling is currently turned {_on(db['device'].get('wifi_calling_enabled'))}.")


@tau2_tool(_OWNER, _NONE)
def toggle_wifi_calling(db: dict[str, Any], ctx: CallContext) -> Result:
    """Flip Wi-Fi Calling (no network search; MMS-over-Wi-Fi is left as it is)."""
    state = phone.toggle_flag(db, "wifi_calling_enabled", search=False)
    return success(phone.with_status_bar(f"Wi-Fi Calling is now {_on(state)}.", db["device"]))


def vpn_details_text(details: dict[str, Any]) -> str:
    """tau2 prints the VPN details as a Python dict whose performance is an enum member."""
    perf = str(details.get("server_performance"))
    return (
        f"{{'server_address': {details.get('server_address')!r}, 'protocol': {details.get('protocol')!r}, "
        f"'server_performance': <PerformanceLevel.{perf.upper()}: {perf!r}>}}"
    )


@tau2_tool(_OWNER, _NONE)
def check_vpn_status(db: dict[str, Any], ctx: CallContext) -> Result:
    """Connected (with details) / on in settings but not connected / off."""
    d = db["device"]
    if d.get("vpn_connected"):
        details = d.get("vpn_details")
        if details:
            return success(f"VPN is ON and connected. Details: {vpn_details_text(details)}")
        return success("VPN is ON and connected (no specific details available).")
    if d.get("vpn_enabled_setting"):
        return success("VPN is turned ON in settings, but currently not connected.")
    return success("VPN is turned OFF.")


@tau2_tool(_OWNER, _NONE)
def connect_vpn(db: dict[str, Any], ctx: CallContext) -> Result:
    """Connect the VPN with the default server (performance excellent); ``VPN already connected.``
    (no status bar) when it was."""
    if not phone.connect_vpn(db["device"]):
        return success("VPN already connected.")
    return success(phone.with_status_bar("VPN connected successfully.", db["device"]))


@tau2_tool(_OWNER, _NONE)
def disconnect_vpn(db: dict[str, Any], ctx: CallContext) -> Result:
    """Drop the VPN connection and its details."""
    done = phone.disconnect_vpn(db["device"])
    text = "VPN disconnected successfully." if done else "No active VPN connection to disconnect."
    return success(phone.with_status_bar(text, db["device"]))


# --- device ---------------------------------------------------------------------------------------


@tau2_tool(_OWNER, _NONE)
def reboot_device(db: dict[str, Any], ctx: CallContext) -> Result:
    """Restart: an APN marked for reset goes back to the defaults, then the network is searched."""
    d = db["device"]
    lines = []
    if d["active_apn_settings"].get("reset_at_reboot"):
        lines.append("Resetting APN settings...")
        d["active_apn_settings"] = dict(phone.DEFAULT_APN)
    lines.append("Restarting network services...")
    d["network_connection_status"] = "searching"
    phone.network_search(db)
    return success(phone.with_status_bar("\n".join(lines), d))


USER_HANDLERS = {
    "check_status_bar": check_status_bar,
    "check_network_status": check_network_status,
    "check_network_mode_preference": check_network_mode_preference,
    "set_network_mode_preference": set_network_mode_preference,
    "run_speed_test": run_speed_test,
    "toggle_airplane_mode": toggle_airplane_mode,
    "check_sim_status": check_sim_status,
    "reseat_sim_card": reseat_sim_card,
    "toggle_data": toggle_data,
    "toggle_roaming": toggle_roaming,
    "check_data_restriction_status": check_data_restriction_status,
    "toggle_data_saver_mode": toggle_data_saver_mode,
    "check_apn_settings": check_apn_settings,
    "set_apn_settings": set_apn_settings,
    "reset_apn_settings": reset_apn_settings,
    "check_wifi_status": check_wifi_status,
    "toggle_wifi": toggle_wifi,
    "check_wifi_calling_status": check_wifi_calling_status,
    "toggle_wifi_calling": toggle_wifi_calling,
    "check_vpn_status": check_vpn_status,
    "connect_vpn": connect_vpn,
    "disconnect_vpn": disconnect_vpn,
    "check_installed_apps": check_installed_apps,
    "check_app_status": check_app_status,
    "check_app_permissions": check_app_permissions,
    "grant_app_permission": grant_app_permission,
    "can_send_mms": can_send_mms,
    "reboot_device": reboot_device,
    "check_payment_request": check_payment_request,
    "make_payment": make_payment,
}

#: What each phone tool may change in the user DB.
USER_WRITES: dict[str, tuple[str, ...]] = {
    "check_status_bar": (),
    "check_network_status": (),
    "check_network_mode_preference": (),
    "set_network_mode_preference": ("/device",),
    "run_speed_test": (),
    "toggle_airplane_mode": ("/device",),
    "check_sim_status": (),
    "reseat_sim_card": ("/device",),
    "toggle_data": ("/device",),
    "toggle_roaming": ("/device",),
    "check_data_restriction_status": (),
    "toggle_data_saver_mode": ("/device/data_saver_mode",),
    "check_apn_settings": (),
    "set_apn_settings": ("/device",),
    "reset_apn_settings": ("/device",),
    "check_wifi_status": (),
    "toggle_wifi": ("/device",),
    "check_wifi_calling_status": (),
    "toggle_wifi_calling": ("/device/wifi_calling_enabled",),
    "check_vpn_status": (),
    "connect_vpn": ("/device",),
    "disconnect_vpn": ("/device",),
    "check_installed_apps": (),
    "check_app_status": (),
    "check_app_permissions": (),
    "grant_app_permission": ("/device/app_statuses/{app_name}/permissions",),
    "can_send_mms": (),
    "reboot_device": ("/device",),
    "check_payment_request": (),
    "make_payment": ("/surroundings/payment_request",),
}
