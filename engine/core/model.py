"""Frozen, typed records built once at the edge (the spec loader) and shared by every stage.

Plain dicts appear only at boundaries: DB contents, JSON Schemas, dataset records and wire messages.
Treat every Mapping held here as read-only; a session works on ``Scenario.fresh_db()``.
"""

from __future__ import annotations

import copy
import sysconfig
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from engine.core.caller import CallerStyle
from engine.core.grouping import GroupRule
from engine.core.tools.writeset import json_copy, session_view

if TYPE_CHECKING:
    from engine.core.gold import GoldTrace
    from engine.core.tools.arguments import FieldRule
    from engine.core.tools.context import CallContext

from engine.core.records.metrics import SIGNALS as SIGNALS  # the six signal names, defined there

REPO_ROOT = Path(__file__).resolve().parents[2]


def _shipped(name: str) -> Path:
    """The ``schemas/`` or ``templates/`` folder: the checkout's (a clone, an editable install), else
    the one a wheel installs under ``<prefix>/share/evalctl/`` (pyproject's data-files)."""
    checkout = REPO_ROOT / name
    if checkout.is_dir():
        return checkout
    return Path(sysconfig.get_path("data")) / "share" / "evalctl" / name


SCHEMA_DIR = _shipped("schemas")
TEMPLATE_DIR = _shipped("templates")

ToolKind = Literal["read", "write", "system", "harness"]
StopReason = Literal[
    "exit",
    "transfer",
    "user_hangup",
    "user_stop",
    "user_transfer",
    "user_out_of_scope",
    "timeout",
    "no_progress",
    "agent_error",
    "agent_disconnected",
    "error",
]
CLEAN_STOP_REASONS: frozenset[str] = frozenset({"exit", "transfer"})
#: The user's reason for ending the call (``turn.response.end_reason``) -> the session's stop reason
#: when the agent does not end the call in its closing turn; without a reason it is ``user_hangup``.
USER_END_REASONS: dict[str, StopReason] = {
    "stop": "user_stop",
    "transfer": "user_transfer",
    "out_of_scope": "user_out_of_scope",
}


#: Field metadata of record fields templates do not see (DBs, the raw dataset record, gold
#: traces, plugin code): they are large, and a prompt reads record data through the user profile's
#: ``extra`` pointers or the domain's ``template_variables`` instead.
_HIDDEN = {"template": False}


@dataclass(frozen=True)
class SourceRef:
    """Where a record was declared: spec file path and 1-based line (0 when unknown)."""

    file: str
    line: int = 0


@dataclass(frozen=True)
class HashRules:
    """Canonical-hash rules, declared in the domain spec.

    ``excluded_keys``: top-level DB keys left out of the hash (eva: ``session``).
    ``unordered_lists``: key names (at any depth) whose list values are compared order-free.
    ``style``: ``canonical`` (the engine's hash, by the two rules above) or a style a domain plugin
    registers; ``func`` is that plugin's ``(db) -> SHA-256 hex`` (None for canonical).
    """

    excluded_keys: tuple[str, ...] = ("session",)
    unordered_lists: tuple[str, ...] = ()
    style: str = "canonical"
    func: Any = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class ToolSpec:
    """One row of the tool table (the action-type spec).

    ``name`` is what the model sees; ``handler`` is a key of the domain plugin's handlers (or a
    harness handler); ``run`` is that handler, resolved at load time; ``parameters`` is a JSON
    Schema object for the arguments; ``action_type`` is set for ``write`` tools (and ``system``
    tools that record an action); ``options`` holds declarative behaviour knobs (e.g.
    ``carry_over_fields`` for rebook); ``writes`` the paths the tool may change
    (:mod:`engine.core.tools.writeset`; ``()`` a pure read, None undeclared: the whole DB is copied per
    call); ``ends_call`` the stop reason a successful call ends the session with (``exit`` /
    ``transfer``), else None; ``field_rules`` the plugin's argument rules for the handler.
    """

    name: str
    kind: ToolKind
    handler: str
    description: str
    parameters: Mapping[str, Any]
    action_type: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    source: SourceRef = SourceRef("")
    writes: tuple[str, ...] | None = None
    ends_call: Literal["exit", "transfer"] | None = None
    field_rules: Mapping[str, FieldRule] = field(default_factory=dict, compare=False, repr=False)
    run: Any = field(default=None, compare=False, repr=False)
    #: The plugin's own argument check (:data:`ArgumentCheck`) replacing the engine's schema check
    #: and lax conversion for this tool; None: the engine's (docs/argument_rules.md).
    check: ArgumentCheck | None = field(default=None, compare=False, repr=False)

    def openai_schema(self) -> dict[str, Any]:
        """The OpenAI chat-completions ``tools`` entry: ``{type: function, function: {name,
        description, parameters}}``, built once per tool (a deep copy of ``parameters``) and
        shared by every scenario and session of the domain: **read-only** (it is sent to the sides
        as frame text, so a side never holds this object; copy it before changing it)."""
        built = self.__dict__.get("_openai_schema")
        if built is None:
            built = {
                "type": "function",
                "function": {
                    "name": self.name,
                    "description": self.description,
                    "parameters": copy.deepcopy(dict(self.parameters)),
                },
            }
            object.__setattr__(self, "_openai_schema", built)  # a frozen dataclass's cache
        return built


