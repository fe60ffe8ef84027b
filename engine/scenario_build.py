"""Build one scenario's frozen record: its spec file, its dataset record and what the domain
derives for it (initial and expected DB, today's date, gold trace, user profile), with every
problem collected (used by ``engine.specs.load_domain``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engine.datasources import DataFiles, read_error
from engine.errors import Problem
from engine.gold import gold_trace, resolve_pointer
from engine.model import Domain, Scenario, SourceRef, UserProfile
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
    """Resolve a domain ``source`` spec (file / from+pointer / value) for one scenario; raises LookupError."""
    spec = ctx.ddoc.data[key]
    if "value" in spec:
        return spec["value"]
    if "file" in spec:
        rel = spec["file"].replace("{eva_id}", eva_id)
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
    return UserProfile(
        name=str(values.get("name", "")),
        persona=str(values.get("persona", "")),
        goal=str(values.get("goal", "")),
        starting_utterance=str(values.get("starting_utterance", "")),
        decision_tree=dict(values.get("decision_tree") or {}),
        extra=extra,
    )


def build_scenario(ctx: BuildContext, doc: YamlDoc) -> Scenario | None:
    from engine.scoring.predicates import PREDICATES

    s, domain, name = doc.data, ctx.domain, doc.data["name"]
    before = len(ctx.problems)
    dspec = ctx.ddoc.data
    eva_id = s["eva_id"]
    if not name.startswith(f"{domain.name}__"):
        ctx.problems.append(
            problem_at(doc, ("name",), f"scenario names must start with '{domain.name}__'", name)
        )
    for i, assertion in enumerate(s.get("db_state_assertions", [])):
        func = assertion["func_name"]
        if (domain.name, func) not in PREDICATES:
            names = [n for d, n in PREDICATES if d == domain.name]
            ctx.problems.append(
                problem_at(
                    doc,
                    ("db_state_assertions", i, "func_name"),
                    f"unknown predicate {func!r} for domain {domain.name}{did_you_mean(func, names)}",
                    name,
                )
            )
        if assertion.get("side") == "user":  # sessions record no user-side DB: it could never pass
            ctx.problems.append(
                problem_at(
                    doc,
                    ("db_state_assertions", i, "side"),
                    "side 'user': no session has a user-side DB (the engine keeps only the agent's); "
                    "use side: agent",
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
                ("eva_id",),
                f"eva_id {eva_id!r} not found in dataset "
                f"{dspec['dataset']['path']}{did_you_mean(eva_id, records)}",
                name,
            )
        )
        return None
    signals = s.get("success_signals", list(domain.success_signals))
    values: dict[str, Any] = {}
    for key in ("initial_db", "expected_db", "current_date"):
        if key not in dspec or (dspec[key].get("from") == "initial_db" and "initial_db" not in values):
            continue
        try:
            values[key] = _source(ctx, key, eva_id, record, values.get("initial_db"), name)
        except LookupError as err:
            ctx.problems.append(problem_at(doc, ("eva_id",), str(err), name))
    trace = None
    if "gold_trace" in dspec:
        gspec = dspec["gold_trace"]
        try:
            grecords = ctx.data.dataset(gspec["dataset"]) if "dataset" in gspec else records
            grecord = grecords[eva_id]
            if gspec.get("resolve_placeholders", True):
                trace = gold_trace(grecord, domain.language, gspec["pointer"])
                known = grecord.get("culture_overrides") or {}
                if known and domain.language not in known and "language" not in ctx.reported:
                    ctx.reported.add("language")  # the trace would keep <LAST_NAME> and the like
                    have = ", ".join(sorted(known))
                    message = (
                        f"language {domain.language!r} has no person values in the gold dataset ({have})"
                    )
                    ctx.problems.append(problem_at(ctx.ddoc, ("language",), message))
            else:
                trace = tuple(resolve_pointer(grecord, gspec["pointer"]))
        except (OSError, ValueError) as err:
            if "gold" not in ctx.reported:
                ctx.reported.add("gold")
                rel = gspec.get("dataset", dspec["dataset"])["path"]
                ctx.problems.append(
                    problem_at(
                        ctx.ddoc, ("gold_trace", "dataset", "path"), read_error(rel, ctx.data.root, err)
                    )
                )
        except (KeyError, TypeError):
            ctx.problems.append(
                problem_at(
                    doc, ("eva_id",), f"no gold trace for eva_id {eva_id!r} at {gspec['pointer']}", name
                )
            )
    user = _user(ctx, record, s.get("user", {}), name)
    if len(ctx.problems) > before:
        return None
    return Scenario(
        name=name,
        eva_id=eva_id,
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
        reference_answer=s.get("reference_answer"),
        db_state_assertions=tuple(s.get("db_state_assertions", ())),
        nl_assertions=tuple(s.get("nl_assertions", ())),
        match_options=dict(s.get("match_options", {})),
        agent_notes=tuple(s.get("agent_notes", ())),
        source=SourceRef(doc.file, 1),
    )
