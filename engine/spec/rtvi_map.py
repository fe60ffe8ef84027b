"""An RTVI bot's names of a domain's tools: the spec folder's ``rtvi.yaml``.

Schema ``schemas/rtvi.schema.json``: ``tools`` maps engine tool name -> the bot's name of it (eva:
``get_reservation: GetReservationTool``, NeMo Voice-Agent's tool classes), ``tool_domain`` the bot's
registry namespace (default: the domain's name). Read by ``--agent rtvi+ws://``
(``engine.session.backends.rtvi``) and checked by ``evalctl validate`` (:func:`tool_map_problems`).
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
from engine.core.validation import did_you_mean
from engine.util.errors import Problem, UsageError
from engine.util.yamlload import YamlSyntaxError, load_yaml

#: The file of a spec folder that holds the map.
MAP_FILE = "rtvi.yaml"


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


def map_file(domain: Domain) -> Path | None:
    """The ``rtvi.yaml`` of the domain's spec folder, else of the first folder it extends that has
    one; None when none has."""
    for folder in (domain.spec_dir, *domain.parent_dirs):
        path = Path(folder) / MAP_FILE
        if path.is_file():
            return path
    return None


def load_tool_map(domain: Domain) -> ToolMap:
    """The map in ``rtvi.yaml`` of the domain's spec folder (or of a folder it extends), else the
    identity map. Raises UsageError (one line naming the file) for a file that does not parse or
    breaks ``schemas/rtvi.schema.json``."""
    path = map_file(domain)
    return ToolMap(domain.name) if path is None else _read_map(path, domain.name)


def tool_map_problems(domain: Domain) -> list[Problem]:
    """What ``evalctl validate`` says of the domain's ``rtvi.yaml``: the file does not parse or
    breaks its schema, or maps a name that is not one of the domain's tools."""
    path = map_file(domain)
    if path is None:
        return []
    try:
        found = _read_map(path, domain.name)
    except UsageError as err:
        return [Problem(str(path), 0, "$", str(err).removeprefix(f"{path}: "))]
    tools = {t.name for t in domain.tools.tools}
    return [
        Problem(str(path), 0, f"$.tools.{name}", f"unknown tool {name!r}{did_you_mean(name, tools)}")
        for name in found.to_bot
        if name not in tools
    ]


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
