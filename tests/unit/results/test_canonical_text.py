"""The fast canonical text (engine.util.canonical_text) equals the slow, obvious one (normalise a copy,
then dump) on every DB, including the ones made to trip its text edits; the eva facts are in
tests/domains/eva_airline/test_dbhash.py."""

from __future__ import annotations

import hashlib
import math
from datetime import date
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.core.dbhash import canonical_json, db_hash, reference_canonical_json
from engine.core.model import HashRules
from engine.util.canonical_text import fast_canonical_text

RULES = HashRules(excluded_keys=("session",), unordered_lists=("bookings", "standby_list"))

# strings that look like what the text edits look for
TRICKY = [
    "none", " None ", "NULL", "\tnull\u00a0", "nul", "nonee", "5.0,", "x.0]", "a.0}", "1e+16",
    "-0.0", "e+", '"quoted"', "back\\slash", "bookings", "standby_list", "\n", "\r", "é", "😀",
    "[1.0]", ":5.0,", "", "0.0", "- 0.0",
]  # fmt: skip

leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1.0, -5.0, 260.0, 1e16, 1.5e300, 2.5, -0.5, 1e-7]),
    st.text(max_size=8),
    st.sampled_from(TRICKY),
)
keys = st.one_of(
    st.sampled_from(["bookings", "standby_list", "a", "b", "none", "1.0", "x.0,"]), st.text(max_size=4)
)


def _trees(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.lists(children, max_size=4), st.dictionaries(keys, children, max_size=4))


dbs = st.dictionaries(keys, st.recursive(leaves, _trees, max_leaves=25), max_size=5)
# what the fast path must take itself: whole floats, -0.0, none/null strings, unordered lists
plain_leaves = st.one_of(
    st.none(),
    st.integers(min_value=-1000, max_value=1000),
    st.sampled_from([0.0, -0.0, 1.0, -5.0, 260.0, 2.5, 9007199254740992.0]),
    st.sampled_from(["none", " None ", "NULL", "a", "b.c", "2026-03-20", "bookings", "+1-512"]),
)
plain_keys = st.sampled_from(["bookings", "standby_list", "a", "b", "none", "1.0", "Null"])


def _plain_trees(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.lists(children, max_size=4), st.dictionaries(plain_keys, children, max_size=4))


plain_dbs = st.dictionaries(plain_keys, st.recursive(plain_leaves, _plain_trees, max_leaves=25), max_size=5)


@settings(max_examples=200, deadline=None)
@given(plain_dbs)
def test_fast_path_takes_plain_dbs_itself(db: dict[str, Any]) -> None:
    fast = fast_canonical_text({k: v for k, v in db.items() if k != "session"}, RULES.unordered_lists)
    assert fast is not None
    assert fast == reference_canonical_json(db, RULES)


@settings(max_examples=200, deadline=None)
@given(dbs)
def test_fast_text_equals_the_reference(db: dict[str, Any]) -> None:
    expected = reference_canonical_json(db, RULES)
    # this path on its own (engine.core.dbhash tries the orjson path first)
    fast = fast_canonical_text({k: v for k, v in db.items() if k != "session"}, RULES.unordered_lists)
    assert fast is None or fast == expected
    assert canonical_json(db, RULES) == expected
    assert db_hash(db, RULES) == hashlib.sha256(expected.encode("ascii")).hexdigest()


def test_text_edits_on_hand_made_cases() -> None:
    db = {
        "fare": 260.0,
        "neg": -0.0,
        "big": 1e16,
        "floats": [1.0, 2.5, 3.0],
        "meal": " None ",
        "keys": {"none": "null", "NULL": 1},
        "r": {"bookings": [{"b": 2.0, "m": "none"}, {"a": 1}, "bookings"], "other": [{"b": 2}, {"a": 1}]},
        "tricky": ["5.0,", "x.0]", "[1.0]"],
    }
    assert canonical_json(db, RULES) == reference_canonical_json(db, RULES)
    assert '"meal":null' in canonical_json(db, RULES) and '"none":null' in canonical_json(db, RULES)


def test_the_fast_path_takes_plain_json_and_gives_up_on_the_rest() -> None:
    unordered = RULES.unordered_lists
    assert fast_canonical_text({"a": 1.0, "b": ["x", 2.0]}, unordered) == '{"a":1,"b":["x",2]}'
    # the slow way dumps what JSON does not know with str(); the fast path leaves it to it
    assert fast_canonical_text({"d": date(2026, 3, 1)}, unordered) is None
    assert canonical_json({"d": date(2026, 3, 1)}, RULES) == '{"d":"2026-03-01"}'
    # a float of 1e16 or more is written with an exponent: left to the slow way, same result
    assert fast_canonical_text({"big": 1e16}, unordered) is None
    assert canonical_json({"big": 1e16}, RULES) == '{"big":10000000000000000}'
    # a string the number edits could misread is left to the slow way
    assert fast_canonical_text({"s": "5.0,"}, unordered) is None
    assert canonical_json({"s": "5.0,", "n": math.inf}, RULES) == '{"n":Infinity,"s":"5.0,"}'


def test_a_string_key_none_is_kept_and_a_string_value_none_is_null() -> None:
    db = {"none": "none", "list": ["NULL", " null "], "standby_list": ["b", "a", "none"]}
    text = canonical_json(db, RULES)
    assert text == '{"list":[null,null],"none":null,"standby_list":["a","b",null]}'
    assert text == reference_canonical_json(db, RULES)
