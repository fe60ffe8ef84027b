"""What ``rtvi+ws://`` puts on the wire and reads from the spec: RTVI envelopes in pipecat frames,
and a domain's tool-name map.

The wire is the one NVIDIA NeMo Voice-Agent's eval bots speak (1a83139: pipecat's
``SingleClientWebsocketServerTransport`` with ``ProtobufFrameSerializer``): every WebSocket message
is a binary pipecat protobuf ``Frame`` whose ``message.data`` is the JSON text of one RTVI message
``{"label": "rtvi-ai", "type": ..., "id": ..., "data": ...}``. Only the protobuf module of pipecat
is imported here (``pipecat.frames.protobufs.frames_pb2``, the ``pipecat`` extra), not its frames.

The tool-name map is the spec folder's ``rtvi.yaml`` (schema ``schemas/rtvi.schema.json``): engine
tool name -> the bot's name of it (eva: ``get_reservation: GetReservationTool``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

from engine.core.model import SCHEMA_DIR, Domain
from engine.util.errors import UsageError
from engine.util.yamlload import YamlSyntaxError, load_yaml

#: The RTVI envelope's label.
LABEL = "rtvi-ai"
#: The file of a spec folder that holds the map.
MAP_FILE = "rtvi.yaml"


def _pb() -> Any:
    try:
        from pipecat.frames.protobufs import frames_pb2
    except ImportError:
        raise UsageError("--agent rtvi+ws:// needs pipecat: pip install 'evalctl[pipecat]'") from None
    return frames_pb2


def encode_frame(message: Mapping[str, Any]) -> bytes:
    """One RTVI message as the bytes of a pipecat protobuf ``Frame`` (``message.data`` its JSON)."""
    frame = _pb().Frame()
    frame.message.data = json.dumps(message, ensure_ascii=False)
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
        body = json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return None
    if not isinstance(body, dict) or body.get("label") != LABEL or not isinstance(body.get("type"), str):
        return None
    return body


def envelope(message_type: str, msg_id: str, data: Any) -> dict[str, Any]:
    """``{"label": "rtvi-ai", "type": message_type, "id": msg_id, "data": data}``."""
    return {"label": LABEL, "type": message_type, "id": msg_id, "data": data}


@dataclass(frozen=True)
class ToolMap:
    """A domain's tool names on the bot: ``to_bot`` engine name -> bot name, ``tool_domain``
    the bot's registry namespace. Names not in the map are the same on both sides."""

    tool_domain: str
    to_bot: Mapping[str, str] = field(default_factory=dict)

    def bot_name(self, engine_name: str) -> str:
        return self.to_bot.get(engine_name, engine_name)

    def engine_name(self, bot_name: str) -> str:
        """The engine's name of a tool the bot reports (a bot may report either name)."""
        for engine, bot in self.to_bot.items():
            if bot == bot_name:
                return engine
        return bot_name


@cache
def _schema() -> dict[str, Any]:
    body: dict[str, Any] = json.loads((SCHEMA_DIR / "rtvi.schema.json").read_text(encoding="utf-8"))
    return body


def load_tool_map(domain: Domain) -> ToolMap:
    """The map in ``rtvi.yaml`` of the domain's spec folder (or of a folder it extends), else the
    identity map. Raises UsageError (one line naming the file) for a file that does not parse or
    breaks ``schemas/rtvi.schema.json``."""
    for folder in (domain.spec_dir, *domain.parent_dirs):
        path = Path(folder) / MAP_FILE
        if path.is_file():
            return _read_map(path, domain.name)
    return ToolMap(domain.name)


def _read_map(path: Path, default_domain: str) -> ToolMap:
    try:
        doc = load_yaml(path)
    except YamlSyntaxError as err:
        raise UsageError(f"{path}: {err}") from None
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(_schema()).iter_errors(doc.data))
    if error is not None:
        where = "$" + "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
        raise UsageError(f"{path}: {where}: {error.message}")
    tools: dict[str, str] = dict(doc.data["tools"])
    if len(set(tools.values())) != len(tools):
        raise UsageError(f"{path}: $.tools: two engine tools share one bot name")
    return ToolMap(str(doc.data.get("tool_domain", default_domain)), tools)
