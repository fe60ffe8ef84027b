"""The frames' JSON: ``protocol.loads`` gives exactly what ``json.loads`` gives (value, types, or
the exception) though orjson parses most frames; ``protocol.encode`` writes what the standard
library writes."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.protocol import encode, loads


def _same(raw: str) -> None:
    try:
        want: Any = json.loads(raw)
    except (ValueError, RecursionError) as err:
        with pytest.raises(type(err)) as got:
            loads(raw)
        assert str(got.value) == str(err)
        return
    got_value = loads(raw)
    assert _typed(got_value) == _typed(want), raw


def _typed(value: Any) -> Any:
    """``value`` with every leaf tagged by its type (1 and 1.0 differ; NaN equals NaN)."""
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    if isinstance(value, float) and math.isnan(value):
        return ("nan",)
    return (type(value).__name__, value)


EDGES = [
    '{"a": 1}',
    '{"a": NaN, "b": Infinity, "c": -Infinity}',
    '{"a": 1e400, "b": -1e400, "c": 1e-400}',
    '{"a": 123456789012345678}',
    '{"a": 1234567890123456789}',
    '{"a": 18446744073709551615, "b": -9223372036854775809}',
    '{"a": 123456789012345678901234567890}',
    '{"a": 0.12345678901234567890123}',
    '{"a": -0, "b": -0.0, "c": 1E2, "d": 1e-7}',
    '{"a": 1, "a": 2}',
    '{"a": "\\ud800"}',
    '{"a": "\\ud83d\\ude00", "b": "ü\\u00fc"}',
    '{"a": "tab\there"}',
    "[" * 5000 + "]" * 5000,
    '{"a": 1,}',
    '{"a" 1}',
    "",
    " {} ",
    '"just a string"',
    "\ufeff{}",
]


@pytest.mark.parametrize("raw", EDGES)
def test_edge_texts_parse_as_the_standard_library_parses_them(raw: str) -> None:
    _same(raw)


_numbers = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.floats(allow_nan=False).map(repr).filter(lambda t: "inf" not in t),
    st.from_regex(r"-?(0|[1-9][0-9]{0,25})(\.[0-9]{1,25})?([eE][+-]?[0-9]{1,3})?", fullmatch=True),
)


@given(st.lists(_numbers, max_size=5))
def test_any_number_parses_as_the_standard_library_parses_it(numbers: list[str]) -> None:
    _same("[" + ",".join(numbers) + "]")


@given(st.text(max_size=30))
def test_any_string_parses_as_the_standard_library_parses_it(text: str) -> None:
    _same(json.dumps({"t": text}))
    _same(json.dumps({"t": text}, ensure_ascii=False))


def test_encode_writes_the_standard_librarys_compact_text() -> None:
    msg = {"v": 1, "type": "turn.response", "text": 'ü \u2028 "q"', "n": [1, 2.5, None, True], "d": {}}
    assert encode(msg) == json.dumps(msg, ensure_ascii=False, separators=(",", ":"))
    assert encode({"big": 10**30}) == '{"big":1000000000000000000000000000000}'
