"""Per-scenario values a domain spec takes from the dataset record: ``{derive: <name>}`` sources
(a function of the domain plugin), ``record_fields`` (scenario keys read or computed from the
record) and ``template_variables`` (extra variables of each side's prompt), with every problem
collected and located in ``domain.yaml`` (used by ``engine.spec.scenario_build``).

A value from the record is checked like the key it stands for: the scenario keys against
``schemas/scenario.schema.json`` and the same cross-checks a scenario file gets (known predicates,
tools of the table, signals with ``clean_exit``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.core.datasources import DataFiles
from engine.core.gold import resolve_pointer
from engine.core.model import Domain
from engine.core.validation import check_signals, did_you_mean, problem_at, schema_problems
from engine.scoring.registry import signal_names
from engine.util.errors import Problem
from engine.util.yamlload import JsonPath, YamlDoc


@dataclass
class BuildContext:
    """What building one scenario needs: the domain doc (for locating domain-side problems)."""

    domain: Domain
    ddoc: YamlDoc
    data: DataFiles
    problems: list[Problem] = field(default_factory=list)
    reported: set[str] = field(default_factory=set)  # domain-level failures already reported once
    #: Resolve ``expected_db: {from: gold_replay}`` by replaying the gold (False: left None, for
    #: a verb that shows scenarios and never scores them: ``evalctl list``).
    gold: bool = True


#: Variables every template gets from the engine (engine.core.render.context): a domain's own template
#: variables may not replace them.
ENGINE_VARIABLES = frozenset(
    {"scenario", "domain", "user", "policy_role", "policy_instructions", "current_date"}
    | {"agent_notes", "tools"}
)


class Reported(LookupError):
    """The value could not be had and the problem is already recorded (once per domain)."""


def derive(ctx: BuildContext, path: JsonPath, name: str, record: Any, record_id: str) -> Any:
    """``plugin.derive[name](record)``. Raises Reported for a name the plugin lacks (recorded once,
    at ``path`` of domain.yaml, with a did-you-mean) and LookupError naming the record when the
    function fails on it (KeyError, TypeError, ValueError)."""
    funcs = ctx.domain.plugin.derive if ctx.domain.plugin is not None else {}
    func = funcs.get(name)
    if func is None:
        key = f"derive:{name}"
        if key not in ctx.reported:
            ctx.reported.add(key)
            plugin = ctx.domain.plugin.name if ctx.domain.plugin is not None else "none"
            message = (
                f"unknown derive {name!r}: plugin {plugin} has "
                f"{', '.join(sorted(funcs)) or 'no derive functions'}{did_you_mean(name, funcs)}"
            )
            ctx.problems.append(problem_at(ctx.ddoc, path, message))
        raise Reported(name)
    try:
        return func(record)
    except (KeyError, TypeError, ValueError) as err:
        where = ".".join(str(p) for p in path)
        raise LookupError(
            f"{where}: derive {name!r} failed for record {record_id!r}: {type(err).__name__}: {err}"
        ) from None


def _value(ctx: BuildContext, path: JsonPath, spec: Any, record: Any, record_id: str) -> tuple[bool, Any]:
    """``(found, value)`` of a record value (a pointer or ``{derive}``); a pointer that finds
    nothing gives ``(False, None)``. Raises like :func:`derive`."""
    if isinstance(spec, Mapping):
        return True, derive(ctx, (*path, "derive"), spec["derive"], record, record_id)
    try:
        return True, resolve_pointer(record, spec)
    except KeyError:
        return False, None


def record_fields(
    ctx: BuildContext, scenario: Mapping[str, Any], record: Any, record_id: str, name: str
) -> dict[str, Any] | None:
    """The scenario keys the domain's ``record_fields`` give this record (keys the scenario file
    sets are skipped), checked like a scenario file's; None when one of them has a problem
    (recorded in ``ctx.problems``, located at its ``record_fields`` line)."""
    before = len(ctx.problems)
    fields: dict[str, Any] = {}
    for key, spec in (ctx.ddoc.data.get("record_fields") or {}).items():
        if key in scenario:
            continue
        try:
            found, value = _value(ctx, ("record_fields", key), spec, record, record_id)
        except Reported:
            continue
        except LookupError as err:
            ctx.problems.append(problem_at(ctx.ddoc, ("record_fields", key), str(err), name))
            continue
        if found and value is not None:  # nothing (or null) in the record: the key stays unset
            fields[key] = value
    if len(ctx.problems) > before:
        return None
    check_fields(ctx, fields, name, record_id)
    return None if len(ctx.problems) > before else fields


def _as_doc(ctx: BuildContext, scenario_keys: Mapping[str, Any]) -> YamlDoc:
    """The record's values as a scenario document located at their ``record_fields`` lines."""
    lines: dict[JsonPath, int] = {(key,): ctx.ddoc.line(("record_fields", key)) for key in scenario_keys}
    lines[()] = ctx.ddoc.line(("record_fields",))
    return YamlDoc(ctx.ddoc.file, dict(scenario_keys), lines)