@dataclass(frozen=True)
class ToolTable:
    """The tools of a domain, in declaration order."""

    tools: tuple[ToolSpec, ...]
    source: SourceRef = SourceRef("")

    def get(self, name: str) -> ToolSpec | None:
        for tool in self.tools:
            if tool.name == name:
                return tool
        return None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tools)

    def openai_schemas(self) -> list[dict[str, Any]]:
        """The ``tools`` list of the table (a new list of the tools' shared, read-only entries:
        :meth:`ToolSpec.openai_schema`)."""
        return [t.openai_schema() for t in self.tools]

    def subset(self, names: tuple[str, ...]) -> ToolTable:
        """The table with only ``names`` (table order kept); unknown names are ignored."""
        return ToolTable(tuple(t for t in self.tools if t.name in names), self.source)


@dataclass(frozen=True)
class KnownGoldError:
    """A gold tool call declared to fail (a known data issue upstream, ``known_gold_errors`` in the
    domain spec): the ``call``-th (1-based) tool call of the gold trace of record ``record_id``, a
    call of ``tool``; ``note`` says why. ``source`` is the declaring line."""

    record_id: str
    call: int
    tool: str
    note: str = ""
    source: SourceRef = SourceRef("")


@dataclass(frozen=True)
class Domain:
    """A domain spec after loading: where data comes from, prompts, scoring defaults, hash rules.

    ``max_duration`` is in seconds of wall time; ``policy_role`` / ``policy_instructions`` are read
    verbatim from the data root; ``templates`` maps ``agent`` / ``user`` / ``judge`` to template
    file names under ``templates/``; ``plugin`` is the domain's handler package record;
    ``user_tools`` the user side's tool table (None: the user side has only ``end_call``).
    """

    name: str
    description: str
    spec_dir: Path
    data_root: Path
    policy_role: str
    policy_instructions: str
    templates: Mapping[str, str]
    success_signals: tuple[str, ...]
    max_duration: float
    hash_rules: HashRules
    tools: ToolTable
    language: str = "en"
    user_speaks_first: bool = True
    source: SourceRef = SourceRef("")
    extra: Mapping[str, Any] = field(default_factory=dict)
    plugin: DomainPlugin | None = field(default=None, compare=False, repr=False, metadata=_HIDDEN)
    user_tools: ToolTable | None = None
    #: Spec folders this one extends (``extends:``), searched after ``spec_dir`` for tool tables
    #: and templates.
    parent_dirs: tuple[Path, ...] = ()
    #: What the agent is handed as its first turn's input when it opens the call (``kickoff:``),
    #: for scenarios that set none; None: nothing.
    kickoff: str | None = None
    #: How reports group its scenarios (``report_group:``; None: by domain).
    report_group: GroupRule | None = None
    #: Gold calls known to fail (``known_gold_errors``): validate reports them as warnings.
    known_gold_errors: tuple[KnownGoldError, ...] = ()


