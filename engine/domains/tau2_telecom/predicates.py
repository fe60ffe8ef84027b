"""Env-assertion predicates of tau2's telecom tasks, on both DBs.

A task's ``evaluation_criteria.env_assertions`` entry ``{env_type, func_name, arguments,
assert_value}`` holds when ``PREDICATES[func_name](agent_db, user_db, **arguments) ==
assert_value``. Every predicate takes both DBs and reads one of them: carrier-side
(``env_type: assistant``) ones read ``agent_db``, phone-side (``env_type: user``) ones ``user_db``.
tau2 17e07b1 evaluates them after a sync, on the DBs a session ends with. They raise ValueError
where tau2's raise (unknown customer or line, an invalid status name, a missing overdue bill).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.domains.tau2_telecom import agent_tools as carrier
from engine.domains.tau2_telecom import device as phone
from engine.domains.tau2_telecom.common import ToolError

Predicate = Callable[..., Any]
_NETWORK_STATUSES = ("connected", "searching", "no_service", "emergency_only")


def _line(agent_db: dict[str, Any], customer_id: str, line_id: str) -> dict[str, Any]:
    try:
        return carrier.target_line(agent_db, customer_id, line_id)
    except ToolError as exc:
        raise ValueError(exc.message) from None


# --- carrier side ---------------------------------------------------------------------------------


def assert_data_refueling_amount(
    agent_db: dict[str, Any], user_db: dict[str, Any], customer_id: str, line_id: str, expected_amount: float
) -> bool:
    """The owned line's refuelled GB equal ``expected_amount`` (within 1e-6)."""
    return abs(_line(agent_db, customer_id, line_id).get("data_refueling_gb", 0.0) - expected_amount) < 1e-6


def assert_line_status(
    agent_db: dict[str, Any], user_db: dict[str, Any], customer_id: str, line_id: str, expected_status: str
) -> bool:
    """The owned line's status is ``expected_status`` (Active, Suspended, Pending Activation,
    Closed; tau2 compares without checking the name, so an unknown one is simply False)."""
    return _line(agent_db, customer_id, line_id).get("status") == expected_status


def assert_overdue_bill_exists(
    agent_db: dict[str, Any], user_db: dict[str, Any], customer_id: str, overdue_bill_id: str
) -> bool:
    """True when the customer holds that bill and it is Overdue; otherwise raises (as tau2 does)."""
    try:
        customer = carrier.get_customer(agent_db, customer_id)
        if overdue_bill_id not in customer.get("bill_ids", []):
            raise ValueError(f"Overdue bill {overdue_bill_id} not found")
        if carrier.get_bill(agent_db, overdue_bill_id).get("status") != "Overdue":
            raise ValueError(f"Overdue bill {overdue_bill_id} is not overdue")
    except ToolError as exc:
        raise ValueError(exc.message) from None
    return True


def assert_no_overdue_bill(agent_db: dict[str, Any], user_db: dict[str, Any], overdue_bill_id: str) -> bool:
    """The bill is gone or Paid."""
    bill = next((b for b in agent_db.get("bills", []) if b.get("bill_id") == overdue_bill_id), None)
    return bill is None or bill.get("status") == "Paid"


# --- phone side -----------------------------------------------------------------------------------


def assert_airplane_mode_status(
    agent_db: dict[str, Any], user_db: dict[str, Any], expected_status: bool
) -> bool:
    """Airplane mode is ``expected_status``."""
    return user_db["device"].get("airplane_mode") == expected_status


def assert_service_status(agent_db: dict[str, Any], user_db: dict[str, Any], expected_status: str) -> bool:
    """The cellular connection status is ``expected_status`` (connected, searching, no_service,
    emergency_only)."""
    if expected_status not in _NETWORK_STATUSES:
        raise ValueError(f"'{expected_status}' is not a valid NetworkStatus")
    return user_db["device"].get("network_connection_status") == expected_status


