"""``dumps_json`` (orjson) writes the text of the standard library's
``json.dumps(obj, indent=2, ensure_ascii=False, default=str)`` plus a newline, for any shape;
what orjson refuses goes to the standard library; the documented float differences keep the
value (on a real DB, tau2's: tests/domains/tau2/test_tau2_artifacts.py)."""

from __future__ import annotations

import dataclasses
import datetime
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.util.artifacts import FolderWrite, db_json_bytes, dumps_json
from tests.json_strategies import json_values


def _stdlib(obj: Any) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n"


@dataclasses.dataclass
class _Row:
    a: int


SHAPES: list[Any] = [
    {},
    [],
    [1, 2],
    {"a": 1},
    {"a": {}},
    {"a": []},
    {"a": {"b": {}}},
    {"a": {"b": [1, {"c": "x\ny\t\u0001\u007f\u2028", "d": "ü", "e": '"\\'}]}, "z": None, "n": 1.5},
    {"a": {1: 2, None: 3, 2.5: 4}},  # keys that are not strings: the standard library's way
    {"big": 10**30, "neg": -(2**70)},  # beyond 64 bits: the standard library's way
    {"s": "\ud800"},  # a lone surrogate: the standard library's way
    {"when": datetime.datetime(2026, 4, 1, 12, 30), "day": datetime.date(2026, 4, 1)},
    {"path": Path("a/b"), "row": _Row(1), "set": {1}},  # default=str
    {"t": {"k": {"x": [{"y": {}}], "w": []}}, "_current_date": "2026-04-01"},
    {"f": [0.1, 1.0, -0.0, 250.5, 123456789.125, 1e15]},
]


@pytest.mark.parametrize("obj", SHAPES)
def test_the_standard_librarys_text_for_any_shape(obj: Any) -> None:
    assert dumps_json(obj) == _stdlib(obj)


def test_floats_in_exponent_form_and_non_finite_keep_their_meaning() -> None:
    obj = {"small": 1e-7, "large": 1e22}
    text = dumps_json(obj)
    assert json.loads(text) == obj and '"small": 1e-7' in text  # orjson's exponent form
    odd = {"nan": float("nan"), "inf": [float("-inf")], "none": None}
    assert json.loads(dumps_json(odd)) == {"nan": None, "inf": [None], "none": None}  # strict JSON
    db_text = db_json_bytes(odd).decode()
    assert db_text == _stdlib(odd)  # a DB's file keeps them, as the standard library writes them
    back = json.loads(db_text)
    assert back["nan"] != back["nan"] and back["inf"] == [float("-inf")] and back["none"] is None
    plain = {"t": {"k": {"a": None, "b": 1.5}}}
    assert db_json_bytes(plain) == dumps_json(plain).encode()


@given(json_values)
def test_any_json_value_as_the_standard_library_writes_it(obj: Any) -> None:
    assert dumps_json(obj) == _stdlib(obj)


def test_a_folder_write_puts_the_same_bytes(tmp_path: Path) -> None:
    obj = SHAPES[7]
    with FolderWrite(tmp_path / "f", incomplete=True) as batch:
        batch.put_json("a.json", obj)
        batch.put_json("m.json", obj, marker=True)
        batch.commit()
    for name in ("a.json", "m.json"):
        assert (tmp_path / "f" / name).read_text(encoding="utf-8") == _stdlib(obj)


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_files_get_the_users_permissions(tmp_path: Path, umask: int) -> None:
    """Run-level files (``write_json``) and result files (in place, via a temporary file, and
    markers) are created 0o666 less the umask, as any file the user makes."""
    import os

    from engine.util.artifacts import write_json

    old = os.umask(umask)
    try:
        write_json(tmp_path / "summary.json", {"a": 1})
        with FolderWrite(tmp_path / "new", incomplete=True) as batch:
            batch.put_json("in_place.json", {})
            batch.put_json("marker.json", {}, marker=True)
            batch.commit()
        with FolderWrite(tmp_path / "new") as batch:
            batch.put_json("replaced.json", {})
            batch.commit()
    finally:
        os.umask(old)
    for path in [tmp_path / "summary.json", *sorted((tmp_path / "new").iterdir())]:
        assert path.stat().st_mode & 0o777 == 0o666 & ~umask, path.name


def test_a_db_read_back_from_its_file_hashes_as_the_db() -> None:
    """A rescore hashes ``final_db.json``: NaN and the infinities must come back as they were."""
    from engine.core.dbhash import db_hash
    from engine.core.model import HashRules

    db = {"orders": {"O1": {"total": float("nan"), "credit": float("inf"), "note": None, "n": 1.5}}}
    rules = HashRules()
    assert db_hash(json.loads(db_json_bytes(db)), rules) == db_hash(db, rules)


_ANY_FLOAT = st.floats() | st.just(float("nan")) | st.just(float("-inf"))
_WITH_NULLS = st.recursive(
    st.none() | st.integers() | st.text(max_size=3) | _ANY_FLOAT,
    lambda children: (
        st.lists(children, max_size=4)
        | st.tuples(children)
        | st.dictionaries(st.text(max_size=3), children, max_size=4)
    ),
    max_leaves=20,
)


@given(st.dictionaries(st.text(max_size=3), _WITH_NULLS, max_size=4))
def test_a_db_with_nan_or_infinity_is_written_as_the_standard_library_writes_it(db: dict[str, Any]) -> None:
    """The non-finite check that picks the standard library's text (NaN, Infinity) finds every
    such float at any depth, in lists, tuples and objects, and only those."""
    stdlib = json.dumps({"null": None, **db}, indent=2, ensure_ascii=False, default=str) + "\n"
    written = db_json_bytes({"null": None, **db})
    try:
        json.dumps(db, allow_nan=False)
    except ValueError:
        assert written.decode() == stdlib
    else:
        assert json.loads(written) == json.loads(stdlib)
