"""Build the frozen :class:`engine.core.model.ToolTable` from a tool-table spec (``tools.yaml``).

A tool may name an ``upstream`` tool id in the agent config given by ``tool_descriptions_from``
(eva 0.1.3 ``configs/agents/airline_agent.yaml``) or a function name in the OpenAI tool schemas
given by ``tool_schemas_from`` (tau2's ``derived/tool_schemas.json``); its description and
parameters (types, enums, required/optional) are then read from there at load time, so upstream
prose is never pasted into our files. Upstream types map to JSON Schema: ``float`` -> ``number``;
``array`` keeps ``items``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

import jsonschema

from engine.core.model import SourceRef, ToolSpec, ToolTable
from engine.core.tools.writeset import parse_writes
from engine.core.validation import did_you_mean, problem_at
from engine.util.errors import Problem
from engine.util.yamlload import YamlDoc

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


def function_schemas(listing: Any) -> dict[str, dict[str, Any]]:
    """``{name: {description, parameters}}`` from a list of OpenAI function-tool schemas
    (``{type: function, function: {...}}`` or the bare ``{name, description, parameters}``).
    Raises ValueError for anything else."""
    if not isinstance(listing, list):
        raise ValueError("tool schemas must be a list of function schemas")
    out: dict[str, dict[str, Any]] = {}
    for entry in listing:
        fn = entry.get("function", entry) if isinstance(entry, Mapping) else None
        if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
            raise ValueError("every tool schema needs a function name")
        params = fn.get("parameters") or {"type": "object", "properties": {}, "required": []}
        out[fn["name"]] = {
            "description": str(fn.get("description") or "").strip(),
            "parameters": dict(params),
        }
    return out


def build_tool_table(
    doc: YamlDoc,
    upstream_config: Mapping[str, Any] | None,
    handlers: Mapping[str, Callable[..., Any]],
    field_rules: Mapping[str, Mapping[str, Any]] | None = None,
    schemas: Mapping[str, Mapping[str, Any]] | None = None,
    argument_check: Any = None,
    checked_handlers: frozenset[str] = frozenset(),
) -> tuple[ToolTable | None, list[Problem]]:
    """Turn a schema-valid tools doc into a ToolTable; returns ``(table or None, problems)``.

    ``handlers`` are the plugin's and the harness's (name -> function), ``field_rules`` the
    plugin's per-handler argument rules; ``upstream_config`` is the parsed eva-style agent config
    and ``schemas`` the function schemas by name (:func:`function_schemas`), or None;
    ``argument_check`` the plugin's own argument check, given to the tools whose handler is in
    ``checked_handlers`` (the plugin's, not the harness's). Cross-checks:
    unique tool names, every handler known (with did-you-mean), every ``upstream`` id present,
    description present, parameter schemas valid JSON Schema, ``writes`` paths well formed.
    """
    problems: list[Problem] = []
    upstream: dict[str, Mapping[str, Any]] = {}
    if upstream_config is not None:
        for decl in upstream_config.get("tools") or []:
            if isinstance(decl, Mapping):
                upstream[str(decl.get("id", decl.get("name")))] = decl
    if schemas is not None:
        upstream = {name: {"_schema": entry} for name, entry in schemas.items()}
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
            if upstream_config is None and schemas is None:
                problems.append(
                    problem_at(
                        doc,
                        (*here, "upstream"),
                        "'upstream' needs a top-level tool_descriptions_from or tool_schemas_from",
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
            if "_schema" in decl:
                parameters = copy.deepcopy(dict(decl["_schema"]["parameters"]))
                parameters.setdefault("properties", {})
                parameters.setdefault("required", [])
                description = description or decl["_schema"]["description"]
            else:
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
        writes = raw.get("writes")
        if writes is None and raw["kind"] in ("read", "harness"):
            writes = []
        try:
            parsed = parse_writes(writes or ())
        except ValueError as err:
            problems.append(problem_at(doc, (*here, "writes"), str(err)))
            continue
        names = set((parameters.get("properties") or {}).keys())
        unknown = [
            seg[1:-1]
            for path in parsed
            for seg in path.segments
            if seg.startswith("{") and seg.endswith("}") and seg[1:-1] not in names
        ]
        if unknown:  # such a path resolves to nothing: the node would never be copied
            hint = did_you_mean(unknown[0], names)
            message = f"writes names {{{unknown[0]}}}, not an argument of {name!r}{hint}"
            problems.append(problem_at(doc, (*here, "writes"), message))
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
                writes=None if writes is None else tuple(writes),
                ends_call=raw.get("ends_call"),
                field_rules=dict((field_rules or {}).get(raw["handler"], {})),
                run=handlers.get(raw["handler"]),
                check=argument_check if raw["handler"] in checked_handlers else None,
            )
        )
    if problems:
        return None, problems
    return ToolTable(tuple(tools), SourceRef(doc.file, 1)), []
