"""``dumps_db_json`` on tau2 retail's real DB and session views of it: the bytes are exactly
:func:`dumps_json`'s. Moved from tests/unit/results/test_artifacts_db.py (hand-made shapes stay there)."""

from __future__ import annotations

import json
from pathlib import Path

from engine.artifacts import dumps_db_json, dumps_json
from engine.tools.writeset import session_view


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
