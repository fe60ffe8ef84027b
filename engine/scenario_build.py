"""Build one scenario's frozen record: its spec file, its dataset record and what the domain
derives for it (initial and expected DB, today's date, gold trace, user profile), with every
problem collected (used by ``engine.specs.load_domain``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from engine.datasources import DataFiles, read_error
from engine.errors import Problem
from engine.gold import CORE_ADAPTERS, GoldTrace, resolve_pointer
from engine.model import Domain, Scenario, SourceRef, UserProfile
from engine.replay import replay_scenario
from engine.validation import did_you_mean, problem_at
from engine.yamlload import YamlDoc


@dataclass
class BuildContext:
    """What building one scenario needs: the domain doc (for locating domain-side problems)."""

    domain: Domain
    ddoc: YamlDoc
    data: DataFiles
    problems: list[Problem] = field(default_factory=list)
    reported: set[str] = field(default_factory=set)  # domain-level failures already reported once


def _source(ctx: BuildContext, key: str, eva_id: str, record: Any, initial_db: Any, subject: str) -> Any:
    """Resolve a domain ``source`` spec (file / from+pointer / value) for one scenario; raises LookupError.

    ``from: gold_replay`` is resolved by the caller (it needs the tool table and the gold trace)."""
    spec = ctx.ddoc.data[key]
    if "value" in spec:
        return spec["value"]
    if "file" in spec:
        rel = spec["file"].replace("{eva_id}", eva_id).replace("{id}", eva_id)
        try:
            base = ctx.data.file(rel)
        except (OSError, ValueError) as err:
            raise LookupError(f"{key} file {read_error(rel, ctx.data.root, err)}") from None
    else:
        base = initial_db if spec.get("from") == "initial_db" else record
    try:
        return resolve_pointer(base, spec.get("pointer", ""))
    except KeyError:
        raise LookupError(f"{key}: nothing at {spec.get('pointer')} for eva_id {eva_id!r}") from None


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
    fields = ("name", "persona", "goal", "starting_utterance")
    text = {k: "" if values.get(k) is None else str(values[k]) for k in fields}  # a null field is no text
    return UserProfile(
        name=text["name"],
        persona=text["persona"],
        goal=text["goal"],
        starting_utterance=text["starting_utterance"],
        decision_tree=dict(values.get("decision_tree") or {}),
        extra=extra,
    )


def _gold(
    ctx: BuildContext, doc: YamlDoc, records: dict[str, Any], eva_id: str, name: str
) -> GoldTrace | None:
    """The scenario's gold trace read by the adapter of ``gold_trace.format``; problems collected."""
    domain, dspec = ctx.domain, ctx.ddoc.data
    gspec = dspec["gold_trace"]
    fmt = gspec.get("format", "events")
    adapters = {**CORE_ADAPTERS, **(domain.plugin.gold_adapters if domain.plugin else {})}
    adapter = adapters.get(fmt)
    if adapter is None:
        if "gold_format" not in ctx.reported:
            ctx.reported.add("gold_format")
            message = f"unknown gold trace format {fmt!r}{did_you_mean(fmt, adapters)}"
            ctx.problems.append(problem_at(ctx.ddoc, ("gold_trace", "format"), message))
        return None
    try:
        grecords = ctx.data.dataset(gspec["dataset"]) if "dataset" in gspec else records
        grecord = grecords[eva_id]
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
            problem_at(doc, _id_key(doc), f"no gold trace for record {eva_id!r} at {gspec['pointer']}", name)
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
                doc, _id_key(doc), f"gold trace of record {eva_id!r} is not in format {fmt!r}: {err}", name
            )
        )
    return None


def _id_key(doc: YamlDoc) -> tuple[str]:
    return ("eva_id",) if "eva_id" in doc.data else ("id",)


