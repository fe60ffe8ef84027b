"""The frames' JSON: ``protocol.encode`` (orjson) writes the standard library's compact text; what
orjson refuses goes to the standard library."""

from __future__ import annotations

import json
from typing import Any

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