@dataclass(frozen=True)
class UserProfile:
    """What the user simulator is told: persona, goal, decision tree and first words.

    All prose comes from the dataset record (or an explicit override in the scenario spec).
    """

    name: str
    persona: str
    goal: str
    starting_utterance: str
    decision_tree: Mapping[str, Any] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Scenario:
    """One runnable scenario: the spec plus everything the domain derives for it.

    ``record_id`` is the dataset record's id (eva: the eva id such as ``1.1.2``);
    ``initial_db`` / ``expected_db`` are the fixture DBs (never mutate; use ``fresh_db()``; many
    scenarios may share one initial DB); ``user_initial_db`` is the user side's DB (None when the
    domain has none); ``gold_trace`` is the parsed gold conversation or None; ``current_date`` is
    ``YYYY-MM-DD``; ``max_duration`` is seconds of wall time; ``tool_names`` limits the agent's
    tools to a subset (None: all of the domain's); ``user_speaks_first`` says who opens the call,
    ``kickoff`` what the agent is told when it opens (None: nothing).
    """

    name: str
    record_id: str
    description: str
    domain: Domain
    initial_db: Mapping[str, Any] = field(metadata=_HIDDEN, repr=False)
    expected_db: Mapping[str, Any] | None = field(metadata=_HIDDEN, repr=False)
    current_date: str
    user: UserProfile
    success_signals: tuple[str, ...]
    max_duration: float
    record: Mapping[str, Any] = field(default_factory=dict, metadata=_HIDDEN, repr=False)
    gold_trace: GoldTrace | None = field(default=None, metadata=_HIDDEN, repr=False)
    reference_answer: Any = None
    db_state_assertions: tuple[Mapping[str, Any], ...] = ()
    nl_assertions: tuple[str, ...] = ()
    match_options: Mapping[str, bool] = field(default_factory=dict)
    agent_notes: tuple[str, ...] = ()
    source: SourceRef = SourceRef("")
    user_initial_db: Mapping[str, Any] | None = field(default=None, metadata=_HIDDEN, repr=False)
    tool_names: tuple[str, ...] | None = None
    user_speaks_first: bool = True
    kickoff: str | None = None
    #: The scenario spec overrides the dataset's caller (its ``user:`` key): the gold lines a
    #: replay caller plays are then not this caller's words.
    user_override: bool = False
    #: The key the scenario spec wrote ``record_id`` under: ``eva_id`` (the eva specs' name, an
    #: accepted alias) or ``id``. Records always write ``record_id``; ``evalctl list`` keeps the spec's word.
    spec_id_key: str = "id"
    #: What the LLM judge compares the agent's answer with (None: ``reference_answer``).
    judge_reference: Any = None
    #: Extra variables of each side's prompt template (side -> name -> value), from the domain
    #: spec's ``template_variables``.
    template_variables: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: The scenario's ``caller:`` block (voice runs only: its voice, perturbation, barge-ins and
    #: backchannels, ``engine.core.caller``); None: the run's caller options alone.
    caller: CallerStyle | None = field(default=None, metadata=_HIDDEN)

    @property
    def group(self) -> str | None:
        """The scenario's group under its domain's ``report_group`` (None when the domain
        declares none; see :mod:`engine.core.grouping`)."""
        rule = self.domain.report_group
        return None if rule is None else rule.group_of(self.record_id, self.name)

    @property
    def tools(self) -> ToolTable:
        """The agent's tools: the domain's table, or the scenario's subset of it (made once per
        scenario and kept: the gold replay's cache, ``engine.spec.gold_replay.gold_replay``, knows
        a table by identity, so a new subset per call replayed the gold again for every session)."""
        if self.tool_names is None:
            return self.domain.tools
        subset = self.__dict__.get("_tools")
        if subset is None:
            subset = self.domain.tools.subset(self.tool_names)
            object.__setattr__(self, "_tools", subset)  # a frozen dataclass's cache
        return subset

    @property
    def user_tools(self) -> ToolTable | None:
        return self.domain.user_tools

    def fresh_db(self) -> dict[str, Any]:
        """A deep copy of the initial DB, free to mutate in any way (tests, scripts)."""
        return json_copy(self.initial_db)

    def session_db(self) -> dict[str, Any]:
        """A session's own view of the initial DB (:func:`engine.core.tools.writeset.session_view`):
        records are shared with the initial DB until a tool's declared write copies them, so only
        a :class:`engine.core.toolruntime.ToolRuntime` may change it."""
        return session_view(self.initial_db)

    def session_dbs(self) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """The agent-side and user-side DBs a session (or a gold replay) starts from: copy-on-write
        views, or, when the domain plugin has a sync or set-up step (which may write anywhere),
        deep copies with the set-up step applied."""
        plugin = self.domain.plugin
        if plugin is None or (plugin.sync is None and plugin.initialise is None):
            return self.session_db(), self.session_user_db()
        db = json_copy(self.initial_db)
        user_db = None if self.user_initial_db is None else json_copy(self.user_initial_db)
        if plugin.initialise is not None:
            plugin.initialise(db, user_db, self.record)
        return db, user_db

    def session_user_db(self) -> dict[str, Any] | None:
        """A session's own view of the user-side DB, or None when the domain has none."""
        return None if self.user_initial_db is None else session_view(self.user_initial_db)


