"""The session wire protocol: JSON text frames over WebSockets (documented in ``docs/protocol.md``).

Every frame is one JSON object ``{"v": 1, "type": ..., "id": ..., ...}``; replies carry
``reply_to`` (the id they answer). Each message type has its JSON Schema (draft 2020-12,
``additionalProperties: false``) in ``schemas/protocol/<type>.json``. :func:`decode` checks, in
order: JSON text, object, known major version, known type, schema; and raises
:class:`ProtocolError` with a typed ``code`` on the first failure.

Version 2 (:data:`AUDIO_PROTOCOL_VERSION`) is the audio session: the same messages, with audio
fields (schemas in ``schemas/protocol/v2/``), plus binary audio frames (``engine.session.voice.frames``).
A connection speaks one version, chosen by the engine's ``session.start``.
"""

from __future__ import annotations

import itertools
import json
import re
from functools import cache
from pathlib import Path
from typing import Any, Literal

import jsonschema
import jsonschema_rs
import orjson

from engine.core.model import SCHEMA_DIR
from engine.util.untrusted import one_line

#: Major protocol version. Additive changes (new optional fields) keep it; anything else bumps it.
PROTOCOL_VERSION = 1

#: The audio session (binary audio frames beside the JSON messages); text sessions stay version 1.
AUDIO_PROTOCOL_VERSION = 2

MESSAGE_TYPES: tuple[str, ...] = (
    "session.start",
    "session.ready",
    "turn.request",
    "tool.call",
    "tool.result",
    "turn.response",
    "session.end",
    "error",
)

ErrorCode = Literal[
    "bad_json",
    "bad_message",
    "unsupported_version",
    "unexpected_message",
    "unknown_scenario",
    "backend_error",
    "backend_timeout",
    "backend_rejected",
    "internal_error",
]

PROTOCOL_SCHEMA_DIR = SCHEMA_DIR / "protocol"

#: Frames larger than this (bytes) are refused by both ends.
MAX_FRAME_BYTES = 16 * 1024 * 1024


class ProtocolError(Exception):
    """A frame that breaks the protocol. ``code`` is an :data:`ErrorCode`, ``message`` one line."""

    def __init__(self, code: ErrorCode, message: str, reply_to: str | None = None):
        super().__init__(f"{code}: {message}")
        self.code: ErrorCode = code
        self.message = message
        self.reply_to = reply_to


def schema_path(message_type: str, version: int = PROTOCOL_VERSION) -> Path:
    """``schemas/protocol/<type>.json`` (version 1) or ``schemas/protocol/v<N>/<type>.json``."""
    folder = PROTOCOL_SCHEMA_DIR if version == PROTOCOL_VERSION else PROTOCOL_SCHEMA_DIR / f"v{version}"
    return folder / f"{message_type}.json"


