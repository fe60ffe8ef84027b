"""The simulated phone's state machine (tau2 17e07b1 ``TelecomUserTools`` internals).

Functions of the user DB ``{"device": {...}, "surroundings": {...}}`` as ``model.normalise``
leaves it (every field present). The network search derives connection status, technology and
signal from the SIM, the mode preference, airplane mode, the APN and whether the carrier line is
active; speed and MMS are derived from that plus data switches, VPN and roaming.
"""

from __future__ import annotations

from typing import Any

_SIGNAL_ICONS = {
    "none": "\U0001f4f5 No Signal",
    "poor": "\U0001f4f6\u00b9 Poor",
    "fair": "\U0001f4f6\u00b2 Fair",
    "good": "\U0001f4f6\u00b3 Good",
    "excellent": "\U0001f4f6\u2074 Excellent",
}
_PREFERRED_TECH = {"4g_only": "4G", "3g_only": "3G", "2g_only": "2G"}
NETWORK_MODES = ("4g_5g_preferred", "4g_only", "3g_only", "2g_only")
#: Download speed range (Mbps) per technology, and the share of it each signal level gives.
_TECH_SPEED = {
    "2G": (0.1, 0.4),
    "3G": (1.0, 5.0),
    "4G": (10.0, 100.0),
    "5G": (50.0, 500.0),
    "none": (0.0, 0.0),
}
_SIGNAL_FACTOR = {"poor": 0.2, "fair": 0.5, "good": 0.8, "excellent": 1.0, "none": 0.0}
DEFAULT_APN: dict[str, Any] = {
    "apn_name": "internet", "reset_at_reboot": False, "mms_apn": "mms",
    "mmsc_url": "http://mms.carrier.com/mms/wapenc", "mms_proxy": None, "mms_port": None,
}  # fmt: skip
#: What connect_vpn attaches (tau2's ``default_vpn_details``).
DEFAULT_VPN: dict[str, Any] = {
    "server_address": "192.168.1.1",
    "protocol": "OpenVPN",
    "server_performance": "excellent",
}


def sim_status(device: dict[str, Any]) -> str:
    """``missing`` when the SIM is out, else the card's status (active, locked_pin, locked_puk)."""
    return "missing" if device.get("sim_card_missing") else device.get("sim_card_status", "active")


def network_search(db: dict[str, Any]) -> None:
    """Re-derive the cellular connection (tau2 ``simulate_network_search``).

    An active SIM connects with the preferred technology (4G/5G preferred: 5G unless the place
    has no 5G signal, then 4G) at the place's signal for it; any other SIM, airplane mode, a
    broken APN or an inactive line gives no service, no technology, no signal.
    """
    device, places = db["device"], db["surroundings"]["signal_strength"]
    if sim_status(device) == "active":
        device["network_connection_status"] = "connected"
        pref = device.get("network_mode_preference")
        if pref == "4g_5g_preferred":
            five = places.get("5G", "none")
            tech, signal = ("4G", places.get("4G", "none")) if five == "none" else ("5G", five)
        else:
            tech = _PREFERRED_TECH.get(str(pref), "4G")
            signal = places.get(tech, "none")
        device["network_technology_connected"] = tech
        device["network_signal_strength"] = signal
    else:
        _no_service(device)
    broken_apn = device["active_apn_settings"].get("apn_name") == "broken"
    if device.get("airplane_mode") or broken_apn or not db["surroundings"].get("line_active", True):
        _no_service(device)


def _no_service(device: dict[str, Any]) -> None:
    device["network_connection_status"] = "no_service"
    device["network_technology_connected"] = "none"
    device["network_signal_strength"] = "none"


def mobile_data_working(db: dict[str, Any]) -> bool:
    """Mobile data works: not airplane, some signal, some service, roaming allowed on both ends
    when abroad, data switched on and the plan's data not used up."""
    device, places = db["device"], db["surroundings"]
    if device.get("airplane_mode") or device.get("network_signal_strength") == "none":
        return False
    if device.get("network_connection_status") == "no_service":
        return False
    if places.get("is_abroad") and not (device.get("roaming_enabled") and places.get("roaming_allowed")):
        return False
    if not device.get("data_enabled"):
        return False
    return not places.get("mobile_data_usage_exceeded")


