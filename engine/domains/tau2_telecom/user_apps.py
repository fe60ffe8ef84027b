"""The caller's phone tools about apps, MMS and payments (part of tau2 17e07b1 ``TelecomUserTools``).

Registered with the other phone tools in ``user_tools.USER_HANDLERS``.
"""

from __future__ import annotations

from typing import Any

from engine.core.tools.context import CallContext
from engine.domains.tau2_telecom import device as phone
from engine.domains.tau2_telecom.common import REQUIRED, Result, success, tau2_tool
from engine.domains.tau2_telecom.shapes import PERMISSIONS

_OWNER = "TelecomUserTools"
_NONE: dict[str, Any] = {}
PERMISSION_NAMES = tuple(f.name for f in PERMISSIONS)


# --- apps and MMS ---------------------------------------------------------------------------------


@tau2_tool(_OWNER, _NONE)
def check_installed_apps(db: dict[str, Any], ctx: CallContext) -> Result:
    """The installed apps' names, comma-separated."""
    names = ", ".join(db["device"].get("app_statuses", {}))
    return success(f"The following apps are installed on the phone: {names}")


def _granted(app: dict[str, Any]) -> list[str]:
    permissions = app.get("permissions", {})
    return [name.replace("_", " ").lower() for name in PERMISSION_NAMES if permissions.get(name)]


@tau2_tool(_OWNER, {"app_name": REQUIRED})
def check_app_status(db: dict[str, Any], ctx: CallContext, app_name: str) -> Result:
    """The app's granted permissions as a bullet list (``None granted.`` when none)."""
    app = db["device"].get("app_statuses", {}).get(app_name)
    if not app:
        return success(f"App '{app_name}' not found on this phone.")
    granted = _granted(app)
    lines = [f"Status for App: {app_name}"]
    if not granted:
        lines.append(" - Permissions: None granted.")
    else:
        lines.append(" - Permissions Granted:")
        lines.extend(f"   - {perm}" for perm in granted)
    return success("\n".join(lines))


@tau2_tool(_OWNER, {"app_name": REQUIRED})
def check_app_permissions(db: dict[str, Any], ctx: CallContext, app_name: str) -> Result:
    """The app's granted permissions in one sentence."""
    app = db["device"].get("app_statuses", {}).get(app_name)
    if not app:
        return success(f"App '{app_name}' not found on this phone.")
    granted = _granted(app)
    if not granted:
        return success(f"App '{app_name}' currently has no permissions granted.")
    return success(f"App '{app_name}' has permission for: {', '.join(granted)}.")


@tau2_tool(_OWNER, {"app_name": REQUIRED, "permission": REQUIRED})
def grant_app_permission(db: dict[str, Any], ctx: CallContext, app_name: str, permission: str) -> Result:
    """Grant one of sms/storage/phone/network (lower-cased first) to an installed app. An unknown
    app or permission answers ``Error. ...`` as a success text, as tau2 does."""
    app = db["device"].get("app_statuses", {}).get(app_name)
    permission = permission.lower()
    if not app:
        text = f"Error. App '{app_name}' not found. Cannot grant permission."
    elif permission not in PERMISSION_NAMES:
        listed = repr(list(PERMISSION_NAMES))
        text = (
            f"Error. Permission '{permission}' not tracked for app '{app_name}', "
            f"available permissions: {listed}"
        )
    else:
        app.setdefault("permissions", {})[permission] = True
        text = f"Success. Permission '{permission}' granted to app '{app_name}'."
    return success(phone.with_status_bar(text, db["device"]))


@tau2_tool(_OWNER, _NONE)
def can_send_mms(db: dict[str, Any], ctx: CallContext) -> Result:
    """Whether the messaging app can send MMS (see ``device.can_send_mms``)."""
    if phone.can_send_mms(db):
        return success("Your messaging app can send MMS messages.")
    return success("Your messaging app cannot send MMS messages.")


# --- payment --------------------------------------------------------------------------------------


@tau2_tool(_OWNER, _NONE)
def check_payment_request(db: dict[str, Any], ctx: CallContext) -> Result:
    """The pending payment request the carrier sent (it arrives with a sync), if any."""
    request = db["surroundings"].get("payment_request")
    if request is None:
        return success("No payment request has been made.")
    return success(
        f"You have a payment request for bill {request['bill_id']} of {request['amount_due']} USD."
    )


@tau2_tool(_OWNER, _NONE)
def make_payment(db: dict[str, Any], ctx: CallContext) -> Result:
    """Pay the pending request (marks it paid; the carrier's bill turns Paid at the next sync)."""
    request = db["surroundings"].get("payment_request")
    if request is None:
        return success("You do not have a payment request.")
    request["paid"] = True
    return success(f"Payment of {request['amount_due']} USD has been made for bill {request['bill_id']}.")