@dataclass
class SessionResult:
    """What one conversation produced, handed from the runtime to scoring and artifacts.

    ``stop_reason`` is a :data:`StopReason` (exit / transfer / user_hangup / user_stop /
    user_transfer / user_out_of_scope / timeout / no_progress / agent_error / agent_disconnected /
    error); ``error`` holds the
    message when a side failed. ``final_db`` is the engine-owned DB after the last tool call (None
    if the session never started). ``actions`` are the write-tool action records in call order;
    ``tool_calls`` every call ``{name, arguments, result, turn, side}``; ``transcript`` the events
    ``{role: user|agent|tool|system, type, content, t}`` with ``t`` in seconds since the start.
    ``usage`` maps role (agent, user, judge) to ``{model, prompt_tokens, completion_tokens, calls}``.
    ``duration_s`` is wall time in seconds; ``agent_turns`` counts spoken agent turns.
    ``error_source`` is set when the session's error is infrastructure's, not the agent's: an
    ``engine.core.records.common.ErrorSource`` value (``agent_model``, ``user_simulator``, ``transport``,
    ``engine``); the result then gets the verdict ``error``. ``ended_at`` is ISO 8601 UTC with
    milliseconds.
    """

    scenario_name: str
    trial: int
    stop_reason: StopReason
    error: str | None = None
    final_db: dict[str, Any] | None = field(default=None, repr=False)
    actions: list[dict[str, Any]] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    transcript: list[dict[str, Any]] = field(default_factory=list)
    agent_turns: int = 0
    user_turns: int = 0
    usage: dict[str, dict[str, Any]] = field(default_factory=dict)
    started_at: str = ""
    duration_s: float = 0.0
    engine_time_s: float = 0.0
    agent_backend: str = "replay"
    user_backend: str = "replay"
    #: The user-side DB for dual-side domains (None when the domain has none, as in eva_airline).
    user_db: dict[str, Any] | None = field(default=None, repr=False)
    error_source: str | None = None
    ended_at: str = ""

    @property
    def clean_exit(self) -> bool:
        return self.stop_reason in CLEAN_STOP_REASONS


# The domain plugin contract (re-exported by engine.core.plugin, where domain packages import it from).
# It lives here because the records refer to each other: a Domain holds its plugin, and a plugin's
# diagnostics read a Scenario and a SessionResult.


class Handler(Protocol):
    """A tool handler: ``(db, args, ctx) -> result``.

    ``db`` is the DB of the side that called (mutate in place, only under the tool's declared
    ``writes``), ``args`` the validated arguments, ``ctx`` a :class:`CallContext`. Returns
    ``{status: "success", ...}`` or ``{status: "error", error_type, message}``; an error result or
    an exception rolls the DB back.
    """

    def __call__(self, db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]: ...


#: ``(db, **arguments) -> value``: a DB-state predicate; the DB is the assertion's side's DB.
Predicate = Callable[..., Any]

#: ``(raw trace data, dataset record, language) -> GoldTrace``: reads one gold source format.
#: Raises KeyError / TypeError / ValueError for data that is not in that format.
GoldAdapter = Callable[[Any, Mapping[str, Any], str], "GoldTrace"]

#: ``(agent_db, user_db) -> None``: ties the two DBs of a dual-side domain after each tool call.
SyncStep = Callable[[dict[str, Any], dict[str, Any]], None]

#: ``(agent_db, user_db, record) -> None``: a scenario's set-up actions on both DBs (the user DB may be
#: None), run on the session's own deep copies before the first turn and before a gold replay.
InitStep = Callable[[dict[str, Any], "dict[str, Any] | None", Mapping[str, Any]], None]

#: ``(db) -> str``: a domain-specific canonical hash (SHA-256 hex), selected by ``hash_rules.style``.
HashFunc = Callable[[Mapping[str, Any]], str]

#: ``(tool result) -> str``: the text a model is shown as a tool's output (the tool message content),
#: for any result dict, the engine's own error results (``tool_not_found``, ...) included.
ResultText = Callable[[Mapping[str, Any]], str]


@dataclass(frozen=True)
class DiagnosticInputs:
    """What a domain diagnostic may look at: the scenario, the session and the DB the gold replay
    ends with (None when the scenario has no gold trace)."""

    scenario: Scenario
    result: SessionResult
    gold_db: Mapping[str, Any] | None = None