def speed_test(db: dict[str, Any]) -> tuple[float | None, str]:
    """``(Mbps, label)`` or ``(None, "No Connection")``: the middle of the technology's range x the
    signal's share, x 0.1 behind a poor VPN, x 0.2 with data saver, rounded to 2 decimals;
    labels Very Poor < 1 <= Poor < 5 <= Fair < 25 <= Good < 100 <= Excellent."""
    if not mobile_data_working(db):
        return None, "No Connection"
    device = db["device"]
    vpn = device.get("vpn_details") or {}
    factor = 0.1 if device.get("vpn_connected") and vpn and vpn.get("server_performance") == "poor" else 1.0
    if device.get("data_saver_mode"):
        factor *= 0.2
    low, high = _TECH_SPEED.get(str(device.get("network_technology_connected")), (0.0, 0.0))
    signal = _SIGNAL_FACTOR.get(str(device.get("network_signal_strength")), 0.0)
    speed = round((low + high) / 2.0 * signal * factor, 2)
    for limit, label in ((1, "Very Poor"), (5, "Poor"), (25, "Fair"), (100, "Good")):
        if speed < limit:
            return speed, label
    return speed, "Excellent"


def can_send_mms(db: dict[str, Any]) -> bool:
    """MMS works: mobile data works, not on 2G, not Wi-Fi calling with MMS over Wi-Fi (the carrier
    refuses it), an MMSC URL set (an empty one counts as set), and the messaging app holds both
    the SMS and the storage permission."""
    device = db["device"]
    if not mobile_data_working(db) or device.get("network_technology_connected") == "2G":
        return False
    if device.get("wifi_calling_enabled") and device.get("wifi_calling_mms_over_wifi"):
        return False
    if device["active_apn_settings"].get("mmsc_url") is None:
        return False
    app = device.get("app_statuses", {}).get("messaging")
    if app is None:
        return False
    permissions = app.get("permissions", {})
    return bool(permissions.get("storage") and permissions.get("sms"))


def status_bar(device: dict[str, Any]) -> str:
    """The status-bar line tau2 appends to most device actions (icons joined by `` | ``)."""
    parts: list[str] = []
    if device.get("airplane_mode"):
        parts.append("\u2708\ufe0f Airplane Mode")
    else:
        parts.append(_SIGNAL_ICONS.get(str(device.get("network_signal_strength")), _SIGNAL_ICONS["none"]))
        tech = device.get("network_technology_connected", "none")
        if tech != "none":
            parts.append(str(tech))
        if device.get("data_enabled") and tech != "none":
            parts.append("\U0001f4f1 Data Enabled")
            if device.get("data_saver_mode"):
                parts.append("\U0001f53d Data Saver")
        else:
            parts.append("\U0001f4f5 Data Disabled")
    if device.get("wifi_enabled") and device.get("wifi_connected"):
        ssid = device.get("wifi_ssid")
        parts.append(f"\U0001f4e1 Connected to {ssid}" if ssid else "\U0001f4e1 Enabled")
    if device.get("vpn_connected"):
        parts.append("\U0001f512 VPN Connected")
    parts.append(f"\U0001f50b {device.get('battery_level')}%")
    return " | ".join(parts)


def with_status_bar(text: str, device: dict[str, Any]) -> str:
    """``text`` then a ``Status Bar: ...`` line, the way tau2's device actions answer."""
    return f"{text}\nStatus Bar: {status_bar(device)}"


def toggle_airplane(db: dict[str, Any]) -> bool:
    """Flip airplane mode (tau2 ``_toggle_airplane_mode``); returns the new state.

    Turning it off marks the network as searching and drops Wi-Fi if Wi-Fi was on; turning it
    on drops any Wi-Fi connection and the VPN. Either way a network search follows.
    """
    device = db["device"]
    was_on = bool(device.get("airplane_mode"))
    device["airplane_mode"] = not was_on
    if was_on:
        device["network_connection_status"] = "searching"
        if device.get("wifi_enabled"):
            _drop_wifi(device)
    else:
        _drop_wifi(device)
        disconnect_vpn(device)
    network_search(db)
    return bool(device["airplane_mode"])


def _drop_wifi(device: dict[str, Any]) -> None:
    device["wifi_connected"] = False
    device["wifi_ssid"] = None
    device["wifi_signal_strength"] = "none"


def toggle_flag(db: dict[str, Any], field: str, search: bool = True) -> bool:
    """Flip a device switch (data, roaming, data saver, ...), search the network if ``search``."""
    device = db["device"]
    device[field] = not device.get(field)
    if search:
        network_search(db)
    return bool(device[field])


def connect_vpn(device: dict[str, Any]) -> bool:
    """Connect the VPN with the default details; False when it was already connected."""
    if device.get("vpn_connected"):
        return False
    device["vpn_connected"] = True
    device["vpn_details"] = dict(DEFAULT_VPN)
    return True


def disconnect_vpn(device: dict[str, Any]) -> bool:
    """Drop the VPN connection and its details; False when none was connected."""
    if not device.get("vpn_connected"):
        return False
    device["vpn_connected"] = False
    device["vpn_details"] = None
    return True
