"""The phone tools, success and error paths, from the tool behaviour (tau2 17e07b1 ``TelecomUserTools``).

The 18 phone tools that no gold trace calls each get their own tests; the gold ones get the paths
gold never takes. Most phone tools cannot fail in tau2 (they answer "cannot" in text); their error
path is a call tau2's Python signature refuses.
"""

from __future__ import annotations

from typing import Any

import pytest

from engine.core.tools.writeset import json_copy
from engine.domains.tau2_telecom import normalise
from engine.domains.tau2_telecom.device import network_search
from tests.domains.tau2_telecom.conftest import Telecom
from tests.domains.tau2_telecom.helpers import call, failed, ok

USER_TOOLS_TESTED = {
    "check_status_bar",
    "check_network_status",
    "check_network_mode_preference",
    "run_speed_test",
    "check_sim_status",
    "check_data_restriction_status",
    "check_apn_settings",
    "set_apn_settings",
    "check_wifi_status",
    "toggle_wifi",
    "check_wifi_calling_status",
    "check_vpn_status",
    "connect_vpn",
    "check_installed_apps",
    "check_app_status",
    "check_app_permissions",
    "can_send_mms",
    "check_payment_request",
}
EXCELLENT_5G = "\U0001f4f6\u2074 Excellent | 5G | \U0001f4f1 Data Enabled | \U0001f50b 80%"
GOOD = "Connection is good for most activities, including HD streaming."
FAIR = "Connection is okay for web browsing and some standard definition streaming."
POOR = "Connection is slow. Web browsing may be sluggish, streaming difficult."
VERY_POOR = "Connection is very slow. Basic web browsing might be difficult."
NO_SIGNAL = "\U0001f4f5 No Signal | \U0001f4f5 Data Disabled | \U0001f50b 80%"


@pytest.fixture
def db(telecom: Telecom) -> dict[str, Any]:
    """The shipped phone, normalised (all fields present)."""
    phone = json_copy(telecom.user_db)
    normalise(phone, "user")
    return phone


def user(db: dict[str, Any], name: str, **args: Any) -> str:
    return ok(call("user", name, db, **args))


@pytest.mark.parametrize("name", sorted(USER_TOOLS_TESTED))
def test_a_call_tau2s_signature_refuses_is_an_argument_error(db: dict[str, Any], name: str) -> None:
    message = failed(call("user", name, db, bogus=1), "invalid_arguments")
    assert message == f"TelecomUserTools.{name}() got an unexpected keyword argument 'bogus'"


def test_check_status_bar_shows_each_indicator(db: dict[str, Any]) -> None:
    assert (
        user(db, "check_status_bar")
        == "Status Bar: \U0001f4f6\u00b3 Good | 5G | \U0001f4f1 Data Enabled | \U0001f50b 80%"
    )
    network_search(db)
    assert user(db, "check_status_bar") == f"Status Bar: {EXCELLENT_5G}"
    db["device"].update(
        data_saver_mode=True, wifi_enabled=True, wifi_connected=True, wifi_ssid="Home", vpn_connected=True
    )
    assert user(db, "check_status_bar") == (
        "Status Bar: \U0001f4f6\u2074 Excellent | 5G | \U0001f4f1 Data Enabled | \U0001f53d Data Saver | "
        "\U0001f4e1 Connected to Home | \U0001f512 VPN Connected | \U0001f50b 80%"
    )
    db["device"].update(wifi_ssid=None, airplane_mode=True, vpn_connected=False)
    assert (
        user(db, "check_status_bar")
        == "Status Bar: \u2708\ufe0f Airplane Mode | \U0001f4e1 Enabled | \U0001f50b 80%"
    )


def test_check_network_status_and_mode_preference(db: dict[str, Any]) -> None:
    assert user(db, "check_network_status") == (
        "Airplane Mode: OFF\nSIM Card Status: active\nCellular Connection: connected\nCellular Signal: good\n"
        "Cellular Network Type: 5G\nMobile Data Enabled: Yes\nData Roaming Enabled: No\nWi-Fi Radio: OFF\n"
        "Wi-Fi Connected: No"
    )
    db["device"].update(sim_card_missing=True, wifi_enabled=True, wifi_connected=True, wifi_ssid="Cafe")
    text = user(db, "check_network_status")
    assert "SIM Card Status: missing" in text and text.endswith(
        "Wi-Fi Connected: Yes\nConnected Wi-Fi Network: Cafe"
    )
    assert user(db, "check_network_mode_preference") == "Network Mode Preference: 4g_5g_preferred"
    user(db, "set_network_mode_preference", mode="3g_only")
    assert user(db, "check_network_mode_preference") == "Network Mode Preference: 3g_only"


