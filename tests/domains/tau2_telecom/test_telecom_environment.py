"""Sync, task initialisation, the declared DB shape and hash, and each tool's WRITES declaration."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from engine.core.tools.writeset import json_copy
from engine.domains.tau2_telecom import (
    AGENT_HANDLERS,
    AGENT_WRITES,
    USER_HANDLERS,
    USER_WRITES,
    initialise,
    normalise,
    sync,
    tau2_hash,
)
from engine.domains.tau2_telecom.gold import Replay, run_call
from engine.domains.tau2_telecom.shapes import Side
from tests.domains.tau2_telecom.conftest import Telecom
from tests.domains.tau2_telecom.helpers import call, ok

JOHN = {
    "env_type": "user",
    "func_name": "set_user_info",
    "arguments": {"name": "John Smith", "phone_number": "555-123-2002"},
}


@pytest.fixture
def dbs(telecom: Telecom) -> tuple[dict[str, Any], dict[str, Any]]:
    """Both shipped DBs, set up with only the caller's identity (John Smith, line L1002)."""
    agent_db, user_db = json_copy(telecom.agent_db), json_copy(telecom.user_db)
    initialise(agent_db, user_db, {"initialization_actions": [JOHN]})
    return agent_db, user_db


def _line(agent_db: dict[str, Any], line_id: str) -> dict[str, Any]:
    return next(line for line in agent_db["lines"] if line["line_id"] == line_id)


# --- sync ------------------------------------------------------------------------------------------


def test_sync_does_nothing_until_the_phone_knows_its_number(telecom: Telecom) -> None:
    agent_db, user_db = json_copy(telecom.agent_db), json_copy(telecom.user_db)
    initialise(agent_db, user_db, None)
    before = json_copy((agent_db, user_db))
    _line(agent_db, "L1002")["status"] = "Suspended"
    sync(agent_db, user_db)
    assert user_db == before[1] and user_db["surroundings"]["line_active"] is True


