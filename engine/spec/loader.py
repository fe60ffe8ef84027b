"""Load a spec directory (``domain.yaml``, the tool table, ``scenarios/*.yaml``) into frozen records.

``load_domain`` reads every file, validates each against its JSON Schema, resolves the data
sources in the data root (dataset records, fixture DBs, gold traces, policy), runs the
cross-checks and renders both prompt templates for every scenario. It raises one SpecError that
carries every problem found; nothing is skipped. Dataset files are parsed once per load.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from engine.core.dataroot import resolve_data_root, warn_if_modified
from engine.core.datasources import DataFiles, read_error
from engine.core.gold import resolve_pointer
from engine.core.grouping import GroupRule, parse_rule
from engine.core.model import Domain, HashRules, KnownGoldError, Scenario, SourceRef, ToolTable
from engine.core.plugin import DomainPlugin, Plugins
from engine.core.render import check_templates
from engine.core.tools.harness import HARNESS_HANDLERS
from engine.core.validation import check_signals, did_you_mean, problem_at, schema_problems
from engine.scoring.registry import signal_names
from engine.spec.languages import in_language
from engine.spec.scenario_build import build_scenario
from engine.spec.scenario_fields import BuildContext
from engine.spec.scenario_gen import generated_docs
from engine.spec.toolspecs import build_tool_table, function_schemas
from engine.util.errors import DataRootError, Problem, SpecError, UsageError
from engine.util.safepaths import outside_problem
from engine.util.yamlload import YamlDoc, YamlSyntaxError, display_path, load_yaml

DOMAIN_FILE = "domain.yaml"
SCENARIO_DIR = "scenarios"


@dataclass(frozen=True)
class LoadedDomain:
    """A validated domain and its scenarios (sorted by file name). ``prompts_rendered`` counts the
    prompts rendered while checking templates (agent + user per scenario)."""

    domain: Domain
    scenarios: tuple[Scenario, ...]
    prompts_rendered: int = 0
    data: DataFiles | None = field(default=None, compare=False, repr=False)

    def shared_db_problems(self) -> list[Problem]:
        """One problem per shared initial DB that something wrote into since it was parsed (a
        tool writing outside its ``writes``; see :meth:`DataFiles.changed`)."""
        if self.data is None:
            return []
        return [
            Problem(
                self.domain.source.file,
                0,
                "$.tool_table",
                f"the shared DB {rel} changed while gold traces were replayed: a tool writes outside its "
                f"'writes' declaration (changed: {', '.join(paths) or 'top level'}); sessions would see "
                "each other's changes",
            )
            for rel, paths in self.data.changed()
        ]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.scenarios)

    def scenario(self, name: str) -> Scenario:
        """The scenario called ``name`` (or whose record id it is, e.g. eva's ``1.1.2``); raises
        UsageError with a did-you-mean otherwise."""
        for s in self.scenarios:
            if s.name == name:
                return s
        for s in self.scenarios:
            if s.record_id == name:
                return s
        raise UsageError(
            f"no scenario named {name!r} in {self.domain.spec_dir}{did_you_mean(name, self.names)}"
        )


def _load(path: Path, kind: str, problems: list[Problem]) -> tuple[YamlDoc | None, bool]:
    """Parse and schema-check one spec file: ``(doc or None on a syntax error, schema ok)``.

    Scenario problems name the scenario (its ``name`` when that is a string).
    """
    try:
        doc = load_yaml(path)
    except YamlSyntaxError as err:
        problems.append(err.problem)
        return None, False
    subject = None
    if kind == "scenario" and isinstance(doc.data, dict) and isinstance(doc.data.get("name"), str):
        subject = doc.data["name"]
    found = schema_problems(doc, kind, subject, signal_names())  # type: ignore[arg-type]
    problems.extend(found)
    return doc, not found


def _policy(doc: YamlDoc, data: DataFiles, problems: list[Problem]) -> tuple[str, str]:
    spec = doc.data["policy"]
    if "files" in spec:
        texts: list[str] = []
        for i, rel in enumerate(spec["files"]):
            try:
                text = data.file(rel, "text")
            except (OSError, ValueError) as err:
                problems.append(problem_at(doc, ("policy", "files", i), read_error(rel, data.root, err)))
                continue
            texts.append(str(text).strip("\n"))
        return spec.get("role", ""), "\n\n".join(texts)
    if "file" not in spec:
        return spec.get("role", ""), spec["instructions"]
    try:
        config = data.file(spec["file"])
        role_key, instr_key = spec.get("role_key", "role"), spec.get("instructions_key", "instructions")
        return str(config.get(role_key, "")), str(config[instr_key])
    except (OSError, ValueError, yaml.YAMLError) as err:
        problems.append(
            problem_at(
                doc,
                ("policy", "file"),
                read_error(spec["file"], data.root, err),
            )
        )
    except (KeyError, AttributeError, TypeError):
        problems.append(
            problem_at(
                doc,
                ("policy", "instructions_key"),
                f"{spec['file']} has no key {spec.get('instructions_key', 'instructions')!r}",
            )
        )
    return "", ""


def _tool_table(
    spec_dirs: tuple[Path, ...],
    ddoc: YamlDoc,
    key: str,
    data: DataFiles,
    plugin: DomainPlugin | None,
    problems: list[Problem],
) -> ToolTable | None:
    """Load and build the tool table named by the domain's ``key`` (tool_table / user_tool_table),
    from the spec folder or, when it lacks the file, the folder it extends."""
    spec_dir = next((d for d in spec_dirs if (d / ddoc.data[key]).is_file()), spec_dirs[0])
    path = spec_dir / ddoc.data[key]
    if (outside := outside_problem(spec_dir, path)) is not None:  # never read: its errors would quote it
        problems.append(problem_at(ddoc, (key,), f"tool table {ddoc.data[key]} {outside}"))
        return None
    if not path.is_file():
        problems.append(problem_at(ddoc, (key,), f"tool table {display_path(path)} not found"))
        return None
    doc, ok = _load(path, "tools", problems)
    if doc is None or not ok:
        return None
    upstream, schemas = None, None
    source_key = "tool_descriptions_from" if "tool_descriptions_from" in doc.data else "tool_schemas_from"
    if source_key in doc.data:
        ref = doc.data[source_key]
        rel = ref if isinstance(ref, str) else ref["file"]
        try:
            loaded = data.file(rel)
            if source_key == "tool_schemas_from":
                schemas = function_schemas(resolve_pointer(loaded, ref.get("pointer", "")))
            else:
                upstream = loaded
        except (OSError, ValueError, yaml.YAMLError) as err:
            problems.append(problem_at(doc, (source_key,), read_error(rel, data.root, err)))
            return None
        except KeyError:
            problems.append(
                problem_at(doc, (source_key, "pointer"), f"{rel} has nothing at {ref.get('pointer')}")
            )
            return None
        if source_key == "tool_descriptions_from" and not isinstance(upstream, dict):
            problems.append(
                problem_at(
                    doc,
                    (source_key,),
                    f"{rel} in data root {data.root} holds a "
                    f"{type(upstream).__name__}, not a mapping with a 'tools' list",
                )
            )
            return None
    handlers = {**HARNESS_HANDLERS, **(plugin.handlers if plugin else {})}
    rules = plugin.field_rules if plugin else {}
    check = plugin.argument_check if plugin else None
    own = frozenset(plugin.handlers) if plugin else frozenset()
    table, found = build_tool_table(doc, upstream, handlers, rules, schemas, check, own)
    problems.extend(found)
    return table


def _known_gold_errors(doc: YamlDoc) -> tuple[KnownGoldError, ...]:
    """The ``known_gold_errors`` entries as records located at their spec line."""
    return tuple(
        KnownGoldError(
            str(e["id"]),
            int(e["call"]),
            e["tool"],
            e.get("note", ""),
            SourceRef(doc.file, doc.line(("known_gold_errors", i))),
        )
        for i, e in enumerate(doc.data.get("known_gold_errors") or ())
    )


def _plugin(doc: YamlDoc, plugins: Plugins, problems: list[Problem]) -> DomainPlugin | None:
    name = doc.data.get("plugin", doc.data["name"])
    plugin = plugins.get(name)
    if plugin is None:
        where = ("plugin",) if "plugin" in doc.data else ("name",)
        known = ", ".join(sorted(plugins)) or "none"
        problems.append(
            problem_at(
                doc,
                where,
                f"no domain plugin named {name!r} (known: {known}){did_you_mean(name, plugins)}; "
                "set 'plugin:' to the handler package this domain uses",
            )
        )
    return plugin


def _domain_file(spec_dir: Path, problems: list[Problem]) -> Path | None:
    path = spec_dir / DOMAIN_FILE
    if (outside := outside_problem(spec_dir, path)) is not None:
        problems.append(Problem(display_path(path), 0, "$", f"{DOMAIN_FILE} {outside}"))
        return None
    if not path.is_file():
        problems.append(
            Problem(
                display_path(path), 0, "$", "domain spec not found (every spec directory needs a domain.yaml)"
            )
        )
        return None
    return path


def _domain_doc(spec_dir: Path, problems: list[Problem]) -> tuple[YamlDoc | None, bool, tuple[Path, ...]]:
    """The domain spec, merged over the one it ``extends`` (one level: the parent may not extend
    another), schema-checked; returns ``(doc, schema ok, the extended spec folders)``. Keys the
    child inherits are located at its ``extends`` line."""
    path = _domain_file(spec_dir, problems)
    if path is None:
        return None, False, ()
    try:
        doc = load_yaml(path)
    except YamlSyntaxError as err:
        problems.append(err.problem)
        return None, False, ()
    if not isinstance(doc.data, dict) or "extends" not in doc.data:
        found = schema_problems(doc, "domain", signals=signal_names())
        problems.extend(found)
        return doc, not found, ()
    ref = doc.data["extends"]
    parent_dir = (spec_dir / str(ref)).resolve()
    parent_path = parent_dir / DOMAIN_FILE if parent_dir.is_dir() else None
    if parent_path is None or not parent_path.is_file():
        problems.append(
            problem_at(doc, ("extends",), f"extends {ref!r}: no {DOMAIN_FILE} in {display_path(parent_dir)}")
        )
        return None, False, ()
    try:
        parent = load_yaml(parent_path)
    except YamlSyntaxError as err:
        problems.append(err.problem)
        return None, False, ()
    if not isinstance(parent.data, dict) or "extends" in parent.data:
        problems.append(
            problem_at(doc, ("extends",), f"extends {ref!r}: that domain extends another (one level only)")
        )
        return None, False, ()
    at = doc.line(("extends",))
    merged = {**parent.data, **{k: v for k, v in doc.data.items() if k != "extends"}}
    lines = {p: at for p in parent.lines if p and p[0] not in doc.data}
    lines.update(doc.lines)
    merged_doc = YamlDoc(doc.file, merged, lines, doc.problems)
    found = schema_problems(merged_doc, "domain", signals=signal_names())
    problems.extend(found)
    return merged_doc, not found, (parent_dir,)


def _hash_rules(doc: YamlDoc, plugin: DomainPlugin | None, problems: list[Problem]) -> HashRules:
    rules = doc.data.get("hash_rules", {})
    style = rules.get("style", "canonical")
    func = None
    if style != "canonical":
        styles = plugin.hash_styles if plugin else {}
        func = styles.get(style)
        if func is None:
            problems.append(
                problem_at(
                    doc,
                    ("hash_rules", "style"),
                    f"unknown hash style {style!r} (canonical, or one the plugin registers: "
                    f"{', '.join(sorted(styles)) or 'none'}){did_you_mean(style, styles)}",
                )
            )
    return HashRules(
        tuple(rules.get("excluded_keys", ("session",))),
        tuple(rules.get("unordered_lists", ())),
        style,
        func,
    )


def _build_domain(
    spec_dir: Path,
    root: Path,
    data: DataFiles,
    plugins: Plugins,
    problems: list[Problem],
    language: str | None = None,
) -> tuple[Domain, YamlDoc] | None:
    doc, ok, parents = _domain_doc(spec_dir, problems)
    if doc is not None and ok:
        doc = in_language(doc, language)
    if doc is not None and isinstance(doc.data, dict):
        problems.extend(check_signals(doc, ("success_signals",), doc.data.get("success_signals"), None))
    if doc is None or not ok:
        return None
    d = doc.data
    _check_releases(doc, root)
    role, instructions = _policy(doc, data, problems)
    plugin = _plugin(doc, plugins, problems)
    tools = _tool_table((spec_dir, *parents), doc, "tool_table", data, plugin, problems)
    user_tools = None
    if "user_tool_table" in d:
        user_tools = _tool_table((spec_dir, *parents), doc, "user_tool_table", data, plugin, problems)
    if tools is not None and not any(t.ends_call for t in tools.tools):
        problems.append(
            problem_at(
                doc, ("tool_table",), "no agent tool ends the call: give the hang-up tool 'ends_call: exit'"
            )
        )
    domain = Domain(
        name=d["name"],
        description=d["description"],
        spec_dir=spec_dir,
        data_root=root,
        policy_role=role,
        policy_instructions=instructions,
        templates=dict(d["templates"]),
        success_signals=tuple(d["success_signals"]),
        max_duration=float(d["max_duration"]),
        hash_rules=_hash_rules(doc, plugin, problems),
        tools=tools or ToolTable(()),
        language=d.get("language", "en"),
        user_speaks_first=d.get("user_speaks_first", True),
        kickoff=d.get("kickoff"),
        report_group=_report_group(doc, problems),
        source=SourceRef(doc.file, 1),
        extra={"spec": d},
        plugin=plugin,
        user_tools=user_tools,
        parent_dirs=parents,
        known_gold_errors=_known_gold_errors(doc),
    )
    return domain, doc


def _report_group(doc: YamlDoc, problems: list[Problem]) -> GroupRule | None:
    """The domain's ``report_group`` rule (None when it declares none or the rule is bad)."""
    if "report_group" not in doc.data:
        return None
    rule, found = parse_rule(doc.data["report_group"])
    problems.extend(problem_at(doc, ("report_group", key), message) for key, message in found)
    return rule


def _check_releases(ddoc: YamlDoc, root: Path) -> None:
    """Raise DataRootError (one line) when the data root holds none of the releases the domain
    reads, naming a folder nearby that does (``--data-root`` one folder too deep or too high)."""
    wanted = sorted(_releases(ddoc))
    if not wanted or any((root / r).is_dir() for r in wanted):
        return
    hint = ""
    nearby = [root.parent, *(p for p in sorted(root.iterdir()) if p.is_dir())] if root.is_dir() else []
    for candidate in nearby:
        if any((candidate / r).is_dir() for r in wanted):
            hint = f"; {candidate} holds them: use --data-root {candidate}"
            break
    raise DataRootError(
        f"data root {root} holds none of the releases {ddoc.data['name']} reads ({', '.join(wanted)}){hint}"
    )


def _releases(ddoc: YamlDoc) -> set[str]:
    """First path components of every data-root path the domain names (e.g. ``eva-0.1.3``)."""
    d, paths = ddoc.data, []
    paths.append(d["dataset"]["path"])
    paths.extend(
        d[k]["file"]
        for k in ("initial_db", "expected_db", "current_date", "user_db")
        if "file" in d.get(k, {})
    )
    paths.append(d.get("gold_trace", {}).get("dataset", {}).get("path", ""))
    paths.append(d["policy"].get("file", ""))
    paths.extend(d["policy"].get("files", []))
    for spec in (d.get("template_variables") or {}).values():  # a source, or one source per variable
        sources = [spec] if "file" in spec else [s for s in spec.values() if isinstance(s, dict)]
        paths.extend(str(s["file"]) for s in sources if "file" in s)
    return {p.split("/")[0] for p in paths if p}


def load_domain(
    spec_dir: str | Path,
    data_root: str | Path | None = None,
    *,
    plugins: Plugins,
    gold: bool = True,
    language: str | None = None,
) -> LoadedDomain:
    """Load, validate and cross-check ``spec_dir`` against the data root; render every prompt.

    The one loader of a spec folder. ``data_root``: ``--data-root`` value, else
    ``$EVAL_DATA_ROOT``, else ``./data``; ``plugins``: the domain plugins by name (the command
    layer, scripts and tests pass ``engine.domains.registry.plugins()``; the engine below the
    command layer gets them from its options).
    Raises DataRootError for a missing data root, SpecError carrying every problem otherwise
    (schema errors, YAML syntax errors, unknown eva_id, missing fixtures, bad success_signals,
    unregistered handlers, duplicate scenario names, template errors). Warns once on stderr when
    the data root differs from the pinned upstream sums. ``gold`` False leaves the expected DBs
    that come from a gold replay (``expected_db: {from: gold_replay}``) None instead of replaying
    every gold trace: for a verb that lists scenarios and scores none (``evalctl list``; on 2,000
    tau2 scenarios the replays were half its time). ``language``: run the domain in that language
    (``engine.spec.languages.in_language``; None: the spec's own; UsageError for one it lacks).
    """
    domain, ddoc, data, docs, problems = load_parts(spec_dir, data_root, plugins=plugins, language=language)
    ctx = BuildContext(domain, ddoc, data, problems, gold=gold)
    scenarios = [sc for doc in docs if (sc := build_scenario(ctx, doc)) is not None]
    template_problems, rendered = check_templates(scenarios)
    problems.extend(template_problems)
    if problems:
        raise SpecError(problems)
    loaded = LoadedDomain(domain, tuple(scenarios), rendered, data)
    if problems := loaded.shared_db_problems():  # the gold replays of expected DBs ran on it
        raise SpecError(problems)
    return loaded


def load_parts(
    spec_dir: str | Path,
    data_root: str | Path | None = None,
    *,
    plugins: Plugins,
    language: str | None = None,
    lean: bool = False,
) -> tuple[Domain, YamlDoc, DataFiles, list[YamlDoc], list[Problem]]:
    """What every scenario of ``spec_dir`` is built from, before any is built: ``(domain, the
    domain doc, the data files, the scenario docs that passed their schema, the problems found so
    far)`` (:func:`load_domain`, and the run's scenario index, ``engine.spec.index``, which builds
    them one at a time). ``lean``: a :class:`DataFiles` that keeps nothing per scenario. Raises
    DataRootError / UsageError as :func:`load_domain`, SpecError when the domain itself fails."""
    root = resolve_data_root(data_root)
    spec_path = Path(spec_dir).resolve()
    if not spec_path.is_dir():
        raise UsageError(f"spec directory {spec_dir} does not exist")
    data = DataFiles(root, lean=lean)
    problems: list[Problem] = []
    built = _build_domain(spec_path, root, data, plugins, problems, language)
    docs = _scenario_docs(spec_path, problems)
    if built is None:
        raise SpecError(problems)
    domain, ddoc = built
    if "scenarios" in ddoc.data:
        docs = generated_docs(ddoc, data, docs, problems, domain.plugin)
    if not docs and not problems:
        problems.append(
            Problem(display_path(spec_path / SCENARIO_DIR), 0, "$", "no scenario files (*.yaml) found")
        )
    for release in sorted(_releases(ddoc)):
        warn_if_modified(root, release, lambda line: print(line, file=sys.stderr))
    return domain, ddoc, data, docs, problems


def _scenario_docs(spec_path: Path, problems: list[Problem]) -> list[YamlDoc]:
    """The scenario files' docs that passed their schema, sorted by file name; problems collected
    (misplaced files, duplicate names, bad signals)."""
    docs: list[YamlDoc] = []
    first: dict[str, YamlDoc] = {}
    scenario_dir = spec_path / SCENARIO_DIR
    for pattern in ("*.yml", "*/**/*.yaml", "*/**/*.yml"):  # would be skipped without a word
        for path in sorted(scenario_dir.glob(pattern)):
            hint = "not loaded: scenario files are scenarios/*.yaml (rename or move it)"
            problems.append(Problem(display_path(path), 0, "$", hint))
    for path in sorted(scenario_dir.glob("*.yaml")):
        if (outside := outside_problem(spec_path, path)) is not None:
            problems.append(Problem(display_path(path), 0, "$", f"not loaded: the scenario file {outside}"))
            continue
        doc, ok = _load(path, "scenario", problems)
        if doc is None or not isinstance(doc.data, dict):
            continue
        name = doc.data.get("name")
        if isinstance(name, str) and name in first:
            where = f"{first[name].file}:{first[name].line(('name',))}"
            problems.append(
                problem_at(doc, ("name",), f"duplicate scenario name {name!r}: also in {where}", name)
            )
            continue
        if isinstance(name, str):
            first[name] = doc
        problems.extend(check_signals(doc, ("success_signals",), doc.data.get("success_signals"), name))
        if ok:
            docs.append(doc)
    return docs
