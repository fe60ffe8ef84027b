"""What ``rtvi+ws://`` puts on the wire and reads from the spec: RTVI envelopes in pipecat frames,
and a domain's tool-name map.

The wire is the one NVIDIA NeMo Voice-Agent's eval bots speak (1a83139: pipecat's
``SingleClientWebsocketServerTransport`` with ``ProtobufFrameSerializer``): every WebSocket message
is a binary pipecat protobuf ``Frame`` whose ``message.data`` is the JSON text of one RTVI message
``{"label": "rtvi-ai", "type": ..., "id": ..., "data": ...}``. Only the protobuf module of pipecat
is imported here (``pipecat.frames.protobufs.frames_pb2``, the ``pipecat`` extra), not its frames.

The tool-name map (``rtvi.yaml``) is read by :mod:`engine.spec.rtvi_map`.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import orjson

from engine.session.backends.pipecat_log import quiet_pipecat
from engine.spec.rtvi_map import MAP_FILE, ToolMap, load_tool_map
from engine.util.errors import UsageError

__all__ = ["MAP_FILE", "ToolMap", "decode_frame", "encode_frame", "envelope", "load_tool_map"]

#: The RTVI envelope's label.
LABEL = "rtvi-ai"


@functools.cache
def _pb() -> Any:
    """pipecat's protobuf module, imported once (every frame needs it). Raises UsageError."""
    quiet_pipecat()  # before pipecat's first import, which prints its banner
    try:
        from pipecat.frames.protobufs import frames_pb2
    except ImportError:
        raise UsageError("--agent rtvi+ws:// needs pipecat: pip install 'evalctl[pipecat]'") from None
    return frames_pb2


def encode_frame(message: Mapping[str, Any]) -> bytes:
    """One RTVI message as the bytes of a pipecat protobuf ``Frame`` (``message.data`` its JSON)."""
    frame = _pb().Frame()
    frame.message.data = orjson.dumps(message).decode()
    return bytes(frame.SerializeToString())


def decode_frame(raw: str | bytes) -> dict[str, Any] | None:
    """The RTVI message of one WebSocket message, None for anything else (audio, text frames,
    a message that is not an RTVI envelope). A text WebSocket message is read as the JSON
    envelope itself (a bot with a JSON serializer). Raises ValueError for bytes that are not a
    protobuf frame."""
    if isinstance(raw, str):
        text = raw
    else:
        frame = _pb().Frame()
        try:
            frame.ParseFromString(raw)
        except Exception as err:  # protobuf's DecodeError
            raise ValueError(f"not a pipecat protobuf frame ({err})") from None
        if frame.WhichOneof("frame") != "message":
            return None
        text = frame.message.data
    try:
        body = orjson.loads(text)
    except (orjson.JSONDecodeError, TypeError):
        return None
    if not isinstance(body, dict) or body.get("label") != LABEL or not isinstance(body.get("type"), str):
        return None
    return body


def envelope(message_type: str, msg_id: str, data: Any) -> dict[str, Any]:
    """``{"label": "rtvi-ai", "type": message_type, "id": msg_id, "data": data}``."""
    return {"label": LABEL, "type": message_type, "id": msg_id, "data": data}