def test_sync_carries_line_status_roaming_and_data_use_to_the_phone(
    dbs: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    agent_db, user_db = dbs
    places = user_db["surroundings"]
    assert (places["line_active"], places["roaming_allowed"], places["mobile_data_usage_exceeded"]) == (
        True,
        True,
        False,
    )
    ok(call("agent", "suspend_line", agent_db, customer_id="C1001", line_id="L1002", reason="r"))
    ok(call("agent", "disable_roaming", agent_db, customer_id="C1001", line_id="L1002"))
    _line(agent_db, "L1002")["data_used_gb"] = 15.0  # Premium Plan: 15 GB; used >= limit + refuelled
    assert (places["line_active"], places["roaming_allowed"]) == (True, True)  # nothing moves without a sync
    sync(agent_db, user_db)
    assert (places["line_active"], places["roaming_allowed"], places["mobile_data_usage_exceeded"]) == (
        False,
        False,
        True,
    )
    assert user_db["device"]["network_connection_status"] == "connected"  # sync never searches the network
    ok(call("agent", "refuel_data", agent_db, customer_id="C1001", line_id="L1002", gb_amount=0.5))
    sync(agent_db, user_db)
    assert places["mobile_data_usage_exceeded"] is False


def test_sync_delivers_a_payment_request_and_settles_it_once_paid(
    dbs: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    agent_db, user_db = dbs
    ok(call("agent", "send_payment_request", agent_db, customer_id="C1001", bill_id="B1002"))
    assert ok(call("user", "make_payment", user_db)) == "You do not have a payment request."
    sync(agent_db, user_db)
    assert user_db["surroundings"]["payment_request"] == {
        "bill_id": "B1002",
        "amount_due": 150.0,
        "paid": False,
    }
    assert ok(call("user", "make_payment", user_db)) == "Payment of 150.0 USD has been made for bill B1002."
    bill = next(b for b in agent_db["bills"] if b["bill_id"] == "B1002")
    assert bill["status"] == "Awaiting Payment"
    sync(agent_db, user_db)
    assert bill["status"] == "Paid" and user_db["surroundings"]["payment_request"] is None


def test_sync_fails_like_tau2_when_the_number_has_no_line(dbs: tuple[dict[str, Any], dict[str, Any]]) -> None:
    agent_db, user_db = dbs
    user_db["surroundings"]["phone_number"] = "555-000-0000"
    with pytest.raises(ValueError, match=r"^Line with phone number 555-000-0000 not found$"):
        sync(agent_db, user_db)


def test_sync_is_idempotent_on_every_task_after_init_and_at_the_end(
    telecom: Telecom, live_replays: dict[str, Replay]
) -> None:
    states = [(r.agent_db, r.user_db) for r in live_replays.values()]
    for task in telecom.tasks:
        agent_db, user_db = json_copy(telecom.agent_db), json_copy(telecom.user_db)
        initialise(agent_db, user_db, task["initial_state"])
        states.append((agent_db, user_db))
    for agent_db, user_db in states:
        again = json_copy((agent_db, user_db))
        sync(*again)
        assert again == (agent_db, user_db)


# --- initialisation ----------------------------------------------------------------------------------


def test_initialise_runs_actions_with_a_sync_after_each(telecom: Telecom) -> None:
    agent_db, user_db = json_copy(telecom.agent_db), json_copy(telecom.user_db)
    overdue = {"customer_id": "C1001", "line_id": "L1002", "new_bill_id": "B77", "contract_ended": True}
    actions = [
        JOHN,
        {"env_type": "assistant", "func_name": "suspend_line_for_overdue_bill", "arguments": overdue},
        {"env_type": "user", "func_name": "simulate_network_search", "arguments": {}},
    ]
    initialise(agent_db, user_db, {"initialization_actions": actions})
    bill = agent_db["bills"][-1]
    assert bill == {
        "bill_id": "B77", "customer_id": "C1001", "period_start": "2025-01-01", "period_end": "2025-01-31",
        "issue_date": "2025-01-01", "total_due": 65.0, "due_date": "2025-01-15",
        "line_items": [{"description": "Charge for line L1002", "amount": 65.0, "date": "2025-02-25",
                        "item_type": "Charge"}],
        "status": "Overdue",
    }  # fmt: skip
    line = _line(agent_db, "L1002")
    assert (line["status"], line["suspension_start_date"], line["contract_end_date"]) == (
        "Suspended",
        "2025-02-25",
        "2025-01-31",
    )
    # the sync after the agent action told the phone, so the following network search found no service
    assert user_db["device"]["network_connection_status"] == "no_service"


def _overdue(customer_id: str, line_id: str) -> dict[str, Any]:
    arguments = {"customer_id": customer_id, "line_id": line_id, "new_bill_id": "B8", "contract_ended": False}
    return {"env_type": "assistant", "func_name": "suspend_line_for_overdue_bill", "arguments": arguments}


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ({"env_type": "user", "func_name": "nothing", "arguments": {}},
         "Function nothing not found in user tools"),
        ({"env_type": "assistant", "func_name": "set_data_usage",
          "arguments": {"customer_id": "C1002", "line_id": "L1001", "data_used_gb": 1.0}},
         "Line L1001 not found for customer C1002"),
        (_overdue("C1002", "L1004"), "Customer already has an overdue bill"),
        (_overdue("C1001", "L1003"), "Line must be active to suspend for unpaid bill"),
    ],
)  # fmt: skip
def test_initialise_refuses_what_tau2_cannot_set_up(
    telecom: Telecom, action: dict[str, Any], message: str
) -> None:
    agent_db, user_db = json_copy(telecom.agent_db), json_copy(telecom.user_db)
    with pytest.raises(ValueError, match=f"^{message}$"):
        initialise(agent_db, user_db, {"initialization_actions": [action]})
    with pytest.raises(ValueError, match="message_history"):
        initialise(agent_db, user_db, {"message_history": [{"role": "user", "content": "hi"}]})


