"""The orjson path of the canonical DB text (engine.util.canonical_orjson) gives the slow, obvious
text (normalise a copy, then dump) or nothing: on generated DBs, on the values it must refuse,
and on every float kind. The eva facts (all 100 DBs take this path) are in
tests/domains/eva_airline/test_dbhash.py."""

from __future__ import annotations

import enum
import hashlib
import math
import struct
import uuid
from datetime import date
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.core.dbhash import canonical_json, db_hash, reference_canonical_json
from engine.core.model import HashRules
from engine.util.canonical_orjson import orjson_canonical_text

RULES = HashRules(excluded_keys=("session",), unordered_lists=("bookings", "standby_list"))


def _ours(db: dict[str, Any]) -> bytes | None:
    return orjson_canonical_text({k: v for k, v in db.items() if k != "session"}, RULES.unordered_lists)


def _reference(db: dict[str, Any]) -> bytes:
    return reference_canonical_json(db, RULES).encode("ascii")


class Colour(enum.Enum):
    RED = 1


class Level(enum.IntEnum):
    LOW = 1


# strings that look like what the text edits look for, or that the path must refuse
TRICKY = [
    "none", " None ", "NULL", "  nULL", "null ", "\tnull\u00a0", "nul", "nonee", "xnone", "none none",
    "5.0,", "x.0]", "a.0}", ":5.0,", "[1.0]", "1e+16", "1e-7", "-0.0", "0.0", "e+", "", '"quoted"',
    "back\\slash", "bookings", "standby_list", '"bookings":[', "\n", "\r", "\x7f", "é", "😀", "\u2028",
]  # fmt: skip
FLOATS = [0.0, -0.0, 1.0, -5.0, 260.0, 2.5, -0.5, 0.1, 1e15, 9007199254740993.0, 1e16, 1.5e300, 1e-4,
          1e-5, 1e-7, 5e-324, math.nan, math.inf, -math.inf]  # fmt: skip

leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**65), max_value=2**65),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(FLOATS),
    st.text(max_size=8),
    st.text(alphabet="nNoOeEuUlL .0,]}", max_size=7),
    st.sampled_from(TRICKY),
    st.sampled_from([Colour.RED, Level.LOW, uuid.UUID(int=7), date(2026, 3, 1), orjson.Fragment(b"[1]")]),
)
keys = st.one_of(
    st.sampled_from(["bookings", "standby_list", "a", "none", "NULL", "1.0,", "x.0}"]), st.text(max_size=4)
)


def _trees(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(children, max_size=4),
        st.lists(children, max_size=3).map(tuple),
        st.dictionaries(keys, children, max_size=4),
    )


dbs = st.dictionaries(keys, st.recursive(leaves, _trees, max_leaves=30), max_size=5)

# what the path must take itself: plain ASCII JSON with whole floats, none/null strings (values and
# keys), strings next to the number edits, unordered lists at any depth, lists of lists
plain_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.sampled_from([0.0, 1.0, -5.0, 260.0, 2.5, -0.5, 0.1, 123.456, 1e15, 9007199254740993.0, 1e-4]),
    st.floats(min_value=1e-4, max_value=1e15),
    st.sampled_from(["none", " None ", "NULL", "nULl  ", "nonee", "a", "b.c", "v1.0", "2026-03-20", "x"]),
    st.text(alphabet="nNoOeEuUlL .0", max_size=6),
)
plain_keys = st.sampled_from(["bookings", "standby_list", "a", "b", "none", "Null", "x.0", "bookings2"])


def _plain_trees(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.lists(children, max_size=4), st.dictionaries(plain_keys, children, max_size=4))


plain_dbs = st.dictionaries(plain_keys, st.recursive(plain_leaves, _plain_trees, max_leaves=40), max_size=5)


@settings(max_examples=150, deadline=None)
@given(dbs)
def test_the_text_is_the_reference_or_nothing(db: dict[str, Any]) -> None:
    ours = _ours(db)
    assert ours is None or ours == _reference(db)
    expected = reference_canonical_json(db, RULES)
    assert canonical_json(db, RULES) == expected
    assert db_hash(db, RULES) == hashlib.sha256(expected.encode("ascii")).hexdigest()


@settings(max_examples=150, deadline=None)
@given(plain_dbs)
def test_plain_json_takes_the_path_itself(db: dict[str, Any]) -> None:
    assert _ours(db) == _reference(db)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=20))
def test_floats_are_written_as_the_standard_library_writes_them_or_refused(floats: list[float]) -> None:
    db = {"f": floats, "g": {"x": floats[0]}}
    ours = _ours(db)
    assert ours is None or ours == _reference(db)
    if all(1e-4 <= abs(f) < 1e15 for f in floats):
        assert ours is not None


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=2**64 - 1))
def test_any_double_by_its_bits(bits: int) -> None:
    value = struct.unpack("<d", struct.pack("<Q", bits))[0]
    db = {"v": value, "l": [value, 1.0]}
    ours = _ours(db)
    assert ours is None or ours == _reference(db)


@pytest.mark.parametrize(
    "value",
    [math.nan, math.inf, -math.inf, 1e16, 1.5e300, -0.0, 1e-5, 1e-7, 2**64, -(2**63) - 1, "é", "a\nb",
     'a"b', "a\\b", "\x7f", Colour.RED, Level.LOW, uuid.UUID(int=7), orjson.Fragment(b"[1]"),
     date(2026, 3, 1), {1: "x"}, {"x"}, "5.0,", "k.0]"],
)  # fmt: skip
def test_what_the_path_refuses_the_slow_way_writes(value: Any) -> None:
    """Floats it cannot write as the standard library does, ints beyond 64 bits, strings with
    escapes, values of other types (even those orjson writes alike, such as a UUID), non-string
    keys, and strings the number edits could misread."""
    db = {"a": [1.0, value], "b": {"v": value}}
    assert _ours(db) is None
    assert canonical_json(db, RULES) == reference_canonical_json(db, RULES)


def test_hand_made_cases() -> None:
    bookings = [{"b": 2.0, "m": "none", "standby_list": ["z", "NONE", "a"]}, {"a": 1}, "bookings", []]
    db = {
        "session": {"excluded": 1.0},
        "fare": 260.0,
        "floats": [1.0, 2.5, 3.0, 0.0, -7.0, 1e15],
        "meal": " None ",
        "keys": {"none": "null", "NULL": 1, "Null": "nULL  "},
        "r": {
            "bookings": bookings,
            "other": [{"b": 2}, {"a": 1}],
            "standby_list": [],
        },
        "strings": ["v1.0", "none none", "xnull", "null x", "nonee"],
    }
    text = _ours(db)
    assert text == _reference(db)
    assert text is not None
    assert b'"meal":null' in text and b'"none":null' in text and b'"Null":null' in text
    assert b'"bookings":["bookings",[],{"a":1},{"b":2,"m":null,"standby_list":["a","z",null]}]' in text
    assert b'"other":[{"b":2},{"a":1}]' in text  # only the declared keys' lists are sorted


@pytest.mark.parametrize(
    "db", [{"a": 0.0, "b": -0.0}, {"a": -0.0, "b": 0.0}, {"l": [0.0, -0.0]}, {"l": [-0.0, 0.0]}]
)
def test_negative_zero_next_to_zero_is_refused(db: dict[str, Any]) -> None:
    """-0.0 equals 0.0, so a check by value sees one of them only: orjson's text is looked at."""
    assert _ours(db) is None
    assert canonical_json(db, RULES) == reference_canonical_json(db, RULES)