def assert_mobile_data_status(
    agent_db: dict[str, Any], user_db: dict[str, Any], expected_status: bool
) -> bool:
    """Whether mobile data works (see ``device.mobile_data_working``) is ``expected_status``."""
    return phone.mobile_data_working(user_db) == expected_status


def assert_mobile_roaming_status(
    agent_db: dict[str, Any], user_db: dict[str, Any], expected_status: bool
) -> bool:
    """The phone's data-roaming switch is ``expected_status``."""
    return user_db["device"].get("roaming_enabled") == expected_status


def assert_mobile_data_saver_mode_status(
    agent_db: dict[str, Any], user_db: dict[str, Any], expected_status: bool
) -> bool:
    """Data Saver is ``expected_status``."""
    return user_db["device"].get("data_saver_mode") == expected_status


def assert_internet_speed(
    agent_db: dict[str, Any], user_db: dict[str, Any], expected_speed: float, expected_desc: str | None = None
) -> bool:
    """The speed test gives at least ``expected_speed`` Mbps (0 without a connection) and, when
    given, the label ``expected_desc`` (case-insensitive)."""
    speed, label = phone.speed_test(user_db)
    speed = speed or 0.0
    if expected_desc is None:
        return speed >= expected_speed
    return speed >= expected_speed and label.lower() == expected_desc.lower()


def assert_internet_not_excellent(agent_db: dict[str, Any], user_db: dict[str, Any]) -> bool:
    """The speed test's label is not Excellent."""
    return phone.speed_test(user_db)[1].lower() != "excellent"


def assert_can_send_mms(agent_db: dict[str, Any], user_db: dict[str, Any], expected_status: bool) -> bool:
    """Whether MMS can be sent (see ``device.can_send_mms``) is ``expected_status``."""
    return phone.can_send_mms(user_db) == expected_status


def assert_mobile_data_usage_exceeded(
    agent_db: dict[str, Any], user_db: dict[str, Any], expected_status: bool
) -> bool:
    """The phone's view of "plan data used up" (set by the sync) is ``expected_status``."""
    return user_db["surroundings"].get("mobile_data_usage_exceeded") == expected_status


PREDICATES: dict[str, Predicate] = {
    "assert_data_refueling_amount": assert_data_refueling_amount,
    "assert_line_status": assert_line_status,
    "assert_overdue_bill_exists": assert_overdue_bill_exists,
    "assert_no_overdue_bill": assert_no_overdue_bill,
    "assert_airplane_mode_status": assert_airplane_mode_status,
    "assert_service_status": assert_service_status,
    "assert_mobile_data_status": assert_mobile_data_status,
    "assert_mobile_roaming_status": assert_mobile_roaming_status,
    "assert_mobile_data_saver_mode_status": assert_mobile_data_saver_mode_status,
    "assert_internet_speed": assert_internet_speed,
    "assert_internet_not_excellent": assert_internet_not_excellent,
    "assert_can_send_mms": assert_can_send_mms,
    "assert_mobile_data_usage_exceeded": assert_mobile_data_usage_exceeded,
}

#: Which DB each predicate reads (tau2's ``env_type``: assistant -> agent).
PREDICATE_SIDES: dict[str, str] = {
    name: "agent" if name in {"assert_data_refueling_amount", "assert_line_status",
                              "assert_overdue_bill_exists", "assert_no_overdue_bill"} else "user"
    for name in PREDICATES
}  # fmt: skip


def check_assertion(agent_db: dict[str, Any], user_db: dict[str, Any], assertion: dict[str, Any]) -> bool:
    """One tau2 ``env_assertions`` entry: the predicate's value equals ``assert_value`` (default
    True). Raises KeyError for an unknown function, ValueError where the predicate raises."""
    func = PREDICATES[str(assertion["func_name"])]
    value = func(agent_db, user_db, **(assertion.get("arguments") or {}))
    return value == assertion.get("assert_value", True)