def _relocate(problem: Problem, record_id: str) -> Problem:
    path = "$.record_fields" + problem.json_path[1:]
    message = f"value from record {record_id!r}: {problem.message}"
    return Problem(problem.file, problem.line, path, message, problem.subject)


def check_fields(ctx: BuildContext, fields: Mapping[str, Any], name: str, record_id: str) -> None:
    """Schema-check record values as scenario keys, then the cross-checks of
    :func:`check_references` (problems located at ``record_fields`` in domain.yaml)."""
    if not fields:
        return
    doc = _as_doc(ctx, fields)
    # the scenario schema needs its required keys: give it harmless ones, then check the rest
    probe = YamlDoc(doc.file, {"name": "x__y", "id": "x", "description": "x", **fields}, doc.lines)
    found = [_relocate(p, record_id) for p in schema_problems(probe, "scenario", name, signal_names())]
    signals = check_signals(doc, ("success_signals",), fields.get("success_signals"), name)
    found += [_relocate(p, record_id) for p in signals]
    ctx.problems.extend(found)
    if not found:
        ctx.problems.extend(_relocate(p, record_id) for p in check_references(ctx, doc, fields, name))


def check_references(ctx: BuildContext, doc: YamlDoc, values: Mapping[str, Any], name: str) -> list[Problem]:
    """Cross-checks of scenario keys (a scenario file's, or record values as a document): every
    ``db_state_assertions`` predicate is the plugin's and reads a DB the domain has, every
    ``tools`` entry is in the tool table."""
    domain, out = ctx.domain, []
    predicates = domain.plugin.predicates if domain.plugin else {}
    for i, assertion in enumerate(values.get("db_state_assertions", [])):
        func = assertion["func_name"]
        if func not in predicates:
            out.append(
                problem_at(
                    doc,
                    ("db_state_assertions", i, "func_name"),
                    f"unknown predicate {func!r} for domain {domain.name}{did_you_mean(func, predicates)}",
                    name,
                )
            )
        if assertion.get("side") == "user" and "user_db" not in ctx.ddoc.data:  # it could never pass
            out.append(
                problem_at(
                    doc,
                    ("db_state_assertions", i, "side"),
                    f"side 'user': domain {domain.name} has no user-side DB (no user_db in its domain.yaml); "
                    "use side: agent",
                    name,
                )
            )
    for i, tool in enumerate(values.get("tools", [])):
        if domain.tools.get(tool) is None:
            out.append(
                problem_at(
                    doc,
                    ("tools", i),
                    f"tool {tool!r} is not in the domain's tool table"
                    f"{did_you_mean(tool, domain.tools.names)}",
                    name,
                )
            )
    return out


#: The keys of a ``source`` (schemas/domain.schema.json ``$defs.source``): a side's
#: ``template_variables`` holding none of them names its variables one by one.
SOURCE_KEYS = frozenset({"file", "from", "pointer", "value", "format", "derive"})


def _side_value(spec: Any, where: JsonPath, source: Any) -> Any:
    """One side's variables: the mapping ``source(where)`` gives, or, for ``{<variable>: <source>}``,
    each variable's own source. Raises like ``source`` (its text names the variable's path)."""
    if not isinstance(spec, Mapping) or SOURCE_KEYS & set(spec):
        return source(where)
    return {variable: source((*where, variable)) for variable in spec}


def template_variables(
    ctx: BuildContext, record: Any, record_id: str, name: str, source: Any
) -> dict[str, dict[str, Any]] | None:
    """Each side's extra template variables (``template_variables`` of domain.yaml): one source
    whose value is the mapping of variables, or a mapping of variable name -> source (e.g. a
    data-root text file each), read with ``source(path)``; None when one is not a mapping of new
    variable names (recorded)."""
    out: dict[str, dict[str, Any]] = {}
    before = len(ctx.problems)
    for side, spec in (ctx.ddoc.data.get("template_variables") or {}).items():
        where = ("template_variables", side)
        try:
            value = _side_value(spec, where, source)
        except Reported:
            continue
        except LookupError as err:
            ctx.problems.append(problem_at(ctx.ddoc, where, str(err), name))
            continue
        if not isinstance(value, Mapping) or not all(isinstance(k, str) and k.isidentifier() for k in value):
            message = f"the {side} template variables of record {record_id!r} are not a mapping of names"
            ctx.problems.append(problem_at(ctx.ddoc, where, message, name))
            continue
        clash = sorted(ENGINE_VARIABLES & set(value))
        if clash:
            message = f"the {side} template variables may not replace the engine's: {', '.join(clash)}"
            if f"clash:{side}" not in ctx.reported:
                ctx.reported.add(f"clash:{side}")
                ctx.problems.append(problem_at(ctx.ddoc, where, message))
            continue
        out[side] = dict(value)
    return None if len(ctx.problems) > before else out
