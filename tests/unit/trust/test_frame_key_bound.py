"""Issue 30 item 8 (the breaker): one ~10 MB frame with 800,000 keys stalled the whole run for ~3 s
(parsed and schema-checked on the event loop every session shares). A frame of more than
``MAX_FRAME_COLONS`` colons is now refused before it is parsed; the frames of a real session are
far below the bound."""

from __future__ import annotations

import json

import pytest

import engine.core.protocol as protocol
from engine.core.protocol import MAX_FRAME_COLONS, ProtocolError, decode


def _tool_call(arguments: object) -> str:
    body = {"v": 1, "type": "tool.call", "id": "x1", "reply_to": "e1", "call_id": "c", "name": "get_order"}
    return json.dumps({**body, "arguments": arguments})


def test_one_frame_with_800000_keys_is_refused_before_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[int] = []
    real = protocol.json.loads
    monkeypatch.setattr(protocol.json, "loads", lambda raw, **kw: parsed.append(len(raw)) or real(raw, **kw))
    keys = "{" + ",".join(f'"key{i:06d}":1' for i in range(800_000)) + "}"  # 10.4 MB of JSON
    as_object = _tool_call("X").replace('"X"', keys)
    for frame in (as_object, _tool_call(keys)):  # an object, or JSON in a string (the protocol's form)
        assert len(frame) > 10_000_000
        with pytest.raises(ProtocolError) as err:
            decode(frame)
        assert (
            err.value.code == "bad_json"
            and "800,00" in err.value.message
            and "not parsed" in err.value.message
        )
    assert parsed == []  # never handed to the parser (nor to the schema check)


def test_frames_below_the_bound_still_decode() -> None:
    keys = {f"k{i}": 1 for i in range(MAX_FRAME_COLONS // 2)}
    msg = decode(_tool_call(json.dumps(keys)), check_schema=False)
    assert len(json.loads(msg["arguments"])) == MAX_FRAME_COLONS // 2
    text = "note: " * 1000  # colons in text count, far below the bound
    assert json.loads(decode(_tool_call(json.dumps({"order_id": text})))["arguments"])["order_id"] == text