def test_set_network_mode_preference_refuses_an_unknown_mode_in_text(db: dict[str, Any]) -> None:
    text = user(db, "set_network_mode_preference", mode="5g_only")
    assert text.startswith(
        "Failed to set network mode: '5g_only' is not a valid option. "
        "Please use one of: 4g_5g_preferred, 4g_only, 3g_only, 2g_only\nStatus Bar: "
    )
    assert db["device"]["network_mode_preference"] == "4g_5g_preferred"


@pytest.mark.parametrize(
    ("setup", "expected"),
    [
        ({}, "Speed Test Result: 275.00 Mbps (Excellent). Connection is very fast."),
        ({"data_saver_mode": True}, f"Speed Test Result: 55.00 Mbps (Good). {GOOD}"),
        ({"network_mode_preference": "4g_only"}, f"Speed Test Result: 44.00 Mbps (Good). {GOOD}"),
        ({"network_mode_preference": "3g_only"}, f"Speed Test Result: 1.50 Mbps (Poor). {POOR}"),
        ({"network_mode_preference": "2g_only"}, f"Speed Test Result: 0.05 Mbps (Very Poor). {VERY_POOR}"),
        ({"vpn_connected": True, "vpn_details": {"server_performance": "poor"}, "data_saver_mode": True},
         f"Speed Test Result: 5.50 Mbps (Fair). {FAIR}"),
        ({"data_enabled": False}, "Speed test failed: No Connection."),
        ({"airplane_mode": True}, "Speed test failed: No Connection."),
    ],
)  # fmt: skip
def test_run_speed_test(db: dict[str, Any], setup: dict[str, Any], expected: str) -> None:
    db["device"].update(setup)
    network_search(db)
    assert user(db, "run_speed_test") == expected


def test_run_speed_test_abroad_needs_roaming_on_both_ends(db: dict[str, Any]) -> None:
    network_search(db)
    db["surroundings"]["is_abroad"] = True
    assert user(db, "run_speed_test") == "Speed test failed: No Connection."
    db["device"]["roaming_enabled"] = True
    assert user(db, "run_speed_test") == "Speed test failed: No Connection."
    db["surroundings"]["roaming_allowed"] = True
    assert user(db, "run_speed_test").startswith("Speed Test Result: 275.00 Mbps")
    db["surroundings"]["mobile_data_usage_exceeded"] = True
    assert user(db, "run_speed_test") == "Speed test failed: No Connection."


@pytest.mark.parametrize(
    ("setup", "expected"),
    [
        ({}, "Your SIM card is active and working."),
        ({"sim_card_missing": True}, "No SIM card detected in the phone."),
        ({"sim_card_status": "locked_pin"}, "The SIM card is locked with a PIN code."),
        ({"sim_card_status": "locked_puk", "sim_card_missing": True}, "No SIM card detected in the phone."),
        ({"sim_card_status": "locked_puk"}, "The SIM card is locked with a PUK code."),
    ],
)
def test_check_sim_status(db: dict[str, Any], setup: dict[str, Any], expected: str) -> None:
    db["device"].update(setup)
    assert user(db, "check_sim_status") == expected


def test_check_data_restriction_status(db: dict[str, Any]) -> None:
    assert user(db, "check_data_restriction_status") == "Data Saver mode is OFF."
    user(db, "toggle_data_saver_mode")
    assert user(db, "check_data_restriction_status") == "Data Saver mode is ON (limits data usage)."


def test_check_apn_settings(db: dict[str, Any]) -> None:
    advice = "(These are technical settings, usually best left unchanged.)"
    assert user(db, "check_apn_settings") == (
        f"Current APN Name: internet\nMMSC URL (for picture messages): http://mms.carrier.com/mms/wapenc\n{advice}"
    )
    db["device"]["active_apn_settings"].update(apn_name="broken", mmsc_url=None)
    assert (
        user(db, "check_apn_settings")
        == f"Current APN Name: broken\nMMSC URL (for picture messages): Not Set\n{advice}"
    )


def test_set_apn_settings_replaces_the_apn_with_defaults_for_absent_fields(db: dict[str, Any]) -> None:
    db["device"]["active_apn_settings"]["mmsc_url"] = None
    text = user(
        db,
        "set_apn_settings",
        apn_settings={"apn_name": "internet", "mms_port": "8080", "reset_at_reboot": "yes"},
    )
    assert text == f"APN settings set to: internet\nStatus Bar: {EXCELLENT_5G}"
    assert db["device"]["active_apn_settings"] == {
        "apn_name": "internet",
        "reset_at_reboot": True,
        "mms_apn": "mms",
        "mmsc_url": "http://mms.carrier.com/mms/wapenc",
        "mms_proxy": None,
        "mms_port": 8080,
    }
    assert user(db, "set_apn_settings", apn_settings={"apn_name": "broken"}) == (
        f"APN settings set to: broken\nStatus Bar: {NO_SIGNAL}"
    )
    assert db["device"]["network_connection_status"] == "no_service"


