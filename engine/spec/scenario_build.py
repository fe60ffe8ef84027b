"""Build one scenario's frozen record: its spec file, its dataset record and what the domain
derives for it (initial and expected DB, today's date, gold trace, user profile), with every
problem collected (used by ``engine.spec.loader.load_domain``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from engine.core.caller import CallerStyle, caller_from_spec
from engine.core.datasources import read_error
from engine.core.gold import CORE_ADAPTERS, GoldTrace, resolve_pointer
from engine.core.model import Domain, DomainPlugin, GoldAdapter, Scenario, SourceRef, UserProfile
from engine.core.validation import did_you_mean, problem_at
from engine.spec import scenario_fields as fields
from engine.spec.gold_replay import gold_replay
from engine.spec.scenario_fields import BuildContext
from engine.util.errors import Problem
from engine.util.yamlload import JsonPath, YamlDoc

#: A record id that may name a data-root file (``{id}`` in a path): the scenario schema's id pattern.
FILE_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def _source(ctx: BuildContext, path: JsonPath, record_id: str, record: Any, initial_db: Any) -> Any:
    """Resolve the domain ``source`` spec at ``path`` of domain.yaml (file / from+pointer / value /
    derive) for one scenario; raises LookupError (``fields.Reported`` when already recorded).

    ``from: gold_replay`` is resolved by the caller (it needs the tool table and the gold trace)."""
    spec = resolve_pointer(ctx.ddoc.data, "/" + "/".join(str(p) for p in path))
    key = ".".join(str(p) for p in path)
    if "value" in spec:
        return spec["value"]
    if "derive" in spec:
        return fields.derive(ctx, (*path, "derive"), spec["derive"], record, record_id)
    if "file" in spec:
        if ("{id}" in spec["file"] or "{eva_id}" in spec["file"]) and not FILE_SAFE_ID.match(record_id):
            raise LookupError(
                f"{key} file: record id {record_id!r} cannot name a file (letters, digits, '.', '_' and '-', "
                "starting with a letter or digit)"
            )
        rel = spec["file"].replace("{eva_id}", record_id).replace("{id}", record_id)
        try:
            base = ctx.data.file(rel, per_record=rel != spec["file"])
        except (OSError, ValueError) as err:
            raise LookupError(f"{key} file {read_error(rel, ctx.data.root, err)}") from None
    else:
        base = initial_db if spec.get("from") == "initial_db" else record
    try:
        value = resolve_pointer(base, spec.get("pointer", ""))
    except KeyError:
        raise LookupError(f"{key}: nothing at {spec.get('pointer')} for record {record_id!r}") from None
    if "file" in spec and path[0] in ("initial_db", "user_db"):
        ctx.data.watch(rel, value)  # sessions share it: nothing may write into it
    return value


def _user(ctx: BuildContext, record: Any, override: dict[str, Any], subject: str) -> UserProfile:
    spec = ctx.ddoc.data["user"]
    values: dict[str, Any] = {}
    for field_name in ("name", "persona", "goal", "starting_utterance", "decision_tree"):
        if field_name in override:
            values[field_name] = override[field_name]
        elif field_name in spec:
            try:
                values[field_name] = resolve_pointer(record, spec[field_name])
            except KeyError:
                ctx.problems.append(
                    problem_at(
                        ctx.ddoc, ("user", field_name), f"record has nothing at {spec[field_name]}", subject
                    )
                )
    extra: dict[str, Any] = {}
    for label, pointer in (spec.get("extra") or {}).items():
        try:
            extra[label] = resolve_pointer(record, pointer)
        except KeyError:
            ctx.problems.append(
                problem_at(ctx.ddoc, ("user", "extra", label), f"record has nothing at {pointer}", subject)
            )
    extra.update(override.get("extra") or {})
    texts = {k: "" if values.get(k) is None else str(values[k]) for k in ("name", "persona", "goal")}
    return UserProfile(
        name=texts["name"],
        persona=texts["persona"],
        goal=texts["goal"],
        starting_utterance=str(values.get("starting_utterance") or ""),
        decision_tree=dict(values.get("decision_tree") or {}),
        extra=extra,
    )


def _gold(
    ctx: BuildContext, doc: YamlDoc, records: Mapping[str, Any], record_id: str, name: str
) -> GoldTrace | None:
    """The scenario's gold trace read by the adapter of ``gold_trace.format``; problems collected."""
    domain, dspec = ctx.domain, ctx.ddoc.data
    gspec = dspec["gold_trace"]
    fmt = gspec.get("format", "events")
    adapters: dict[str, GoldAdapter] = {
        **CORE_ADAPTERS,
        **(domain.plugin.gold_adapters if domain.plugin else {}),
    }
    adapter = adapters.get(fmt)
    if adapter is None:
        if "gold_format" not in ctx.reported:
            ctx.reported.add("gold_format")
            message = f"unknown gold trace format {fmt!r}{did_you_mean(fmt, adapters)}"
            ctx.problems.append(problem_at(ctx.ddoc, ("gold_trace", "format"), message))
        return None
    try:
        grecords = ctx.data.dataset(gspec["dataset"]) if "dataset" in gspec else records
        grecord = grecords[record_id]
        raw = resolve_pointer(grecord, gspec["pointer"])
    except (OSError, ValueError) as err:
        if "gold" not in ctx.reported:
            ctx.reported.add("gold")
            rel = gspec.get("dataset", dspec["dataset"])["path"]
            ctx.problems.append(
                problem_at(ctx.ddoc, ("gold_trace", "dataset", "path"), read_error(rel, ctx.data.root, err))
            )
        return None
    except (KeyError, TypeError):
        ctx.problems.append(
            problem_at(
                doc, _id_key(doc), f"no gold trace for record {record_id!r} at {gspec['pointer']}", name
            )
        )
        return None
    try:
        return adapter(raw, grecord, domain.language)
    except ValueError as err:
        if "gold_value" not in ctx.reported:  # a domain-wide mismatch (e.g. the language) once
            ctx.reported.add("gold_value")
            ctx.problems.append(problem_at(ctx.ddoc, ("language",), str(err)))
    except (KeyError, TypeError) as err:
        ctx.problems.append(
            problem_at(
                doc, _id_key(doc), f"gold trace of record {record_id!r} is not in format {fmt!r}: {err}", name
            )
        )
    return None


