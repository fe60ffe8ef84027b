"""``dumps_json`` on tau2's real DBs (the largest the engine writes, 2.8 and 7 MB): the text is
exactly the standard library's ``json.dumps(indent=2, ensure_ascii=False)``. Hand-made shapes:
tests/unit/results/test_artifacts_db.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.core.tools.writeset import session_view
from engine.util.artifacts import dumps_json


@pytest.mark.parametrize("domain", ["retail", "airline"])
def test_same_text_as_the_standard_library_on_a_real_db(data_root: Path, domain: str) -> None:
    path = data_root / "tau2-17e07b1" / "data" / "tau2" / "domains" / domain / "db.json"
    base = json.loads(path.read_text(encoding="utf-8"))
    expected = json.dumps(base, indent=2, ensure_ascii=False) + "\n"
    assert dumps_json(base) == expected
    assert dumps_json(session_view(base)) == expected
