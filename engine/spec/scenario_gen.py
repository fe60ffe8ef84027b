"""Scenarios generated from a dataset (the domain spec's ``scenarios:`` block): one scenario doc
per record, or per id of a split file, that ``where`` accepts, named by a template or by a plugin
function; a ``scenarios/*.yaml`` file with the same id replaces the generated one (used by
``engine.spec.loader.load_domain``).
"""

from __future__ import annotations

import re
from typing import Any

from engine.core.datasources import DataFiles, read_error
from engine.core.gold import resolve_pointer
from engine.core.plugin import DomainPlugin
from engine.core.validation import did_you_mean, problem_at, schema_problems
from engine.scoring.registry import signal_names
from engine.util.errors import Problem
from engine.util.yamlload import YamlDoc


def _record_id(doc: YamlDoc) -> str | None:
    value = doc.data.get("id", doc.data.get("eva_id"))
    return value if isinstance(value, str) else None


def _selected(record: Any, where: dict[str, Any] | None) -> bool:
    """True when ``scenarios.where`` (``{pointer, in}``) accepts the record (or there is none)."""
    if where is None:
        return True
    try:
        value = resolve_pointer(record, where["pointer"])
    except KeyError:
        return False
    return any(type(value) is type(accepted) and value == accepted for accepted in where["in"])


def _generated_name(
    ddoc: YamlDoc, plugin: DomainPlugin | None, rid: str, record: Any, problems: list[Problem]
) -> str | None:
    """The generated scenario's name: the ``scenarios.name`` template (``{domain}``: the domain's
    name, so a variant that extends the spec names its scenarios after itself), or ``{derive: <name>}``
    (None, with a problem recorded, when the plugin cannot give one)."""
    spec = ddoc.data["scenarios"]["name"]
    if isinstance(spec, str):
        name = spec.replace("{domain}", ddoc.data["name"])
        return name.replace("{id}", re.sub(r"[^A-Za-z0-9_]", "_", rid))
    funcs = plugin.derive if plugin is not None else {}
    func = funcs.get(spec["derive"])
    where = ("scenarios", "name", "derive")
    try:
        if func is None:
            raise LookupError(f"unknown derive {spec['derive']!r}{did_you_mean(spec['derive'], funcs)}")
        name = func(record)
        if not isinstance(name, str):
            raise TypeError(f"gave {type(name).__name__}, not a string")
        return name
    except (LookupError, TypeError, ValueError) as err:
        problems.append(problem_at(ddoc, where, f"no scenario name for record {rid!r}: {err}"))
    return None


def generated_docs(
    ddoc: YamlDoc, data: DataFiles, files: list[YamlDoc], problems: list[Problem], plugin: DomainPlugin | None
) -> list[YamlDoc]:
    """One scenario doc per dataset record (or per id of ``scenarios.ids``) that ``scenarios.where``
    accepts, in that order; a scenario file naming the same id takes the generated one's place, and
    files naming other ids follow. Generated docs are located at the ``scenarios`` line of
    domain.yaml."""
    spec = ddoc.data["scenarios"]
    try:
        records = data.dataset(ddoc.data["dataset"])
    except (OSError, ValueError):
        return files  # reported once by the scenario builder
    ids: list[str] = list(records)
    if "ids" in spec:
        rel = spec["ids"]["file"]
        try:
            listed = resolve_pointer(data.file(rel), spec["ids"]["pointer"])
            if not isinstance(listed, list):
                raise KeyError(spec["ids"]["pointer"])
            ids = [str(i) for i in listed]
        except (OSError, ValueError) as err:
            problems.append(problem_at(ddoc, ("scenarios", "ids", "file"), read_error(rel, data.root, err)))
            return files
        except KeyError:
            message = f"{rel} has no list at {spec['ids']['pointer']}"
            problems.append(problem_at(ddoc, ("scenarios", "ids", "pointer"), message))
            return files
    by_id = {rid: doc for doc in files if (rid := _record_id(doc)) is not None}
    at = ddoc.line(("scenarios",))
    out: list[YamlDoc] = []
    for rid in ids:
        if rid in by_id:
            out.append(by_id.pop(rid))
            continue
        if not _selected(records.get(rid), spec.get("where")):
            continue
        description = f"Dataset record {rid}"
        if "description" in spec:
            try:
                text = resolve_pointer(records.get(rid, {}), spec["description"])
                first = str(text).strip().splitlines()[0].strip() if str(text).strip() else ""
                description = first[:200] or description
            except KeyError:
                pass
        name = _generated_name(ddoc, plugin, rid, records.get(rid, {}), problems)
        if name is None:
            continue
        doc = YamlDoc(ddoc.file, {"name": name, "id": rid, "description": description}, {(): at})
        # A dataset's ids may hold any character (tau2: '[service_issue]a|b[PERSONA:None]'): the
        # schema's file-safe id pattern is checked where an id would name a file (scenario_build).
        checked = YamlDoc(ddoc.file, {**doc.data, "id": "generated"}, {(): at})
        found = schema_problems(checked, "scenario", name, signal_names())
        problems.extend(found)
        if not found:
            out.append(doc)
    return out + [d for d in files if _record_id(d) in by_id]
