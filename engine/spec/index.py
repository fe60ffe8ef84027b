"""A run's scenarios indexed cheaply, prepared when their first session starts and released after
their last (issue #31: memory flat in the number of distinct scenarios).

:func:`index_domain` makes one streaming validation pass over a spec folder: each scenario is
built, checked (schemas, cross-checks, both prompts rendered, its gold replayed) and dropped, so a
bad spec is refused as :func:`engine.spec.loader.load_domain` refuses it (every problem, with file,
line and JSON path) before any session starts, while the pass keeps only the index: per scenario
its spec doc, a *shell* (the :class:`~engine.core.model.Scenario` without its record, DBs, gold
trace, caller profile or template variables: enough to select, shard, plan and name it) and what
the job plan needs (the gold conversation's length, whether it holds caller words, why its gold
fails). The data files are read lean (``engine.core.datasources``): a JSON Lines dataset by byte
range, a record's own files never kept.

:meth:`ScenarioIndex.prepare` builds a scenario again from its doc when its first session starts
(record, DBs, gold trace; prompts render on first use and go with it); :meth:`release` lets it
go. :attr:`ScenarioIndex.live` is the name -> prepared scenario mapping the built-in sides read.
Using a shell's record, DBs or template variables raises :class:`Unprepared`.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.core.datasources import DataFiles
from engine.core.model import Domain, Scenario, UserProfile
from engine.core.plugin import Plugins
from engine.core.render import TemplateCheck
from engine.core.validation import did_you_mean
from engine.scoring.fidelity import replay_note
from engine.spec.gold_check import gold_mismatches
from engine.spec.gold_replay import gold_problems
from engine.spec.loader import LoadedDomain, load_parts
from engine.spec.scenario_build import build_scenario
from engine.spec.scenario_fields import BuildContext
from engine.util.errors import Problem, SpecError, UsageError
from engine.util.yamlload import YamlDoc


class Unprepared(Mapping[str, Any]):
    """What a shell holds in place of its record and DBs: any use raises RuntimeError (an engine
    bug: the scenario should have been prepared)."""

    def __init__(self, name: str):
        self.name = name

    def _fail(self) -> RuntimeError:
        return RuntimeError(f"scenario {self.name} is not prepared (engine.spec.index)")

    def __getitem__(self, key: str) -> Any:
        raise self._fail()

    def __iter__(self) -> Iterator[str]:
        raise self._fail()

    def __len__(self) -> int:
        raise self._fail()

    def __reduce__(self) -> tuple[Any, ...]:
        return (Unprepared, (self.name,))


@dataclass(frozen=True)
class Entry:
    """One indexed scenario: its spec ``doc``, its ``shell``, the number of steps of its gold
    conversation (0: none), whether that gold holds caller lines (``mute``: it does not, or there
    is no gold), and the first reason its gold replay fails (None: it passes or there is none)."""

    doc: YamlDoc
    shell: Scenario
    gold_steps: int
    mute: bool
    gold_problem: str | None


def _shell(scenario: Scenario) -> Scenario:
    """``scenario`` without what only its sessions need (see the module docstring)."""
    missing = Unprepared(scenario.name)
    return dataclasses.replace(
        scenario,
        initial_db=missing,
        expected_db=missing,
        record=missing,
        gold_trace=None,
        user_initial_db=missing if scenario.user_initial_db is not None else None,
        user=UserProfile(scenario.user.name, "", "", ""),
        template_variables=missing,
    )


class Live(Mapping[str, Scenario]):
    """The prepared scenarios of an index by name (what the built-in sides look up); a name that
    is indexed but not prepared is prepared for that lookup only (and not kept)."""

    def __init__(self, index: ScenarioIndex):
        self.index = index

    def __getitem__(self, name: str) -> Scenario:
        held = self.index.held(name)
        if held is not None:
            return held
        if name not in self.index.entries:
            raise KeyError(name)
        return self.index.build(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self.index.entries)

    def __len__(self) -> int:
        return len(self.index.entries)


class ScenarioIndex:
    """A domain's scenarios, indexed (module docstring). Quacks like a
    :class:`engine.spec.loader.LoadedDomain` for selection and planning: ``domain``, ``data``,
    ``scenarios`` (the shells, in load order), ``names``, :meth:`scenario`, ``prompts_rendered``."""

    def __init__(
        self, domain: Domain, ddoc: YamlDoc, data: DataFiles, entries: list[Entry], rendered: int = 0
    ):
        self.domain, self.ddoc, self.data = domain, ddoc, data
        self.entries = {e.shell.name: e for e in entries}
        self.scenarios = tuple(e.shell for e in entries)
        self.prompts_rendered = rendered
        self.live = Live(self)
        self._held: dict[str, tuple[Scenario, int]] = {}
        self._lock = threading.Lock()
        self.whole = False

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.entries)

    def scenario(self, name: str) -> Scenario:
        """The shell called ``name`` (or whose record id it is); UsageError with a did-you-mean."""
        if name in self.entries:
            return self.entries[name].shell
        for s in self.scenarios:
            if s.record_id == name:
                return s
        raise UsageError(
            f"no scenario named {name!r} in {self.domain.spec_dir}{did_you_mean(name, self.names)}"
        )

    def gold_mismatches(self, names: list[str]) -> list[tuple[str, str]]:
        """``(name, why)`` per named scenario whose gold replay fails, in order (as
        ``engine.spec.gold_check.gold_mismatches``): found by the index pass, or, in an index of
        whole scenarios, replayed now (the replay is kept with the scenario for its sessions)."""
        if self.whole:
            return gold_mismatches([self.entries[n].shell for n in names])
        return [(n, p) for n in names if (p := self.entries[n].gold_problem) is not None]

    def longest_first(self, jobs: list[Any]) -> list[Any]:
        """``engine.results.resume.longest_first`` for jobs of shells: by the indexed gold length."""
        return sorted(jobs, key=lambda j: -self.entries[j.scenario.name].gold_steps)

    def caller_note(self, user: str, names: list[str]) -> str | None:
        """``engine.scoring.fidelity.caller_note`` of the named scenarios, from the index."""
        if user.strip() != "replay" or not names:
            return None
        mute = sum(1 for n in names if self.entries[n].mute)
        return replay_note(len(names), mute, sum(1 for n in names if self.entries[n].shell.user_override))

    def build(self, name: str) -> Scenario:
        """Scenario ``name`` built anew from its doc (not kept; an index of whole scenarios,
        :func:`whole_index`, gives its own). Raises SpecError when it no longer builds (its files
        changed since the index pass)."""
        if self.whole:
            return self.entries[name].shell
        problems: list[Problem] = []
        ctx = BuildContext(self.domain, self.ddoc, self.data, problems)
        scenario = build_scenario(ctx, self.entries[name].doc)
        self.data.unwatch(self.data.take_record_files())  # its own DBs: checked by the index pass
        if scenario is None or problems:
            doc = self.entries[name].doc
            raise SpecError(problems or [Problem(doc.file, 0, "$", "no longer builds", name)])
        return scenario

    def prepare(self, name: str) -> Scenario:
        """Scenario ``name`` with everything its sessions need, built on the first call and kept
        until as many :meth:`release` calls as ``prepare`` calls; raises as :meth:`build`."""
        with self._lock:
            held = self._held.get(name)
            if held is not None:
                self._held[name] = (held[0], held[1] + 1)
                return held[0]
        scenario = self.build(name)
        with self._lock:
            held = self._held.get(name)  # another thread prepared it meanwhile: share that one
            if held is not None:
                scenario = held[0]
            self._held[name] = (scenario, (held[1] if held else 0) + 1)
        return scenario

    def release(self, name: str) -> None:
        """One :meth:`prepare` of ``name`` is done; the last lets the scenario go."""
        with self._lock:
            held = self._held.get(name)
            if held is None:
                return
            if held[1] <= 1:
                del self._held[name]
            else:
                self._held[name] = (held[0], held[1] - 1)

    def held(self, name: str) -> Scenario | None:
        """The prepared scenario ``name``, or None when it is not held."""
        with self._lock:
            held = self._held.get(name)
        return held[0] if held is not None else None

    def __getstate__(self) -> dict[str, Any]:  # a spawned worker gets none; never pickled whole
        raise TypeError("a ScenarioIndex is not sent to other processes; index the spec there")


#: A spec folder of at most this many scenarios is indexed whole: every scenario is kept as
#: ``load_domain`` keeps it (and a run replays each selected gold once, for its check and its
#: sessions). Above it, only shells are kept, and each gold is replayed twice: by the index pass
#: (to refuse a failing one before any session) and when the scenario is prepared again.
KEEP_WHOLE = 128


def index_domain(
    spec_dir: str | Path,
    data_root: str | Path | None = None,
    *,
    plugins: Plugins,
    language: str | None = None,
    keep_whole: int | None = None,
) -> ScenarioIndex:
    """Index ``spec_dir`` (module docstring): the checks of
    :func:`engine.spec.loader.load_domain`, made one scenario at a time, keeping the index only;
    a folder of at most ``keep_whole`` scenarios (default :data:`KEEP_WHOLE`) keeps them whole.
    Raises what ``load_domain`` raises (SpecError carrying every problem)."""
    domain, ddoc, data, docs, problems = load_parts(
        spec_dir, data_root, plugins=plugins, language=language, lean=True
    )
    whole = len(docs) <= (KEEP_WHOLE if keep_whole is None else keep_whole)
    ctx = BuildContext(domain, ddoc, data, problems)
    data.take_record_files()
    entries: list[Entry] = []
    templates = TemplateCheck()
    for doc in docs:
        scenario = build_scenario(ctx, doc)
        if scenario is None:
            continue
        before = templates.rendered
        templates.add(scenario)
        checked = not whole and templates.rendered == before + 2 and not problems
        gold = gold_problems(scenario) if checked else []
        own = data.take_record_files()
        problems.extend(_changed(data, domain, own))
        data.unwatch(own)
        trace = scenario.gold_trace
        mute = trace is None or not trace.lines("user")
        kept = scenario if whole else _shell(scenario)
        entries.append(Entry(doc, kept, len(trace or ()), mute, gold[0] if gold else None))
    problems.extend(templates.problems())
    if problems:
        raise SpecError(problems)
    if found := _changed(data, domain, None):  # the gold replays of expected DBs ran on the shared ones
        raise SpecError(found)
    index = ScenarioIndex(domain, ddoc, data, entries, templates.rendered)
    index.whole = whole
    return index


def _changed(data: DataFiles, domain: Domain, rels: set[str] | None) -> list[Problem]:
    """``LoadedDomain.shared_db_problems`` for the watched DBs of ``rels`` (None: all)."""
    return [
        Problem(
            domain.source.file,
            0,
            "$.tool_table",
            f"the shared DB {rel} changed while gold traces were replayed: a tool writes outside its "
            f"'writes' declaration (changed: {', '.join(paths) or 'top level'}); sessions would see "
            "each other's changes",
        )
        for rel, paths in data.changed(rels)
    ]


def whole_index(loaded: LoadedDomain) -> ScenarioIndex:
    """An index over the whole scenarios of ``loaded`` (``load_domain``'s result, or a test's
    altered copy): each entry's "shell" is the scenario itself and preparing it gives it back."""
    entries = []
    for scenario in loaded.scenarios:
        trace = scenario.gold_trace
        mute = trace is None or not trace.lines("user")
        entries.append(Entry(YamlDoc("", {}, {}), scenario, len(trace or ()), mute, None))
    ddoc = YamlDoc(str(loaded.domain.source.file), {}, {})
    index = ScenarioIndex(loaded.domain, ddoc, loaded.data or DataFiles(loaded.domain.data_root), entries)
    index.whole = True
    return index
