"""eva_airline's DB hash on the real data: the rules come from its domain spec, and tables are
created on first write."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from engine.core.dbhash import db_hash, reference_canonical_json
from engine.core.model import HashRules
from engine.core.toolruntime import ToolRuntime
from engine.core.tools.writeset import session_view
from engine.domains.registry import plugins
from engine.spec.gold_replay import replay_trace
from engine.spec.loader import LoadedDomain, load_domain
from engine.util.canonical_orjson import orjson_canonical_text
from tests.conftest import SPEC_DIR


@pytest.fixture(scope="module")
def domain(data_root: Path) -> LoadedDomain:
    return load_domain(SPEC_DIR, data_root, plugins=plugins())


def test_rules_come_from_the_domain_spec(domain: LoadedDomain) -> None:
    rules = domain.domain.hash_rules
    assert rules.excluded_keys == ("session",)
    assert "standby_list" in rules.unordered_lists and "bookings" in rules.unordered_lists


def test_precreated_hotel_vouchers_break_48_of_50(domain: LoadedDomain) -> None:
    """Tables are created on first write: an empty ``hotel_vouchers`` is a different DB."""
    rules, broken = domain.domain.hash_rules, 0
    for s in domain.scenarios:
        run = replay_trace(s.tools, s.initial_db, s.gold_trace or ())
        run.db.setdefault("hotel_vouchers", {})
        broken += db_hash(run.db, rules) != db_hash(s.expected_db or {}, rules)
    assert broken == 48


def test_every_db_takes_the_orjson_path_with_the_reference_text(domain: LoadedDomain) -> None:
    """All 100 DBs (initial and expected) are plain ASCII JSON: the fast path takes each itself,
    and its text is the slow way's, byte for byte."""
    rules = domain.domain.hash_rules
    dbs = [db for s in domain.scenarios for db in (s.initial_db, s.expected_db) if db is not None]
    assert len(dbs) == 100
    for db in dbs:
        kept = {k: v for k, v in db.items() if k not in rules.excluded_keys}
        expected = reference_canonical_json(db, rules).encode("ascii")
        assert orjson_canonical_text(kept, rules.unordered_lists) == expected


def _reference_hash(db: Any, rules: HashRules) -> str:
    return hashlib.sha256(reference_canonical_json(db, rules).encode("ascii")).hexdigest()


def test_a_hash_follows_every_write_and_every_change_in_place(domain: LoadedDomain) -> None:
    """Hash, change, hash again: each hash is the slow way's for the DB as it is then, whether the
    change went through a tool (which copies a shared record first) or was made in place on a
    record the session owns; the scenario's DB itself never changes. Nothing is reused from an
    earlier hash of the same objects (floats are remembered by value only)."""
    rules = domain.domain.hash_rules
    s = next(x for x in domain.scenarios if x.gold_trace is not None and len(x.gold_trace.tool_calls()) >= 3)
    base_hash = db_hash(s.initial_db, rules)
    runtime = ToolRuntime(s.tools, session_view(s.initial_db))
    seen = {db_hash(runtime.db, rules)}
    for step in s.gold_trace.tool_calls() if s.gold_trace else ():
        runtime.call(step.tool, dict(step.arguments))
        assert db_hash(runtime.db, rules) == _reference_hash(runtime.db, rules)
        seen.add(db_hash(runtime.db, rules))
    assert len(seen) > 1  # the gold wrote something
    table = runtime.db["reservations"]  # the session's own container
    rid = next(iter(table))
    record = table[rid] = dict(table[rid])  # the session's own copy, then changed in place
    for key, value in (
        ("fare_paid", 123.0),
        ("fare_paid", 0.5),
        ("meal_preference", " NONE "),
        ("meal_preference", "vegan"),
        ("bookings", [{"b": 2.0}, {"a": "null"}]),
        ("fare_paid", float("nan")),
        ("fare_paid", -0.0),
    ):
        record[key] = value
        assert db_hash(runtime.db, rules) == _reference_hash(runtime.db, rules)
    assert db_hash(s.initial_db, rules) == base_hash == _reference_hash(s.initial_db, rules)