def _localised(domain: Domain, value: Any, record: Any) -> Any:
    """``value`` with the domain's per-language placeholders resolved from ``record`` (the
    plugin's ``localise``; ``value`` itself when the plugin has none)."""
    localise = domain.plugin.localise if domain.plugin else None
    if localise is None or not isinstance(record, dict):
        return value
    return localise(value, record, domain.language)


def _id_key(doc: YamlDoc) -> tuple[str]:
    return ("eva_id",) if "eva_id" in doc.data else ("id",)


def problems_in_reference(ctx: BuildContext, doc: YamlDoc, name: str) -> None:
    """A reference answer's action items must name an action type some tool records, and only
    arguments that tool has (``refund_amout: 1285`` would make the gold fail its own match)."""
    reference = doc.data.get("reference_answer")
    if not isinstance(reference, list):
        return
    by_action = {t.action_type: t for t in ctx.domain.tools.tools if t.action_type}
    for i, item in enumerate(reference):
        if not isinstance(item, dict) or not isinstance(item.get("action_type"), str):
            continue
        tool = by_action.get(item["action_type"])
        if tool is None:
            kind = item["action_type"]
            message = f"no tool records action_type {kind!r}{did_you_mean(kind, by_action)}"
            ctx.problems.append(problem_at(doc, ("reference_answer", i, "action_type"), message, name))
            continue
        params = tool.parameters.get("properties") or {}
        for key in item:
            if key != "action_type" and key not in params:
                message = f"tool {tool.name!r} has no argument {key!r}{did_you_mean(key, params)}"
                ctx.problems.append(problem_at(doc, ("reference_answer", i, key), message, name))


def _gate_problem(gate: str, plugin: DomainPlugin | None, domain: str) -> str | None:
    """Why ``gate`` (a ``gate_diagnostics`` entry) cannot gate, or None when it can."""
    diagnostics = plugin.diagnostics if plugin else {}
    if gate not in diagnostics:
        return f"{gate!r} is not a diagnostic of domain {domain}{did_you_mean(gate, diagnostics)}"
    if plugin is not None and gate in plugin.count_diagnostics:
        return f"{gate!r} counts findings (0 = clean) and cannot gate; the summary reports it as a count"
    return None


def _caller(doc: YamlDoc, block: Any, name: str, problems: list[Problem]) -> CallerStyle | None:
    """The scenario's ``caller:`` block (schema-checked already) read into a CallerStyle; a
    ``perturb`` the grammar refuses is a problem at its line."""
    if not block:
        return None
    try:
        return caller_from_spec(block)
    except ValueError as err:
        problems.append(problem_at(doc, ("caller", "perturb"), str(err).removeprefix("perturb: "), name))
        return None


