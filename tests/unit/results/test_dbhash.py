"""Canonical normalisation, hash and DB diff. The facts measured on eva's data are in
tests/domains/eva_airline/test_dbhash.py."""

from __future__ import annotations

import hashlib
from typing import Any

from engine.core.dbdiff import DiffLine, db_diff
from engine.core.dbhash import canonical_json, db_hash, normalize_db
from engine.core.model import HashRules

RULES = HashRules(excluded_keys=("session",), unordered_lists=("bookings", "standby_list"))


def test_normalisation_rules() -> None:
    db = {
        "session": {"x": 1},
        "a": {
            "fare": 260.0,
            "half": 2.5,
            "inf": float("inf"),
            "meal": " None ",
            "n": "NULL",
            "s": "nonempty",
        },
        "r": {"deep": {"bookings": [{"b": 2}, {"a": 1}], "other": [{"b": 2}, {"a": 1}]}},
    }
    assert normalize_db(db, RULES) == {
        "a": {"fare": 260, "half": 2.5, "inf": float("inf"), "meal": None, "n": None, "s": "nonempty"},
        "r": {"deep": {"bookings": [{"a": 1}, {"b": 2}], "other": [{"b": 2}, {"a": 1}]}},
    }
    assert db["r"]["deep"]["bookings"] == [{"b": 2}, {"a": 1}]  # input untouched


def test_hash_is_sha256_of_compact_sorted_ascii_json() -> None:
    db = {"b": "é", "a": 1.0}
    assert canonical_json(db, RULES) == '{"a":1,"b":"\\u00e9"}'
    assert db_hash(db, RULES) == hashlib.sha256(b'{"a":1,"b":"\\u00e9"}').hexdigest()


def test_rules_drive_the_hash() -> None:
    a = {"session": 1, "x": {"bookings": [1, 2]}}
    b = {"session": 2, "x": {"bookings": [2, 1]}}
    assert db_hash(a, RULES) == db_hash(b, RULES)
    assert db_hash(a, HashRules(excluded_keys=(), unordered_lists=("bookings",))) != db_hash(
        b, HashRules(excluded_keys=(), unordered_lists=("bookings",))
    )
    assert db_hash(a, HashRules(excluded_keys=("session",), unordered_lists=())) != db_hash(
        b, HashRules(excluded_keys=("session",), unordered_lists=())
    )


def test_diff_lines_and_paths() -> None:
    expected = {
        "reservations": {
            "ZK3FFW": {
                "bookings": [
                    {"journey_id": "A", "status": "cancelled", "segments": [{"seat": "22A"}]},
                    {
                        "journey_id": "B",
                        "status": "confirmed",
                        "segments": [{"seat": "21A", "bags_checked": 1}],
                    },
                ]
            }
        },
        "refunds": {"R1": {"amount": 1}},
    }
    actual = {
        "reservations": {
            "ZK3FFW": {
                "bookings": [
                    {
                        "journey_id": "B",
                        "status": "confirmed",
                        "segments": [{"seat": None, "bags_checked": 1.0}],
                    },
                    {"journey_id": "A", "status": "cancelled", "segments": [{"seat": "22A"}]},
                ]
            }
        },
        "refunds": {},
        "hotel_vouchers": {},
    }
    lines = db_diff(expected, actual, RULES)
    text = [str(line) for line in lines]
    assert "hotel_vouchers: not expected, got {}" in text
    assert "refunds.R1: expected {'amount': 1}, missing" in text
    seat = next(line for line in lines if line.path.endswith(".seat"))
    assert seat.path.startswith("reservations.ZK3FFW.bookings[") and seat.path.endswith("].segments[0].seat")
    assert str(seat).endswith(": expected '21A', got None") and seat.kind == "type_changed"
    assert len(lines) == 3  # order of bookings and 1.0 vs 1 are not differences
    assert db_diff(expected, expected, RULES) == []
    assert str(DiffLine("a.b", "changed", 1, 2)) == "a.b: expected 1, got 2"


def test_diff_of_a_replaced_only_record_names_both_records() -> None:
    # a collection whose only record was replaced reads as one removed and one added record,
    # not as "the whole collection changed"
    lines = db_diff(
        {"refunds": {"REF-A-001": {"amount": 1}}}, {"refunds": {"REF-B-001": {"amount": 1}}}, HashRules()
    )
    assert sorted((line.path, line.kind) for line in lines) == [
        ("refunds.REF-A-001", "removed"),
        ("refunds.REF-B-001", "added"),
    ]


def test_diff_pairs_unordered_records_by_similarity() -> None:
    # expected: SK130 booked and SK530 cancelled; actual: the SK530 booking never cancelled and
    # no SK130 booking. Read as: SK530's status differs, SK130's booking is missing.
    def booking(fn: str, status: str) -> dict[str, Any]:
        return {"journey_id": f"FL_{fn}", "status": status, "segments": [{"flight_number": fn, "seat": None}]}

    expected = {"r": {"bookings": [booking("SK130", "confirmed"), booking("SK530", "cancelled")]}}
    actual = {"r": {"bookings": [booking("SK530", "confirmed")]}}
    lines = db_diff(expected, actual, HashRules(excluded_keys=(), unordered_lists=("bookings",)))
    assert sorted((line.kind, line.expected if line.kind == "changed" else line.expected["journey_id"])
                  for line in lines) == [("changed", "cancelled"), ("removed", "FL_SK130")]  # fmt: skip
