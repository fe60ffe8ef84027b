"""Argument coercion at parity with upstream eva's models (pydantic v2, lax mode), issue #10 §1.

The expected values come from pydantic itself (a pinned dev dependency) on generated inputs:
evalctl's checker must accept exactly what pydantic accepts, with the same value, except where
docs/argument_rules.md lists a deliberate divergence (non-finite numbers are refused).
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from engine.core.tools.arguments import ArgumentChecker, FieldRule

PY_TYPES = {"integer": int, "number": float, "boolean": bool, "string": str}
ALPHABET = "0123456789+-_.eEinfatrueyonsNIF \t\n١٢٣xXb"


def ours(json_type: str, value: Any) -> tuple[bool, Any]:
    checker = ArgumentChecker(
        {"type": "object", "properties": {"v": {"type": json_type}}, "required": ["v"]}, {}
    )
    clean, failed = checker.check({"v": value})
    return (failed is None, clean["v"] if clean else None)


def theirs(json_type: str, value: Any) -> tuple[bool, Any]:
    try:
        return True, TypeAdapter(PY_TYPES[json_type]).validate_python(value)
    except ValidationError:
        return False, None


def _same(json_type: str, value: Any) -> None:
    expected = theirs(json_type, value)
    if expected[0] and isinstance(expected[1], float) and not math.isfinite(expected[1]):
        expected = (False, None)  # deliberate: a non-finite number never reaches a JSON DB
    got = ours(json_type, value)
    assert got[0] == expected[0], (json_type, value, got, expected)
    if got[0]:
        assert got[1] == expected[1] and type(got[1]) is type(expected[1]), (json_type, value, got, expected)


LISTED = [
    ("boolean", " false"),
    ("boolean", "false "),
    ("boolean", "\tfalse"),
    ("boolean", "FALSE"),
    ("boolean", "yes"),
    ("boolean", 2),
    ("boolean", 1.0),
    ("boolean", "2"),
    ("integer", "1.0"),
    ("integer", "1.00"),
    ("integer", "1."),
    ("integer", "١٢"),
    ("integer", " 7 "),
    ("integer", "1_000"),
    ("integer", "1e3"),
    ("integer", True),
    ("integer", 1.5),
    ("integer", "0x10"),
    ("number", "inf"),
    ("number", "1e999"),
    ("number", "nan"),
    ("number", "١٥"),
    ("number", " .5 "),
    # underscores: pydantic-core removes them only when the untrimmed text neither starts nor ends
    # with one and has no two in a row (found by the generated test: "0_." is 0.0)
    ("number", "0_."),
    ("number", "1._5"),
    ("number", "1e_5"),
    ("number", " 1_0 "),
    ("number", "1.5_"),
    ("number", "1__0"),
    ("number", "1_000.5"),
    ("number", True),
    ("string", 5),
    ("string", True),
]


@pytest.mark.parametrize(("json_type", "value"), LISTED)
def test_listed_rules_match_pydantic(json_type: str, value: Any) -> None:
    _same(json_type, value)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(["integer", "number", "boolean"]), st.text(alphabet=ALPHABET, max_size=8))
def test_generated_text_matches_pydantic(json_type: str, text: str) -> None:
    _same(json_type, text)


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(["integer", "number", "boolean", "string"]),
    st.one_of(st.integers(-5, 5), st.floats(allow_nan=False, allow_infinity=False), st.booleans()),
)
def test_generated_numbers_match_pydantic(json_type: str, value: Any) -> None:
    _same(json_type, value)


@pytest.mark.parametrize("value", ["PAX001\n", "PAX001\r\n", " PAX001", "PAX001 "])
def test_a_pattern_end_does_not_match_before_a_newline(value: str) -> None:
    rule = FieldRule("invalid_passenger_id_format", "PAX<digits>", constraints={"pattern": r"^PAX\d+$"})
    checker = ArgumentChecker(
        {"type": "object", "properties": {"passenger_id": {"type": "string"}}, "required": ["passenger_id"]},
        {"passenger_id": rule},
    )
    clean, failed = checker.check({"passenger_id": value})
    assert clean is None and failed["error_type"] == "invalid_passenger_id_format"
    assert checker.check({"passenger_id": "PAX001"}) == ({"passenger_id": "PAX001"}, None)


def test_a_fractional_integer_says_so() -> None:
    checker = ArgumentChecker(
        {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}, {}
    )
    assert checker.check({"n": 2.7})[1]["message"].endswith("got a number with a fractional part")
    assert checker.check({"n": 2.0**70})[1]["message"].endswith("too large")