def test_initialise_merges_initialization_data(telecom: Telecom) -> None:
    agent_db, user_db = json_copy(telecom.agent_db), json_copy(telecom.user_db)
    data = {"user_data": {"device": {"battery_level": 15, "active_apn_settings": {"mms_port": 9}}}}
    initialise(agent_db, user_db, {"initialization_data": data})
    device = user_db["device"]
    assert device["battery_level"] == 15 and device["active_apn_settings"]["mms_port"] == 9
    assert device["active_apn_settings"]["apn_name"] == "internet"


# --- declared shape and hash ---------------------------------------------------------------------------


def test_normalise_fills_tau2s_defaults_in_model_order(telecom: Telecom) -> None:
    agent_db, user_db = json_copy(telecom.agent_db), json_copy(telecom.user_db)
    assert "surroundings" not in user_db
    normalise(agent_db, "agent")
    normalise(user_db, "user")
    line = _line(agent_db, "L1001")
    assert list(line)[-3:] == ["last_plan_change_date", "last_sim_replacement_date", "suspension_start_date"]
    assert line["suspension_start_date"] is None and agent_db["devices"][0]["last_esim_transfer_date"] is None
    assert agent_db["customers"][0]["created_at"] == "2025-01-15 10:30:00"
    assert user_db["surroundings"]["signal_strength"] == {
        "2G": "poor",
        "3G": "fair",
        "4G": "good",
        "5G": "excellent",
    }
    assert (
        user_db["device"]["vpn_details"] is None
        and user_db["device"]["active_apn_settings"]["mms_proxy"] is None
    )


def test_tau2_hash_is_the_same_for_raw_and_normalised_dbs_and_ignores_engine_keys(telecom: Telecom) -> None:
    sides: tuple[tuple[Side, dict[str, Any]], ...] = (("agent", telecom.agent_db), ("user", telecom.user_db))
    for side, raw in sides:
        shaped = json_copy(raw)
        normalise(shaped, side)
        assert (
            tau2_hash(raw, side)
            == tau2_hash(shaped, side)
            == tau2_hash({**shaped, "_current_date": "x"}, side)
        )
    changed = json_copy(telecom.agent_db)
    changed["lines"][0]["data_used_gb"] = 3.3
    assert tau2_hash(changed, "agent") != tau2_hash(telecom.agent_db, "agent")


# --- WRITES ------------------------------------------------------------------------------------------------

C = ["C1001", "C1001", "C1002", "C1003", "C9"]
L = [f"L100{i}" for i in range(1, 10)] + ["L9"]
B = ["B1001", "B1002", "B1003", "B1005", "B1234321", "B9"]


def _arguments(rng: random.Random, name: str) -> dict[str, Any]:
    """Plausible arguments for any of the 43 tools, valid or not."""
    pick = rng.choice
    table: dict[str, dict[str, Any]] = {
        "get_customer_by_phone": {"phone_number": pick(["555-123-2002", "555-123-1002", "0"])},
        "get_customer_by_id": {"customer_id": pick(C)},
        "get_customer_by_name": {"full_name": pick(["John Smith", "x"]), "dob": "1985-06-15"},
        "get_details_by_id": {"id": pick(L + B + C + ["D1001", "P1001", "X"])},
        "get_bills_for_customer": {"customer_id": pick(C), "limit": pick([12, 1, -1])},
        "send_payment_request": {"customer_id": pick(C), "bill_id": pick(B)},
        "transfer_to_human_agents": {"summary": "s"},
        "set_network_mode_preference": {
            "mode": pick(["4g_5g_preferred", "4g_only", "3g_only", "2g_only", "x"])
        },
        "check_app_status": {"app_name": pick(["messaging", "camera"])},
        "check_app_permissions": {"app_name": pick(["messaging", "camera"])},
        "grant_app_permission": {
            "app_name": pick(["messaging", "browser", "camera"]),
            "permission": pick(["sms", "x"]),
        },
        "set_apn_settings": {
            "apn_settings": pick([{}, {"apn_name": "broken"}, {"mmsc_url": None}, {"x": 1}])
        },
    }
    if name in table:
        return table[name]
    if name in (
        "suspend_line",
        "resume_line",
        "get_data_usage",
        "enable_roaming",
        "disable_roaming",
        "refuel_data",
    ):
        args: dict[str, Any] = {"customer_id": pick(C), "line_id": pick(L)}
        if name == "suspend_line":
            args["reason"] = "r"
        if name == "refuel_data":
            args["gb_amount"] = pick([2.0, 0.5, 0])
        return args
    return {}


