"""Build the frozen :class:`engine.model.ToolTable` from a tool-table spec (``tools.yaml``).

A tool may name an ``upstream`` tool id in the agent config given by ``tool_descriptions_from``
(eva 0.1.3 ``configs/agents/airline_agent.yaml``); its description and parameters (types, enums,
required/optional) are then read from there at load time, so upstream prose is never pasted into
our files. Upstream types map to JSON Schema: ``float`` -> ``number``; ``array`` keeps ``items``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

import jsonschema

from engine.errors import Problem
from engine.model import SourceRef, ToolSpec, ToolTable
from engine.validation import did_you_mean, problem_at
from engine.yamlload import YamlDoc

_TYPES = {
    "string": "string",
    "integer": "integer",
    "int": "integer",
    "float": "number",
    "number": "number",
    "boolean": "boolean",
    "bool": "boolean",
    "array": "array",
    "list": "array",
    "object": "object",
    "dict": "object",
}


def upstream_parameters(decl: Mapping[str, Any]) -> dict[str, Any]:
    """JSON Schema ``{type: object, properties, required}`` from an eva tool declaration's
    ``required_parameters`` / ``optional_parameters`` (each ``{name, type, description, enum?, items?}``).
    Raises ValueError for an upstream type with no JSON Schema equivalent."""
    props: dict[str, Any] = {}
    required: list[str] = []
    for group, is_required in (("required_parameters", True), ("optional_parameters", False)):
        for param in decl.get(group) or []:
            utype = str(param.get("type", "string"))
            if utype not in _TYPES:
                raise ValueError(f"parameter {param.get('name')!r} has unknown upstream type {utype!r}")
            prop: dict[str, Any] = {"type": _TYPES[utype]}
            if "items" in param:
                items = dict(param["items"])
                if "type" in items:
                    items["type"] = _TYPES.get(str(items["type"]), items["type"])
                prop["items"] = items
            if "enum" in param:
                prop["enum"] = list(param["enum"])
            if param.get("description"):
                prop["description"] = str(param["description"]).strip()
            props[str(param["name"])] = prop
            if is_required:
                required.append(str(param["name"]))
    return {"type": "object", "properties": props, "required": required}


def _merge_parameters(base: dict[str, Any], overlay: Mapping[str, Any]) -> dict[str, Any]:
    """Our ``parameters`` over upstream's: per-property dict merge, ``required`` replaced."""
    merged = copy.deepcopy(base)
    for name, prop in (overlay.get("properties") or {}).items():
        merged["properties"][name] = {**merged["properties"].get(name, {}), **prop}
    for key in ("required", "additionalProperties"):
        if key in overlay:
            merged[key] = copy.deepcopy(overlay[key])
    return merged


def build_tool_table(
    doc: YamlDoc,
    upstream_config: Mapping[str, Any] | None,
    handlers: Mapping[str, Callable[..., Any]],
) -> tuple[ToolTable | None, list[Problem]]:
    """Turn a schema-valid tools doc into a ToolTable; returns ``(table or None, problems)``.

    Cross-checks: unique tool names, every handler registered (with did-you-mean), every
    ``upstream`` id present in ``upstream_config['tools']``, description present, parameter
    schemas valid JSON Schema. ``upstream_config`` is the parsed agent config, or None.
    """
    problems: list[Problem] = []
    upstream: dict[str, Mapping[str, Any]] = {}
    if upstream_config is not None:
        for decl in upstream_config.get("tools") or []:
            if isinstance(decl, Mapping):
                upstream[str(decl.get("id", decl.get("name")))] = decl
    tools: list[ToolSpec] = []
    seen: dict[str, int] = {}
    for i, raw in enumerate(doc.data["tools"]):
        name = raw["name"]
        here: tuple[str | int, ...] = ("tools", i)
        if name in seen:
            problems.append(
                problem_at(
                    doc,
                    (*here, "name"),
                    f"duplicate tool name {name!r} (first at line {doc.line(('tools', seen[name]))})",
                )
            )
            continue
        seen[name] = i
        if raw["handler"] not in handlers:
            problems.append(
                problem_at(
                    doc,
                    (*here, "handler"),
                    f"unknown handler {raw['handler']!r}{did_you_mean(raw['handler'], handlers)}",
                )
            )
        description = raw.get("description")
        parameters: dict[str, Any] = {"type": "object", "properties": {}, "required": []}
        if "upstream" in raw:
            decl = upstream.get(raw["upstream"])
            if upstream_config is None:
                problems.append(
                    problem_at(
                        doc, (*here, "upstream"), "'upstream' needs a top-level tool_descriptions_from"
                    )
                )
                continue
            if decl is None:
                problems.append(
                    problem_at(
                        doc,
                        (*here, "upstream"),
                        f"upstream tool {raw['upstream']!r} not "
                        f"found in tool_descriptions_from{did_you_mean(raw['upstream'], upstream)}",
                    )
                )
                continue
            try:
                parameters = upstream_parameters(decl)
            except ValueError as err:
                problems.append(problem_at(doc, (*here, "upstream"), str(err)))
                continue
            description = description or str(decl.get("description", "")).strip()
        if not description:
            problems.append(problem_at(doc, here, f"tool {name!r} needs a description (or an upstream id)"))
            continue
        if "parameters" in raw:
            parameters = _merge_parameters(parameters, raw["parameters"])
        try:
            jsonschema.Draft202012Validator.check_schema(parameters)
        except jsonschema.SchemaError as err:
            problems.append(problem_at(doc, (*here, "parameters"), f"not a valid JSON Schema: {err.message}"))
            continue
        tools.append(
            ToolSpec(
                name=name,
                kind=raw["kind"],
                handler=raw["handler"],
                description=description,
                parameters=parameters,
                action_type=raw.get("action_type"),
                options=dict(raw.get("options") or {}),
                source=SourceRef(doc.file, doc.line(here)),
            )
        )
    if problems:
        return None, problems
    return ToolTable(tuple(tools), SourceRef(doc.file, 1)), []
