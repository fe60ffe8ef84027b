"""``dumps_db_json`` writes a DB's artifact from per-record texts cached by object: the bytes must
be exactly :func:`dumps_json`'s, for any DB shape and for session DBs that replaced some records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine.artifacts import dumps_db_json, dumps_json
from engine.tools.writeset import session_view

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


def test_same_bytes_for_session_views_of_a_real_db(data_root: Path) -> None:
    path = data_root / "tau2-17e07b1" / "data" / "tau2" / "domains" / "retail" / "db.json"
    base = json.loads(path.read_text(encoding="utf-8"))
    assert dumps_db_json(base) == dumps_json(base)
    view = session_view(base)
    order = next(iter(view["orders"]))
    view["orders"][order] = {**view["orders"][order], "status": "cancelled"}  # a replaced record
    del view["users"][next(iter(view["users"]))]
    view["products"] = dict(reversed(list(view["products"].items())))  # same records, other order
    assert dumps_db_json(view) == dumps_json(view)
    assert dumps_db_json(session_view(base)) == dumps_json(base)