def build_scenario(ctx: BuildContext, doc: YamlDoc) -> Scenario | None:
    s, domain, name = doc.data, ctx.domain, doc.data["name"]
    before = len(ctx.problems)
    dspec = ctx.ddoc.data
    id_key = _id_key(doc)
    eva_id = s[id_key[0]]
    predicates = domain.plugin.predicates if domain.plugin else {}
    has_user_db = "user_db" in dspec
    if not name.startswith(f"{domain.name}__"):
        ctx.problems.append(
            problem_at(doc, ("name",), f"scenario names must start with '{domain.name}__'", name)
        )
    for i, assertion in enumerate(s.get("db_state_assertions", [])):
        func = assertion["func_name"]
        if func not in predicates:
            ctx.problems.append(
                problem_at(
                    doc,
                    ("db_state_assertions", i, "func_name"),
                    f"unknown predicate {func!r} for domain {domain.name}{did_you_mean(func, predicates)}",
                    name,
                )
            )
        if assertion.get("side") == "user" and not has_user_db:  # it could never pass
            ctx.problems.append(
                problem_at(
                    doc,
                    ("db_state_assertions", i, "side"),
                    f"side 'user': domain {domain.name} has no user-side DB (no user_db in its domain.yaml); "
                    "use side: agent",
                    name,
                )
            )
    for i, tool in enumerate(s.get("tools", [])):
        if domain.tools.get(tool) is None:
            ctx.problems.append(
                problem_at(
                    doc,
                    ("tools", i),
                    f"tool {tool!r} is not in the domain's tool table"
                    f"{did_you_mean(tool, domain.tools.names)}",
                    name,
                )
            )
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
    record = records.get(eva_id)
    if record is None:
        ctx.problems.append(
            problem_at(
                doc,
                id_key,
                f"{id_key[0]} {eva_id!r} not found in dataset "
                f"{dspec['dataset']['path']}{did_you_mean(eva_id, records)}",
                name,
            )
        )
        return None
    signals = s.get("success_signals", list(domain.success_signals))
    values: dict[str, Any] = {}
    for key in ("initial_db", "expected_db", "current_date", "user_db"):
        if key not in dspec or (dspec[key].get("from") == "initial_db" and "initial_db" not in values):
            continue
        if dspec[key].get("from") == "gold_replay":
            continue
        try:
            values[key] = _source(ctx, key, eva_id, record, values.get("initial_db"), name)
        except LookupError as err:
            ctx.problems.append(problem_at(doc, id_key, str(err), name))
    trace = _gold(ctx, doc, records, eva_id, name) if "gold_trace" in dspec else None
    from_gold = dspec.get("expected_db", {}).get("from") == "gold_replay"
    if from_gold and trace is None:
        ctx.problems.append(problem_at(doc, id_key, "expected_db from gold_replay needs a gold trace", name))
    fields: dict[str, Any] = {}
    for key, pointer in (dspec.get("record_fields") or {}).items():
        if key in s:
            continue
        try:
            fields[key] = resolve_pointer(record, pointer)
        except KeyError:
            fields[key] = None  # the record has none: the signal is not applicable
    user = _user(ctx, record, s.get("user", {}), name)
    if len(ctx.problems) > before:
        return None
    reference = s["reference_answer"] if "reference_answer" in s else fields.get("reference_answer")
    scenario = Scenario(
        name=name,
        record_id=eva_id,
        record_id_key="eva_id" if id_key[0] == "eva_id" else "record_id",
        description=s["description"],
        domain=domain,
        initial_db=values.get("initial_db") or {},
        expected_db=values.get("expected_db"),
        current_date=str(values.get("current_date", "")),
        user=user,
        success_signals=tuple(signals),
        max_duration=float(s.get("max_duration", domain.max_duration)),
        record=record,
        gold_trace=trace,
        reference_answer=reference,
        db_state_assertions=tuple(s.get("db_state_assertions", fields.get("db_state_assertions") or ())),
        nl_assertions=tuple(s.get("nl_assertions", fields.get("nl_assertions") or ())),
        match_options=dict(s.get("match_options", {})),
        agent_notes=tuple(s.get("agent_notes", ())),
        source=SourceRef(doc.file, 1),
        user_initial_db=values.get("user_db"),
        tool_names=tuple(s["tools"]) if "tools" in s else None,
        user_speaks_first=bool(s.get("user_speaks_first", domain.user_speaks_first)),
        kickoff=s.get("kickoff"),
    )
    if from_gold and trace is not None:  # the gold's end state, replayed as a session would run it
        scenario = replace(scenario, expected_db=replay_scenario(scenario).db)
    return scenario