def test_set_apn_settings_errors_are_pydantics_validation_text(db: dict[str, Any]) -> None:
    url = "https://errors.pydantic.dev/2.12/v/"
    message = failed(call("user", "set_apn_settings", db, apn_settings={"foo": 1}), "validation_error")
    assert message == (
        "1 validation error for APNSettings\nfoo\n  Extra inputs are not permitted "
        "[type=extra_forbidden, input_value=1, input_type=int]\n"
        f"    For further information visit {url}extra_forbidden"
    )
    message = failed(
        call("user", "set_apn_settings", db, apn_settings={"apn_name": "x", "mms_port": 1.5}),
        "validation_error",
    )
    assert message == (
        "2 validation errors for APNSettings\n"
        "apn_name\n  Input should be 'internet' or 'broken' [type=enum, input_value='x', input_type=str]\n"
        f"    For further information visit {url}enum\n"
        "mms_port\n  Input should be a valid integer, got a number with a fractional part "
        "[type=int_from_float, input_value=1.5, input_type=float]\n"
        f"    For further information visit {url}int_from_float"
    )


def test_check_wifi_status_and_toggle_wifi(db: dict[str, Any]) -> None:
    assert user(db, "check_wifi_status") == "Wi-Fi is turned OFF."
    assert user(db, "toggle_wifi").startswith("Wi-Fi is now ON.\nStatus Bar: ")
    assert user(db, "check_wifi_status") == "Wi-Fi is ON but not connected to any network."
    db["device"].update(wifi_connected=True, wifi_ssid="Home", wifi_signal_strength="good")
    assert user(db, "check_wifi_status") == "Wi-Fi is ON and connected to 'Home'. Signal strength: good."
    assert user(db, "toggle_wifi").startswith("Wi-Fi is now OFF.")
    assert (
        db["device"]["wifi_connected"],
        db["device"]["wifi_ssid"],
        db["device"]["wifi_signal_strength"],
    ) == (
        False,
        None,
        "none",
    )
    db["device"]["airplane_mode"] = True
    assert user(db, "toggle_wifi") == (
        "Cannot change Wi-Fi settings while Airplane Mode is ON.\n"
        "Status Bar: \u2708\ufe0f Airplane Mode | \U0001f50b 80%"
    )
    assert db["device"]["wifi_enabled"] is False


def test_check_wifi_calling_status(db: dict[str, Any]) -> None:
    assert user(db, "check_wifi_calling_status") == "Wi-Fi Calling is currently turned OFF."
    user(db, "toggle_wifi_calling")
    assert user(db, "check_wifi_calling_status") == "Wi-Fi Calling is currently turned ON."


def test_check_vpn_status_and_connect_vpn(db: dict[str, Any]) -> None:
    network_search(db)
    assert user(db, "check_vpn_status") == "VPN is turned OFF."
    db["device"]["vpn_enabled_setting"] = True
    assert user(db, "check_vpn_status") == "VPN is turned ON in settings, but currently not connected."
    assert user(db, "connect_vpn") == (
        "VPN connected successfully.\nStatus Bar: \U0001f4f6\u2074 Excellent | 5G | "
        "\U0001f4f1 Data Enabled | \U0001f512 VPN Connected | \U0001f50b 80%"
    )
    assert user(db, "check_vpn_status") == (
        "VPN is ON and connected. Details: {'server_address': '192.168.1.1', 'protocol': 'OpenVPN', "
        "'server_performance': <PerformanceLevel.EXCELLENT: 'excellent'>}"
    )
    assert user(db, "connect_vpn") == "VPN already connected."
    assert user(db, "run_speed_test").startswith("Speed Test Result: 275.00 Mbps")
    db["device"]["vpn_details"] = None
    assert user(db, "check_vpn_status") == "VPN is ON and connected (no specific details available)."
    assert user(db, "disconnect_vpn").startswith("VPN disconnected successfully.")
    assert user(db, "disconnect_vpn").startswith("No active VPN connection to disconnect.")