@cache
def validator(message_type: str, version: int = PROTOCOL_VERSION) -> jsonschema.protocols.Validator:
    """The compiled validator of ``message_type`` in protocol ``version`` (cached)."""
    schema = json.loads(schema_path(message_type, version).read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


@cache
def fast_validator(message_type: str, version: int = PROTOCOL_VERSION) -> Any:
    """The compiled (Rust) ``jsonschema_rs`` validator of the same schema as :func:`validator`
    (cached): about 100x faster on a frame. Only its acceptance is used; a frame it refuses, or one
    it cannot take (an integer beyond 64 bits, NaN), is judged and worded by :func:`validator`."""
    schema = json.loads(schema_path(message_type, version).read_text(encoding="utf-8"))
    return jsonschema_rs.validator_for(schema)


def _accepted_fast(msg: dict[str, Any], message_type: str, version: int) -> bool:
    """Whether the compiled validator accepts ``msg`` (False: the frame goes to jsonschema)."""
    try:
        return bool(fast_validator(message_type, version).is_valid(msg))
    except (ValueError, TypeError, OverflowError, RecursionError):  # jsonschema decides (and words it)
        return False


MAX_MESSAGE_CHARS = 2000
"""Longest message text from or about a side that the engine keeps (results, progress lines)."""


def clip(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``text`` on one line (runs of control characters — newlines of an HTML error page, ANSI
    escapes — become one space; bidi and zero-width characters are shown as ``<U+XXXX>``) cut to
    ``limit`` characters, noting the full length: a side's 5 MB error message (or a schema error
    quoting a 16 MiB value) must not flood the results and the terminal, and a progress or summary
    line must stay one line (engine.util.untrusted.one_line)."""
    return one_line(text, limit)


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _has_lone_surrogate(msg: dict[str, Any]) -> bool:
    """True when a string in ``msg`` holds a lone surrogate (it cannot be encoded as UTF-8, so it
    could be neither forwarded to the other side nor written to the results)."""
    try:
        json.dumps(msg, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    except RecursionError:  # nested too deeply: the schema check refuses the frame
        return False
    return False


#: ``:`` characters one frame may hold, counted before it is parsed (a C-speed count: about 10 ms
#: for 10 MB). Every object key needs one, so this bounds the keys too, and the keys of JSON held
#: in a string (a tool call's ``arguments``, parsed later) with them. Parsing and checking run on
#: the event loop every session shares: a 10 MB frame of 800,000 keys held it for seconds. No
#: protocol message needs near this many (colons inside text count as well).
MAX_FRAME_COLONS = 200_000


def decode(raw: str | bytes, *, check_schema: bool = True, version: int = PROTOCOL_VERSION) -> dict[str, Any]:
    """Parse and validate one frame of a ``version`` connection; returns the message dict.

    Raises :class:`ProtocolError`: ``bad_json`` (not a JSON object in a text frame),
    ``unsupported_version`` (``v`` is not ``version``), ``bad_message`` (unknown type
    or schema violation; the message names the JSON path, or says a value is nested too deeply to
    word the error: no field of a message nests; ``bad_json`` also for a lone surrogate
    escape (``\\ud800``), valid JSON syntax but not Unicode text. ``check_schema=False`` skips the
    schema (the costly part, though a compiled check accepts a valid frame in under a microsecond:
    :func:`fast_validator`): for frames from a trusted peer, i.e. the engine talking to a built-in side.
    A frame of more than :data:`MAX_FRAME_COLONS` colons is ``bad_json`` before it is parsed.
    """
    if isinstance(raw, bytes):
        raise ProtocolError("bad_json", "binary frames are not part of the protocol; send JSON text")
    if (colons := raw.count(":")) > MAX_FRAME_COLONS:
        raise ProtocolError(
            "bad_json",
            f"frame holds {colons:,} ':' (object keys, or colons in text), over the "
            f"{MAX_FRAME_COLONS:,} a frame may hold; not parsed",
        )
    msg = _parse(raw)
    if not isinstance(msg, dict):
        raise ProtocolError("bad_json", f"frame is JSON {type(msg).__name__}, expected an object")
    if _SURROGATE_ESCAPE.search(raw) and _has_lone_surrogate(msg):
        raise ProtocolError(
            "bad_json", "frame holds a lone UTF-16 surrogate escape (e.g. \\ud800), which is not text"
        )
    reply_to = msg.get("id") if isinstance(msg.get("id"), str) and len(msg["id"]) <= 200 else None
    got = msg.get("v")
    if got != version or isinstance(got, bool):
        raise ProtocolError(
            "unsupported_version",
            f"protocol version {clip(repr(got), 80)} is not supported on this connection, a "
            f"v{version} session"
            + (
                " (an audio session, --voice: docs/protocol.md, 'Audio sessions (version 2)')"
                if version == AUDIO_PROTOCOL_VERSION
                else ""
            ),
            reply_to,
        )
    mtype = msg.get("type")
    if mtype not in MESSAGE_TYPES:
        raise ProtocolError("bad_message", f"unknown message type {clip(repr(mtype), 200)}", reply_to)
    if not check_schema or _accepted_fast(msg, mtype, version):
        return msg
    try:
        error = jsonschema.exceptions.best_match(validator(mtype, version).iter_errors(msg))
        detail = None if error is None else clip(f"{mtype}: {error.json_path}: {error.message}")
    except RecursionError:  # a value nested ~1000 deep: orjson parses it, jsonschema cannot word it
        detail = f"{mtype}: a value nested too deeply for any field of this message; not checked further"
    if detail is not None:
        raise ProtocolError("bad_message", detail, reply_to)
    return msg


#: orjson parses an integer beyond 64 bits as a float (the standard library keeps it an int): a
#: float this large and whole may have been one, so the frame is parsed again by the standard library.
_BIG_FLOAT = float(2**63)


def _may_be_big_int(value: Any) -> bool:
    """Whether ``value`` (parsed by orjson) holds a whole float of at least 2**63 in magnitude."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
        elif kind is float and abs(item) >= _BIG_FLOAT and item.is_integer():
            return True
    return False


def _parse(raw: str) -> Any:
    """The JSON value of ``raw``, exactly as ``json.loads`` gives it: by orjson (several times
    faster) unless orjson refuses it (lone surrogates, nesting past its limit) or it may hold an
    integer beyond 64 bits (:func:`_may_be_big_int`); then by the standard library. Raises
    ProtocolError ``bad_json``, also for ``NaN`` and the infinities, which are not JSON."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        pass  # the standard library decides (and words the error)
    else:
        if not _may_be_big_int(value):
            return value
    try:
        return json.loads(raw, parse_constant=_not_a_number)
    except ValueError as err:
        raise ProtocolError("bad_json", f"frame is not JSON: {err}") from None
    except RecursionError:
        raise ProtocolError("bad_json", "frame is nested too deeply") from None


def _not_a_number(name: str) -> float:
    """``json.loads``'s hook for ``NaN``, ``Infinity`` and ``-Infinity``, which Python writes but
    JSON (RFC 8259) has no such numbers: a limit of NaN seconds passes every schema bound (each
    comparison with NaN is False). Raises ValueError."""
    raise ValueError(f"{name} is not a JSON number")


def encode(msg: dict[str, Any]) -> str:
    """Serialise one message as compact JSON text (non-ASCII kept as is): by orjson, the text of
    ``json.dumps(msg, ensure_ascii=False, separators=(",", ":"), default=str)`` but for floats in
    exponent form (``1e-7``) and NaN / infinities (``null``: JSON has no such numbers); what orjson
    refuses (non-string keys, integers beyond 64 bits, lone surrogates) goes to the standard
    library."""
    try:
        return orjson.dumps(msg, default=str, option=ORJSON_OPTIONS).decode("utf-8")
    except TypeError:
        return json.dumps(msg, ensure_ascii=False, separators=(",", ":"), default=str)


#: orjson's options for a frame: dataclasses and datetimes go to ``default=str``, as with json.dumps.
ORJSON_OPTIONS = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME


class Ids:
    """Message ids for one sender on one connection: ``<prefix>1``, ``<prefix>2``, ..."""

    def __init__(self, prefix: str):
        self._prefix = prefix
        self._count = itertools.count(1)

    def next(self) -> str:
        return f"{self._prefix}{next(self._count)}"


def make(message_type: str, msg_id: str, *, v: int = PROTOCOL_VERSION, **fields: Any) -> dict[str, Any]:
    """Build a message dict: the envelope (``v``, ``type``, ``id``) plus ``fields``."""
    return {"v": v, "type": message_type, "id": msg_id, **fields}


def error_message(
    msg_id: str, code: ErrorCode, message: str, reply_to: str | None = None, *, v: int = PROTOCOL_VERSION
) -> dict[str, Any]:
    """An ``error`` message."""
    return make("error", msg_id, v=v, code=code, message=message[:4000], reply_to=reply_to)


#: The one tool of the user side. The engine runs it (it touches no DB): it hangs up the call.
END_CALL_TOOL = "end_call"


def end_call_schema() -> dict[str, Any]:
    """The OpenAI function schema of :data:`END_CALL_TOOL`, sent to the user side in session.start."""
    return {
        "type": "function",
        "function": {
            "name": END_CALL_TOOL,
            "description": "Hang up: end the phone call once you are done or want to stop.",
            "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
        },
    }
