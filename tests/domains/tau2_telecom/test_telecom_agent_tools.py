"""The carrier tools, success and error paths, from the tool behaviour (tau2 17e07b1 ``TelecomTools``).

The 8 agent tools that no gold trace calls each get their own tests here; the gold ones get the
error paths gold never takes. Expected texts are tau2's (``tau2_content`` = ``"Error: " + message``).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from engine.core.tools.writeset import json_copy
from engine.domains.tau2_telecom import normalise, tau2_content
from tests.domains.tau2_telecom.conftest import Telecom
from tests.domains.tau2_telecom.helpers import call, failed, ok

AGENT_TOOLS_TESTED = {
    "get_customer_by_phone",
    "get_customer_by_id",
    "get_customer_by_name",
    "get_details_by_id",
    "suspend_line",
    "get_bills_for_customer",
    "get_data_usage",
    "disable_roaming",
}


@pytest.fixture
def db(telecom: Telecom) -> dict[str, Any]:
    carrier = json_copy(telecom.agent_db)
    normalise(carrier, "agent")
    return carrier


def _line(db: dict[str, Any], line_id: str) -> dict[str, Any]:
    return next(line for line in db["lines"] if line["line_id"] == line_id)


def test_get_customer_by_phone_finds_contact_and_line_numbers(db: dict[str, Any]) -> None:
    by_line = json.loads(ok(call("agent", "get_customer_by_phone", db, phone_number="555-123-2001")))
    assert by_line["customer_id"] == "C1001"
    assert list(by_line)[:6] == [
        "customer_id",
        "full_name",
        "date_of_birth",
        "email",
        "phone_number",
        "address",
    ]
    assert by_line["created_at"] == "2025-01-15 10:30:00" and by_line["last_extension_date"] is None
    by_contact = json.loads(ok(call("agent", "get_customer_by_phone", db, phone_number="555-123-1002")))
    assert by_contact["customer_id"] == "C1002" and by_contact["last_extension_date"] == "2025-01-05"


def test_get_customer_by_phone_errors(db: dict[str, Any]) -> None:
    message = failed(call("agent", "get_customer_by_phone", db, phone_number="000"), "not_found")
    assert message == "Customer with phone number 000 not found"
    db["customers"][0]["line_ids"].insert(0, "L0000")  # a dangling line id stops the scan, as in tau2
    assert (
        failed(call("agent", "get_customer_by_phone", db, phone_number="x"), "not_found")
        == "Line with ID L0000 not found"
    )


def test_get_customer_by_id(db: dict[str, Any]) -> None:
    content = ok(call("agent", "get_customer_by_id", db, customer_id="C1004"))
    assert content.startswith('{"customer_id": "C1004", "full_name": "Emma Wilson"')
    record = json.loads(content)
    assert record["payment_methods"] == [] and record["account_status"] == "Pending Verification"
    result = call("agent", "get_customer_by_id", db, customer_id="C9")
    assert tau2_content(result) == (True, "Error: Customer with ID C9 not found")


def test_get_customer_by_name_matches_name_case_insensitively_and_birth_date_exactly(
    db: dict[str, Any],
) -> None:
    found = json.loads(
        ok(call("agent", "get_customer_by_name", db, full_name="jOHN smith", dob="1985-06-15"))
    )
    assert [c["customer_id"] for c in found] == ["C1001"]
    assert ok(call("agent", "get_customer_by_name", db, full_name="John Smith", dob="1985-6-15")) == "[]"
    assert ok(call("agent", "get_customer_by_name", db, full_name="John", dob="1985-06-15")) == "[]"
    problem = failed(call("agent", "get_customer_by_name", db, full_name="John Smith"), "invalid_arguments")
    assert problem == "TelecomTools.get_customer_by_name() missing 1 required positional argument: 'dob'"


@pytest.mark.parametrize(
    ("record_id", "key", "value"),
    [
        ("L1003", "suspension_start_date", "2025-02-01"),
        ("L1001", "last_sim_replacement_date", None),
        ("D1001", "activation_date", "2025-01-20 14:30:00"),
        ("D1001", "last_esim_transfer_date", None),
        ("B1003", "line_items", []),
        ("C1003", "account_status", "Suspended"),
        ("P1003", "data_refueling_price_per_gb", 0.1),
    ],
)
def test_get_details_by_id_reads_the_table_named_by_the_first_letter(
    db: dict[str, Any], record_id: str, key: str, value: Any
) -> None:
    record = json.loads(ok(call("agent", "get_details_by_id", db, id=record_id)))
    assert record[key] == value and record_id in record.values()


@pytest.mark.parametrize(
    ("record_id", "message"),
    [
        ("X1", "Unknown ID format or type: X1"),
        ("", "Unknown ID format or type: "),
        ("l1001", "Unknown ID format or type: l1001"),
        ("L9", "Line with ID L9 not found"),
        ("D9", "Device with ID D9 not found"),
        ("B9", "Bill with ID B9 not found"),
        ("C9", "Customer with ID C9 not found"),
        ("P9", "Plan with ID P9 not found"),
    ],
)
def test_get_details_by_id_errors(db: dict[str, Any], record_id: str, message: str) -> None:
    result = call("agent", "get_details_by_id", db, id=record_id)
    assert result["status"] == "error" and result["message"] == message


def test_suspend_line_suspends_an_active_owned_line_from_today(db: dict[str, Any]) -> None:
    content = ok(call("agent", "suspend_line", db, customer_id="C1001", line_id="L1001", reason="travel"))
    shown = json.loads(content)
    assert shown["message"] == "Line suspended successfully. $5/month holding fee will apply."
    assert shown["line"]["status"] == "Suspended" and shown["line"]["suspension_start_date"] == "2025-02-25"
    assert list(shown["line"])[-1] == "suspension_start_date"
    assert _line(db, "L1001")["status"] == "Suspended"


@pytest.mark.parametrize(
    ("customer_id", "line_id", "kind", "message"),
    [
        ("C1001", "L1003", "invalid_state", "Line must be active to suspend"),
        ("C1001", "L1004", "not_found", "Line L1004 not found for customer C1001"),
        ("C9", "L1001", "not_found", "Customer with ID C9 not found"),
    ],
)
def test_suspend_line_errors(
    db: dict[str, Any], customer_id: str, line_id: str, kind: str, message: str
) -> None:
    result = call("agent", "suspend_line", db, customer_id=customer_id, line_id=line_id, reason="r")
    assert failed(result, kind) == message


def test_get_bills_for_customer_newest_first_with_python_slicing(db: dict[str, Any]) -> None:
    def ids(**limit: Any) -> list[str]:
        return [
            b["bill_id"]
            for b in json.loads(ok(call("agent", "get_bills_for_customer", db, customer_id="C1001", **limit)))
        ]

    assert ids() == ["B1003", "B1002", "B1001"]
    assert ids(limit=1) == ["B1003"] and ids(limit=0) == [] and ids(limit=-1) == ["B1003", "B1002"]
    assert (
        failed(call("agent", "get_bills_for_customer", db, customer_id="C9"), "not_found")
        == "Customer with ID C9 not found"
    )


def test_get_data_usage_shows_numbers_as_text_and_the_cycle_end(db: dict[str, Any]) -> None:
    content = ok(call("agent", "get_data_usage", db, customer_id="C1001", line_id="L1002"))
    assert content == (
        '{"line_id": "L1002", "data_used_gb": "8.7", "data_limit_gb": "15.0", '
        '"data_refueling_gb": "0.0", "cycle_end_date": "2025-02-28"}'
    )
    message = failed(call("agent", "get_data_usage", db, customer_id="C1002", line_id="L1002"), "not_found")
    assert message == "Line L1002 not found for customer C1002"
    db["lines"][1]["plan_id"] = "P9"
    assert failed(call("agent", "get_data_usage", db, customer_id="C1001", line_id="L1002"), "not_found") == (
        "Plan with ID P9 not found"
    )


def test_disable_and_enable_roaming_say_when_nothing_changed(db: dict[str, Any]) -> None:
    assert (
        ok(call("agent", "disable_roaming", db, customer_id="C1001", line_id="L1002"))
        == "Roaming disabled successfully"
    )
    assert _line(db, "L1002")["roaming_enabled"] is False
    assert (
        ok(call("agent", "disable_roaming", db, customer_id="C1001", line_id="L1002"))
        == "Roaming was already disabled"
    )
    assert (
        ok(call("agent", "enable_roaming", db, customer_id="C1001", line_id="L1002"))
        == "Roaming enabled successfully"
    )
    assert (
        ok(call("agent", "enable_roaming", db, customer_id="C1001", line_id="L1002"))
        == "Roaming was already enabled"
    )
    message = failed(call("agent", "disable_roaming", db, customer_id="C1003", line_id="L1002"), "not_found")
    assert message == "Line L1002 not found for customer C1003"


def test_resume_line_and_send_payment_request_error_paths(db: dict[str, Any]) -> None:
    assert failed(
        call("agent", "resume_line", db, customer_id="C1001", line_id="L1001"), "invalid_state"
    ) == ("Line must be suspended to resume")
    resumed = json.loads(ok(call("agent", "resume_line", db, customer_id="C1001", line_id="L1003")))
    assert resumed["line"]["status"] == "Active" and resumed["line"]["suspension_start_date"] is None
    assert failed(
        call("agent", "send_payment_request", db, customer_id="C1001", bill_id="B1004"), "not_found"
    ) == ("Bill B1004 not found for customer C1001")
    assert ok(call("agent", "send_payment_request", db, customer_id="C1001", bill_id="B1001")) == (
        "Payment request sent to the customer for bill B1001"
    )  # a Paid bill too: tau2 does not check
    again = call("agent", "send_payment_request", db, customer_id="C1001", bill_id="B1002")
    assert failed(again, "invalid_state") == "A bill is already awaiting payment for this customer"


def test_refuel_data_charges_the_draft_bill_or_opens_one(db: dict[str, Any]) -> None:
    content = ok(call("agent", "refuel_data", db, customer_id="C1001", line_id="L1003", gb_amount=1.5))
    assert content == (  # a suspended line too: tau2's active check is commented out
        '{"message": "Successfully added 1.5 GB of data for line L1003 for $7.50", '
        '"new_data_refueling_gb": "1.5", "charge": "7.5"}'
    )
    draft = next(b for b in db["bills"] if b["bill_id"] == "B1003")
    assert draft["total_due"] == 7.5
    assert draft["line_items"] == [
        {
            "description": "Data refueling: 1.5 GB at $5.0/GB",
            "amount": 7.5,
            "date": "2025-02-25",
            "item_type": "Charge",
        }
    ]
    ok(call("agent", "refuel_data", db, customer_id="C1002", line_id="L1004", gb_amount=2))
    new = db["bills"][-1]
    assert re.fullmatch(r"B[0-9a-f]{8}", new["bill_id"]) and new["bill_id"] in db["customers"][1]["bill_ids"]
    assert (new["period_start"], new["period_end"], new["issue_date"], new["due_date"]) == (
        "2025-03-01",
        "2025-03-31",
        "2025-03-01",
        "2025-03-15",
    )
    assert (
        new["line_items"][0]["description"] == "Data refueling: 2 GB at $0.1/GB" and new["status"] == "Draft"
    )
    for amount in (0, -1.0):
        bad = call("agent", "refuel_data", db, customer_id="C1001", line_id="L1002", gb_amount=amount)
        assert failed(bad, "invalid_value") == "Refuel amount must be positive"


def test_transfer_and_argument_errors(db: dict[str, Any]) -> None:
    assert ok(call("agent", "transfer_to_human_agents", db, summary="cannot fix")) == "Transfer successful"
    extra = call("agent", "transfer_to_human_agents", db, summary="s", urgent=True)
    assert failed(extra, "invalid_arguments") == (
        "TelecomTools.transfer_to_human_agents() got an unexpected keyword argument 'urgent'"
    )
    missing = call("agent", "suspend_line", db, line_id="L1001")
    assert failed(missing, "invalid_arguments") == (
        "TelecomTools.suspend_line() missing 2 required positional arguments: 'customer_id' and 'reason'"
    )
