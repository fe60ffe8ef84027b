"""``dumps_db_json`` writes a DB's artifact from per-record texts cached by object: the bytes must
be exactly :func:`dumps_json`'s, for any DB shape and for session DBs that replaced some records (on
a real DB, tau2 retail's: tests/domains/tau2/test_tau2_artifacts.py)."""

from __future__ import annotations

from typing import Any

import pytest

from engine.artifacts import dumps_db_json, dumps_json

SHAPES: list[Any] = [
    {},
    [1, 2],
    {"a": 1},
    {"a": {}},
    {"a": []},
    {"a": {"b": {}}},
    {"a": {"b": [1, {"c": "x\ny", "d": "ü"}]}, "z": None, "n": 1.5},
    {"a": {1: 2}},
    {"t": {"k": {"x": [{"y": {}}], "w": []}}, "_current_date": "2026-04-01"},
    {"a": {"b": 1, "c": 2}},
    {"a": {"c": 2, "b": 1}},
]


@pytest.mark.parametrize("db", SHAPES)
def test_same_bytes_for_any_shape(db: Any) -> None:
    assert dumps_db_json(db) == dumps_json(db)
    assert dumps_db_json(db) == dumps_json(db)  # from the caches
