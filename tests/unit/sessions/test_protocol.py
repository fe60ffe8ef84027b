"""The wire protocol: schemas, decoding with typed errors, backend spec strings."""

from __future__ import annotations

import inspect
import json
import re
import sys

import jsonschema
import pytest

from engine.core.protocol import (
    MESSAGE_TYPES,
    PROTOCOL_SCHEMA_DIR,
    ProtocolError,
    decode,
    encode,
    end_call_schema,
    make,
)
from engine.session.backends import BackendSpec
from engine.session.backends.registry import parse_backend_spec
from engine.util.errors import UsageError

EXAMPLES = {
    "session.start": make(
        "session.start",
        "e1",
        session_id="s#1",
        role="agent",
        system_prompt="p",
        tools=[end_call_schema()],
        scenario={"name": "x", "starting_utterance": None},
        limits={"max_duration_s": 900, "turn_timeout_s": 120, "max_tool_rounds": 10, "max_turns": None},
    ),
    "session.ready": make("session.ready", "a1", reply_to="e1", backend="replay"),
    "turn.request": make("turn.request", "e2", turn=0, utterance=None, closing=False),
    "tool.call": make("tool.call", "a2", reply_to="e2", call_id="c", name="t", arguments="{bad json"),
    "tool.result": make("tool.result", "e3", reply_to="a2", call_id="c", result={"status": "ok"}, ended=None),
    "turn.response": make(
        "turn.response",
        "a3",
        reply_to="e2",
        text="hi",
        end=False,
        usage={"model": "m", "prompt_tokens": 1, "completion_tokens": 2, "calls": 1},
    ),
    "session.end": make("session.end", "e4", stop_reason="exit", error=None),
    "error": make("error", "a4", code="bad_message", message="m", reply_to=None),
}


def test_one_schema_per_type_and_all_closed() -> None:
    files = sorted(p.stem for p in PROTOCOL_SCHEMA_DIR.glob("*.json"))
    assert files == sorted(MESSAGE_TYPES)
    for name in MESSAGE_TYPES:
        schema = json.loads((PROTOCOL_SCHEMA_DIR / f"{name}.json").read_text())
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["additionalProperties"] is False
        assert {"v", "type", "id"} <= set(schema["required"])


@pytest.mark.parametrize("mtype", MESSAGE_TYPES)
def test_examples_round_trip(mtype: str) -> None:
    assert decode(encode(EXAMPLES[mtype])) == EXAMPLES[mtype]


@pytest.mark.parametrize(
    ("frame", "code", "needle"),
    [
        ("not json", "bad_json", "not JSON"),
        ("[1, 2]", "bad_json", "expected an object"),
        (b'{"v": 1}', "bad_json", "binary"),
        ('{"v": 2, "type": "turn.request", "id": "x"}', "unsupported_version", "version 2"),
        ('{"type": "turn.request", "id": "x"}', "unsupported_version", "None"),
        ('{"v": 1, "type": "turn.bogus", "id": "x"}', "bad_message", "unknown message type"),
        ('{"v": 1, "type": "turn.request", "id": "x", "turn": 0}', "bad_message", "'utterance' is"),
        (
            '{"v": 1, "type": "turn.request", "id": "x", "turn": 0, "utterance": null, "extra": 1}',
            "bad_message",
            "extra",
        ),
        (
            '{"v": 1, "type": "tool.call", "id": "x", "reply_to": "e", "call_id": "c", "name": "t",'
            ' "arguments": {}}',
            "bad_message",
            "$.arguments",
        ),
    ],
)
def test_bad_frames_give_typed_errors(frame: str | bytes, code: str, needle: str) -> None:
    with pytest.raises(ProtocolError) as info:
        decode(frame)
    assert info.value.code == code
    assert needle in info.value.message


def test_error_reply_to_names_the_bad_message() -> None:
    with pytest.raises(ProtocolError) as info:
        decode('{"v": 9, "type": "turn.response", "id": "a7"}')
    assert info.value.reply_to == "a7"


@pytest.mark.parametrize(
    ("text", "spec"),
    [
        ("replay", BackendSpec("replay")),
        ("noop", BackendSpec("noop")),
        ("openai:gpt-4.1-mini", BackendSpec("openai", model="gpt-4.1-mini")),
        ("ws://127.0.0.1:9000", BackendSpec("external", uri="ws://127.0.0.1:9000")),
        ("wss://agents.example:443/eva", BackendSpec("external", uri="wss://agents.example:443/eva")),
    ],
)
def test_backend_specs(text: str, spec: BackendSpec) -> None:
    assert parse_backend_spec(text) == spec
    assert str(spec) == text