#: ``(inputs) -> value``: a non-gating diagnostic written to metrics.json under its name (bool,
#: number, string or None = not applicable). A scenario may gate on a bool one by listing it in
#: ``success_signals``. A number is a count of findings (0 = clean): the summary reports how many
#: results are clean and the findings' sum and maximum (a count is not a pass rate: never gate on it).
Diagnostic = Callable[[DiagnosticInputs], Any]


#: ``(record) -> value``: computes one per-scenario value from the scenario's dataset record, for a
#: domain spec's ``{derive: <name>}`` source (initial DB, expected DB, today's date, a
#: ``record_fields`` entry such as the offered tools or the success signals, the template
#: variables, a generated scenario's name). The value must be plain JSON-shaped data; the loader
#: checks it like the spec key it stands for. Raises KeyError / TypeError / ValueError for a record
#: it cannot read (reported as a spec problem naming the scenario).
DeriveFunc = Callable[[Mapping[str, Any]], Any]


@dataclass(frozen=True)
class DomainPlugin:
    """Everything domain-specific the engine runs: handlers and the rules around them.

    ``handlers``: handler name -> function, for the agent's and the user's tool tables alike;
    ``field_rules``: handler name -> per-argument rules (error types and extra constraints);
    ``predicates``: ``func_name`` of ``db_state_assertions`` -> predicate;
    ``diagnostics``: name -> diagnostic, computed for every session of the domain;
    ``count_diagnostics``: the names among them whose value counts findings (0 = clean): never a
    gate (a spec's ``gate_diagnostics`` naming one is a validation error);
    ``gold_adapters``: gold ``format`` name (as the domain spec's ``gold_trace.format``) -> adapter;
    ``sync``: the step run after every successful tool call of a dual-side session (None: no sync);
    ``initialise``: the scenario's set-up step before the first turn (None: none). A domain with a
    sync or set-up step gets deep copies of its DBs per session (both steps may write anywhere);
    ``hash_styles``: ``hash_rules.style`` name -> hash function (the engine's own is ``canonical``);
    ``derive``: name -> function computing a per-scenario value from the dataset record, used by the
    domain spec's ``{derive: <name>}`` sources (docs/authoring.md, "Values computed from the record");
    ``result_text``: what a model is shown as a tool's output (None: the result dict as JSON). The
    engine sends it in ``tool.result.text`` and the built-in sides use it as the tool message;
    ``argument_check``: the domain's own argument rules for its handlers (:data:`ArgumentCheck`;
    None: the engine's schema check with lax conversion).
    ``localise``: ``(value, record, language) -> value``, the domain's per-language placeholders
    (names, phone) resolved from the dataset ``record`` in a value read from the data (the record
    itself, an initial or expected DB); returns ``value`` itself when there is nothing to resolve
    (None: values are used as read).
    """

    name: str
    handlers: Mapping[str, Handler]
    field_rules: Mapping[str, Mapping[str, FieldRule]] = field(default_factory=dict)
    predicates: Mapping[str, Predicate] = field(default_factory=dict)
    diagnostics: Mapping[str, Diagnostic] = field(default_factory=dict)
    count_diagnostics: frozenset[str] = frozenset()
    gold_adapters: Mapping[str, GoldAdapter] = field(default_factory=dict)
    sync: SyncStep | None = None
    initialise: InitStep | None = None
    hash_styles: Mapping[str, HashFunc] = field(default_factory=dict)
    derive: Mapping[str, DeriveFunc] = field(default_factory=dict)
    result_text: ResultText | None = None
    description: str = ""
    argument_check: ArgumentCheck | None = None
    localise: Localise | None = None

    def __post_init__(self) -> None:
        unknown = sorted(self.count_diagnostics - set(self.diagnostics))
        if unknown:
            raise ValueError(f"plugin {self.name}: count diagnostics {unknown} are not diagnostics")


#: ``(tool spec, parsed arguments) -> (arguments for the handler, None) | (None, error result)``:
#: a domain's own argument rules (tau2's are Python's call rules, no conversion), used instead of
#: the engine's JSON Schema check for the plugin's handlers. Must not raise.
ArgumentCheck = Callable[[ToolSpec, Mapping[str, Any]], tuple[dict[str, Any] | None, dict[str, Any] | None]]

#: ``(value, record, language) -> value``: see ``DomainPlugin.localise``. Must not modify ``value``.
Localise = Callable[[Any, Mapping[str, Any], str], Any]

#: Plugins by name, as the command layer hands them to the loader.
Plugins = Mapping[str, DomainPlugin]