def _changed(before: Any, after: Any, path: str = "") -> list[str]:
    """Paths of the nodes that differ (a list of another length counts as the list itself)."""
    if isinstance(before, dict) and isinstance(after, dict):
        keys = list(before) + [k for k in after if k not in before]
        return [
            p for k in keys for p in _changed(before.get(k, KeyError), after.get(k, KeyError), f"{path}/{k}")
        ]
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        return [
            p
            for i, (x, y) in enumerate(zip(before, after, strict=True))
            for p in _changed(x, y, f"{path}/{i}")
        ]
    return [] if before == after else [path]


def _allowed(path: str, declared: tuple[str, ...], args: dict[str, Any]) -> bool:
    for pattern in declared:
        filled = pattern.format(**args).rstrip("-").rstrip("/")
        if path == filled or path.startswith(filled + "/"):
            return True
    return False


#: The tools tau2 marks ``ToolType.WRITE`` (6 carrier, 15 phone); the other 22 are reads and the transfer.
TAU2_WRITE_TOOLS = {
    "suspend_line", "resume_line", "send_payment_request", "enable_roaming", "disable_roaming", "refuel_data",
    "set_network_mode_preference", "toggle_airplane_mode", "reseat_sim_card", "toggle_data", "toggle_roaming",
    "toggle_data_saver_mode", "set_apn_settings", "reset_apn_settings", "toggle_wifi", "toggle_wifi_calling",
    "connect_vpn", "disconnect_vpn", "grant_app_permission", "reboot_device", "make_payment",
}  # fmt: skip


def test_writes_are_declared_for_every_tool_and_only_tau2s_write_tools_write() -> None:
    assert set(AGENT_WRITES) == set(AGENT_HANDLERS) and set(USER_WRITES) == set(USER_HANDLERS)
    assert {n for n, w in {**AGENT_WRITES, **USER_WRITES}.items() if w} == TAU2_WRITE_TOOLS


def test_no_tool_and_no_sync_changes_anything_outside_its_declaration(telecom: Telecom) -> None:
    rng = random.Random(20250225)
    names = [("agent", n) for n in AGENT_HANDLERS] + [("user", n) for n in USER_HANDLERS]
    seen: Counter[str] = Counter()
    for task in telecom.tasks:
        dbs = {"agent": json_copy(telecom.agent_db), "user": json_copy(telecom.user_db)}
        initialise(dbs["agent"], dbs["user"], task["initial_state"])
        successes: Counter[str] = Counter()
        for _ in range(12):
            side, name = rng.choice(names)
            args = _arguments(rng, name)
            before = json_copy(dbs)
            result = run_call(side, name, args, dbs, successes)
            declared = (AGENT_WRITES if side == "agent" else USER_WRITES)[name]
            for path in _changed(before[side], dbs[side]):
                assert _allowed(path, declared, args), f"{name}({args}) changed {path}"
            other = "user" if side == "agent" else "agent"
            assert dbs[other] == before[other]
            seen[name, result["status"]] += 1
            before = json_copy(dbs)
            sync(dbs["agent"], dbs["user"])
            assert all(p.startswith("/bills") for p in _changed(before["agent"], dbs["agent"]))
            assert all(p.startswith("/surroundings") for p in _changed(before["user"], dbs["user"]))
    assert {name for name, _ in seen} == set(AGENT_HANDLERS) | set(USER_HANDLERS)
    assert sum(n for (_, status), n in seen.items() if status == "error") > 100