@pytest.mark.parametrize("text", ["", "openai:", "gpt-4", "http://x", "ws://"])
def test_bad_backend_specs(text: str) -> None:
    with pytest.raises(
        UsageError,
        match=re.escape(
            "expected replay, noop, openai:MODEL, ws://host:port, rtvi+ws://host:port, "
            "python:FILE.py:FACTORY, pipecat:FILE.py:FACTORY or livekit:FILE.py:FACTORY"
        ),
    ):
        parse_backend_spec(text)


@pytest.mark.parametrize(
    "text", ["ws://127.0.0.1:99999", "ws://[::1", "ws://host:abc", "ws://:9000", "wss://h:0"]
)
def test_unusable_ws_urls_are_bad_input(text: str) -> None:
    # They passed the prefix check and surfaced later as a traceback (exit 1) from the side probe.
    with pytest.raises(UsageError, match="not a usable ws:// URL"):
        parse_backend_spec(text)


@pytest.mark.parametrize(
    ("frame", "code", "needle"),
    [
        ("[" * 100_000 + "]" * 100_000, "bad_json", "nested too deeply"),
        (
            json.dumps(
                {
                    "v": 1,
                    "type": "tool.call",
                    "id": "a",
                    "reply_to": "e",
                    "call_id": "c",
                    "name": "x",
                    "arguments": {"k": "v" * 1_000_000},
                }
            ),
            "bad_message",
            "chars)",
        ),
    ],
    ids=["deep_json", "schema_error_quoting_a_huge_value"],
)
def test_bad_frames_give_short_typed_errors(frame: str, code: str, needle: str) -> None:
    with pytest.raises(ProtocolError) as info:
        decode(frame)
    assert info.value.code == code and needle in info.value.message
    assert len(info.value.message) < 2100


def test_a_frame_with_a_lone_surrogate_escape_is_bad_json() -> None:
    from engine.core.protocol import ProtocolError, decode

    # before: decoded fine, then the engine could not forward it (UnicodeEncodeError in websockets:
    # 'agent side disconnected') and the session's metrics.json was never written
    frame = '{"v": 1, "type": "turn.response", "id": "a1", "reply_to": "e1", "text": "hi \\ud800"}'
    with pytest.raises(ProtocolError, match="lone UTF-16 surrogate") as info:
        decode(frame)
    assert info.value.code == "bad_json"
    emoji = '{"v": 1, "type": "turn.response", "id": "a1", "reply_to": "e1", "text": "\\ud83d\\ude00"}'
    assert decode(emoji)["text"] == "\N{GRINNING FACE}"  # a proper pair is text


def test_a_frame_too_deep_to_word_its_error_is_bad_message() -> None:
    """A value nested 900 deep parses (orjson goes to 1024) and is refused by the compiled check;
    jsonschema's wording of the error recurses through it: with less stack than that, the frame is
    still a typed ``bad_message``, never a RecursionError (before: the run's engine error, exit 3)."""
    deep = "[" * 900 + "]" * 900
    frame = '{"v":1,"type":"turn.response","id":"a1","reply_to":"e1","text":' + deep + "}"
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack()) + 400)  # less than the wording needs
    try:
        with pytest.raises(ProtocolError) as info:
            decode(frame)
    finally:
        sys.setrecursionlimit(limit)
    assert info.value.code == "bad_message" and "nested too deeply" in info.value.message
    with pytest.raises(ProtocolError) as info:  # with the whole stack, the schema's own wording
        decode(frame)
    assert info.value.code == "bad_message" and "is not of type 'string'" in info.value.message


def test_a_version_mismatch_says_which_session_this_is() -> None:
    """Found by a new user: a v1 agent in a --voice run read "protocol version 1 is not supported
    on this connection (it speaks v2)", as if the agent spoke v2."""
    with pytest.raises(ProtocolError) as info:
        decode('{"v": 1, "type": "session.ready", "id": "a1", "reply_to": "e1"}', version=2)
    assert info.value.code == "unsupported_version"
    assert info.value.message == (
        "protocol version 1 is not supported on this connection, a v2 session (an audio session, "
        "--voice: docs/protocol.md, 'Audio sessions (version 2)')"
    )