def build_scenario(ctx: BuildContext, doc: YamlDoc) -> Scenario | None:
    s, domain, name = doc.data, ctx.domain, doc.data["name"]
    before = len(ctx.problems)
    dspec = ctx.ddoc.data
    id_key = _id_key(doc)
    record_id = s[id_key[0]]
    if not name.startswith(f"{domain.name}__"):
        ctx.problems.append(
            problem_at(doc, ("name",), f"scenario names must start with '{domain.name}__'", name)
        )
    ctx.problems.extend(fields.check_references(ctx, doc, s, name))
    problems_in_reference(ctx, doc, name)
    try:
        records = ctx.data.dataset(dspec["dataset"])
    except (OSError, ValueError) as err:
        if "dataset" not in ctx.reported:
            ctx.reported.add("dataset")
            ctx.problems.append(
                problem_at(
                    ctx.ddoc, ("dataset", "path"), read_error(dspec["dataset"]["path"], ctx.data.root, err)
                )
            )
        return None
    record = records.get(record_id)
    if record is None:
        ctx.problems.append(
            problem_at(
                doc,
                id_key,
                f"{id_key[0]} {record_id!r} not found in dataset "
                f"{dspec['dataset']['path']}{did_you_mean(record_id, records)}",
                name,
            )
        )
        return None
    record = _localised(domain, record, record)
    derived = fields.record_fields(ctx, s, record, record_id, name)
    s = {**(derived or {}), **s}  # the scenario file's own keys win
    signals = s.get("success_signals", list(domain.success_signals))
    gates = [*dspec.get("gate_diagnostics", []), *s.get("gate_diagnostics", [])]
    for where, listed in (
        (ctx.ddoc, dspec.get("gate_diagnostics", [])),
        (doc, s.get("gate_diagnostics", [])),
    ):
        for i, gate in enumerate(listed):
            message = _gate_problem(gate, domain.plugin, domain.name)
            if message and (where is doc or "gates" not in ctx.reported):
                ctx.problems.append(
                    problem_at(where, ("gate_diagnostics", i), message, name if where is doc else None)
                )
    if dspec.get("gate_diagnostics"):
        ctx.reported.add("gates")
    signals = [*signals, *(g for g in dict.fromkeys(gates) if g not in signals)]
    values: dict[str, Any] = {}
    for key in ("initial_db", "expected_db", "current_date", "user_db"):
        if key not in dspec or (dspec[key].get("from") == "initial_db" and "initial_db" not in values):
            continue
        if dspec[key].get("from") == "gold_replay":
            continue
        try:
            value = _source(ctx, (key,), record_id, record, values.get("initial_db"))
            values[key] = _localised(domain, value, record) if key != "current_date" else value
        except fields.Reported:
            continue
        except LookupError as err:
            ctx.problems.append(problem_at(doc, id_key, str(err), name))
    variables = fields.template_variables(
        ctx,
        record,
        record_id,
        name,
        lambda path: _source(ctx, path, record_id, record, values.get("initial_db")),
    )
    trace = _gold(ctx, doc, records, record_id, name) if "gold_trace" in dspec else None
    from_gold = dspec.get("expected_db", {}).get("from") == "gold_replay"
    if from_gold and trace is None:
        ctx.problems.append(problem_at(doc, id_key, "expected_db from gold_replay needs a gold trace", name))
    user = _user(ctx, record, s.get("user", {}), name)
    caller = _caller(doc, s.get("caller"), name, ctx.problems)
    if len(ctx.problems) > before:
        return None
    scenario = Scenario(
        name=name,
        record_id=record_id,
        spec_id_key=id_key[0],
        description=s["description"],
        domain=domain,
        initial_db=values.get("initial_db") or {},
        expected_db=values.get("expected_db"),
        current_date=str(values.get("current_date", "")),
        user=user,
        user_override=bool(s.get("user")),
        success_signals=tuple(signals),
        max_duration=float(s.get("max_duration", domain.max_duration)),
        record=record,
        gold_trace=trace,
        reference_answer=s.get("reference_answer"),
        db_state_assertions=tuple(s.get("db_state_assertions") or ()),
        nl_assertions=tuple(s.get("nl_assertions") or ()),
        match_options=dict(s.get("match_options", {})),
        agent_notes=tuple(s.get("agent_notes", ())),
        source=SourceRef(doc.file, 1),
        user_initial_db=values.get("user_db"),
        tool_names=tuple(s["tools"]) if "tools" in s else None,
        user_speaks_first=bool(s.get("user_speaks_first", domain.user_speaks_first)),
        kickoff=s.get("kickoff", domain.kickoff),
        judge_reference=s.get("judge_reference"),
        template_variables=variables or {},
        caller=caller,
    )
    if (
        from_gold and trace is not None and ctx.gold
    ):  # the gold's end state, replayed as a session would run it
        scenario = replace(scenario, expected_db=gold_replay(scenario).db)
    return scenario
