"""eva_airline's DB hash on the real data: the rules come from its domain spec, and tables are
created on first write."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.dbhash import db_hash
from engine.domains.registry import load_domain
from engine.replay import replay_trace
from engine.specs import LoadedDomain
from tests.conftest import SPEC_DIR


@pytest.fixture(scope="module")
def domain(data_root: Path) -> LoadedDomain:
    return load_domain(SPEC_DIR, data_root)


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