def test_check_installed_apps_and_app_status(db: dict[str, Any]) -> None:
    assert (
        user(db, "check_installed_apps")
        == "The following apps are installed on the phone: messaging, browser"
    )
    assert user(db, "check_app_status", app_name="messaging") == (
        "Status for App: messaging\n - Permissions Granted:\n   - sms\n   - storage\n   - phone"
    )
    db["device"]["app_statuses"]["browser"]["permissions"].update(storage=False, network=False)
    assert (
        user(db, "check_app_status", app_name="browser")
        == "Status for App: browser\n - Permissions: None granted."
    )
    assert user(db, "check_app_status", app_name="camera") == "App 'camera' not found on this phone."


def test_check_app_permissions(db: dict[str, Any]) -> None:
    assert (
        user(db, "check_app_permissions", app_name="browser")
        == "App 'browser' has permission for: storage, network."
    )
    assert user(db, "check_app_permissions", app_name="Browser") == "App 'Browser' not found on this phone."
    db["device"]["app_statuses"]["browser"]["permissions"].update(storage=False, network=False)
    assert (
        user(db, "check_app_permissions", app_name="browser")
        == "App 'browser' currently has no permissions granted."
    )


def test_grant_app_permission_answers_errors_in_text(db: dict[str, Any]) -> None:
    assert user(db, "grant_app_permission", app_name="browser", permission="SMS").startswith(
        "Success. Permission 'sms' granted to app 'browser'.\nStatus Bar: "
    )
    assert db["device"]["app_statuses"]["browser"]["permissions"]["sms"] is True
    assert user(db, "grant_app_permission", app_name="browser", permission="camera").startswith(
        "Error. Permission 'camera' not tracked for app 'browser', available permissions: "
        "['sms', 'storage', 'phone', 'network']\nStatus Bar: "
    )
    assert user(db, "grant_app_permission", app_name="camera", permission="sms").startswith(
        "Error. App 'camera' not found. Cannot grant permission.\nStatus Bar: "
    )


@pytest.mark.parametrize(
    ("setup", "can"),
    [
        ({}, True),
        ({"network_mode_preference": "3g_only"}, True),
        ({"network_mode_preference": "2g_only"}, False),
        ({"wifi_calling_enabled": True}, True),
        ({"wifi_calling_enabled": True, "wifi_calling_mms_over_wifi": True}, False),
        ({"active_apn_settings": {"apn_name": "internet", "mmsc_url": None}}, False),
        ({"active_apn_settings": {"apn_name": "internet", "mmsc_url": ""}}, True),
        ({"data_enabled": False}, False),
        ({"app_statuses": {"messaging": {"app_name": "messaging", "permissions": {"sms": True}}}}, False),
        ({"app_statuses": {}}, False),
    ],
)
def test_can_send_mms(db: dict[str, Any], setup: dict[str, Any], can: bool) -> None:
    db["device"].update(setup)
    network_search(db)
    expected = (
        "Your messaging app can send MMS messages." if can else "Your messaging app cannot send MMS messages."
    )
    assert user(db, "can_send_mms") == expected


def test_check_payment_request_and_make_payment(db: dict[str, Any]) -> None:
    assert user(db, "check_payment_request") == "No payment request has been made."
    assert user(db, "make_payment") == "You do not have a payment request."
    db["surroundings"]["payment_request"] = {"bill_id": "B7", "amount_due": 12.5, "paid": False}
    assert user(db, "check_payment_request") == "You have a payment request for bill B7 of 12.5 USD."
    assert user(db, "make_payment") == "Payment of 12.5 USD has been made for bill B7."
    assert db["surroundings"]["payment_request"]["paid"] is True


def test_airplane_mode_drops_wifi_and_vpn_and_reboot_applies_a_pending_apn_reset(db: dict[str, Any]) -> None:
    db["device"].update(wifi_enabled=True, wifi_connected=True, wifi_ssid="Home", vpn_connected=True)
    assert (
        user(db, "toggle_airplane_mode")
        == "Airplane Mode is now ON.\nStatus Bar: \u2708\ufe0f Airplane Mode | \U0001f50b 80%"
    )
    assert (db["device"]["wifi_connected"], db["device"]["vpn_connected"], db["device"]["vpn_details"]) == (
        False,
        False,
        None,
    )
    db["device"]["active_apn_settings"].update(apn_name="broken", mmsc_url=None)
    assert user(db, "reset_apn_settings").startswith("APN settings will reset at reboot.")
    user(db, "toggle_airplane_mode")
    assert (
        user(db, "reboot_device")
        == f"Resetting APN settings...\nRestarting network services...\nStatus Bar: {EXCELLENT_5G}"
    )
    assert db["device"]["active_apn_settings"]["reset_at_reboot"] is False
    assert user(db, "reboot_device") == f"Restarting network services...\nStatus Bar: {EXCELLENT_5G}"
