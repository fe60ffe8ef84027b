"""The frames' JSON: ``protocol.encode`` (orjson) writes the standard library's compact text; what
orjson refuses goes to the standard library."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.core.protocol import encode
from tests.json_strategies import json_values


def _stdlib(msg: Any) -> str:
    return json.dumps(msg, ensure_ascii=False, separators=(",", ":"), default=str)


def test_encode_writes_the_standard_librarys_compact_text() -> None:
    msg = {
        "v": 1,
        "type": "turn.response",
        "text": 'ü \u2028 "q"\n\t\u0001',
        "n": [1, 2.5, None, True],
        "d": {},
    }
    assert encode(msg) == _stdlib(msg)


def test_what_orjson_refuses_is_the_standard_librarys() -> None:
    for msg in ({"big": 10**30}, {"k": {1: "int key"}}, {"s": "\ud800"}):
        assert encode(msg) == _stdlib(msg)


@given(st.dictionaries(st.text(), json_values, max_size=5))
def test_any_message_as_the_standard_library_writes_it(msg: dict[str, Any]) -> None:
    assert encode(msg) == _stdlib(msg)


def _same(a: Any, b: Any) -> bool:
    """Equal values of the same types all the way down (1 is not 1.0, -0.0 is not 0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return repr(a) == repr(b)


def test_parse_gives_the_standard_librarys_values_where_orjson_differs_or_refuses() -> None:
    from engine.core.protocol import _parse

    texts = ("[12345678901234567890123]", "[9223372036854775807]", '["\\ud800"]')
    texts += (
        '{"a": 1, "a": 2}',
        "[1e400, -0.0, 1.5e-7, -0]",
        '["\\u00e9\\n"]',
        '{"k": [123456789012345678]}',
        # 19 digits or more: the only texts whose value is walked for a float that was an integer
        "[18446744073709551616, -9223372036854775809, 9223372036854775808]",
        '{"t": "ref 12345678901234567890", "n": 1}',
        "[1e19, 12345678901234567890.0]",
    )
    for text in texts:
        assert _same(_parse(text), json.loads(text)), text


@given(st.dictionaries(st.text(), json_values, max_size=5))
def test_any_frame_parses_as_the_standard_library_parses_it(msg: dict[str, Any]) -> None:
    from engine.core.protocol import _parse

    for text in (_stdlib(msg), json.dumps(msg)):
        assert _same(_parse(text), json.loads(text))


@given(st.integers(min_value=-(2**80), max_value=2**80), st.text(max_size=8))
def test_an_integer_of_any_size_parses_as_the_standard_library_parses_it(n: int, text: str) -> None:
    from engine.core.protocol import _parse

    frame = json.dumps({"v": 1, "text": text, "n": n, "deep": [{"x": n}]})
    assert _same(_parse(frame), json.loads(frame))


def test_nan_and_the_infinities_are_not_json() -> None:
    """Python's json writes and reads them; JSON has no such numbers. Before: a session.start
    with a NaN turn timeout passed every bound of its schema (each comparison with NaN is False)."""
    from engine.core.protocol import ProtocolError, _parse, decode

    for word in ("NaN", "Infinity", "-Infinity"):
        with pytest.raises(ProtocolError) as err:
            _parse(f'{{"t": {word}}}')
        assert err.value.code == "bad_json" and f"{word} is not a JSON number" in err.value.message
    start = {
        "v": 1, "type": "session.start", "id": "e1", "role": "agent",
        "limits": {"max_duration_s": 600, "turn_timeout_s": float("nan"), "max_tool_rounds": 10},
    }  # fmt: skip
    with pytest.raises(ProtocolError) as err:
        decode(json.dumps(start))
    assert err.value.code == "bad_json" and "NaN is not a JSON number" in err.value.message
