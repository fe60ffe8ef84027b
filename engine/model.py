"""Frozen, typed records built once at the edge (the spec loader) and shared by every stage.

Plain dicts appear only at boundaries: DB contents, JSON Schemas, dataset records and wire messages.
Treat every Mapping held here as read-only; a session works on ``Scenario.fresh_db()``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from engine.records.metrics import SIGNALS as SIGNALS  # the six signal names, defined there

REPO_ROOT = Path(__file__).resolve().parent.parent
SCHEMA_DIR = REPO_ROOT / "schemas"
TEMPLATE_DIR = REPO_ROOT / "templates"

ToolKind = Literal["read", "write", "system", "harness"]
StopReason = Literal["exit", "transfer", "user_hangup", "timeout", "error"]
CLEAN_STOP_REASONS: frozenset[str] = frozenset({"exit", "transfer"})


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
    """

    excluded_keys: tuple[str, ...] = ("session",)
    unordered_lists: tuple[str, ...] = ()


@dataclass(frozen=True)
class ToolSpec:
    """One row of the tool table (the action-type spec).

    ``name`` is what the model sees; ``handler`` is a key of the handler registry
    (``engine.tools.registry.HANDLERS``); ``parameters`` is a JSON Schema object for the arguments;
    ``action_type`` is set for ``write`` tools (and ``system`` tools that record an action);
    ``options`` holds declarative behaviour knobs (e.g. ``carry_over_fields`` for rebook).
    """

    name: str
    kind: ToolKind
    handler: str
    description: str
    parameters: Mapping[str, Any]
    action_type: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    source: SourceRef = SourceRef("")

    def openai_schema(self) -> dict[str, Any]:
        """The OpenAI chat-completions ``tools`` entry: ``{type: function, function: {...}}``."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": copy.deepcopy(dict(self.parameters)),
            },
        }


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
        return [t.openai_schema() for t in self.tools]


@dataclass(frozen=True)
class Domain:
    """A domain spec after loading: where data comes from, prompts, scoring defaults, hash rules.

    ``max_duration`` is in seconds of wall time; ``policy_role`` / ``policy_instructions`` are read
    verbatim from the data root; ``templates`` maps ``agent`` / ``user`` / ``judge`` to template
    file names under ``templates/``.
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

    ``initial_db`` / ``expected_db`` are the fixture DBs (never mutate; use ``fresh_db()``);
    ``gold_trace`` is the resolved gold conversation (events ``{event_type, ...}`` as in eva 2.1.0,
    placeholders resolved for ``domain.language``) or None; ``current_date`` is ``YYYY-MM-DD``;
    ``max_duration`` is seconds of wall time.
    """

    name: str
    eva_id: str
    description: str
    domain: Domain
    initial_db: Mapping[str, Any]
    expected_db: Mapping[str, Any] | None
    current_date: str
    user: UserProfile
    success_signals: tuple[str, ...]
    max_duration: float
    record: Mapping[str, Any] = field(default_factory=dict)
    gold_trace: tuple[Mapping[str, Any], ...] | None = None
    reference_answer: Any = None
    db_state_assertions: tuple[Mapping[str, Any], ...] = ()
    nl_assertions: tuple[str, ...] = ()
    match_options: Mapping[str, bool] = field(default_factory=dict)
    agent_notes: tuple[str, ...] = ()
    source: SourceRef = SourceRef("")

    @property
    def tools(self) -> ToolTable:
        return self.domain.tools

    def fresh_db(self) -> dict[str, Any]:
        """A deep copy of the initial DB for one session to own and mutate."""
        return copy.deepcopy(dict(self.initial_db))


@dataclass
class SessionResult:
    """What one conversation produced, handed from the runtime to scoring and artifacts.

    ``stop_reason`` is one of exit / transfer / user_hangup / timeout / error; ``error`` holds the
    message when a side failed. ``final_db`` is the engine-owned DB after the last tool call (None
    if the session never started). ``actions`` are the write-tool action records in call order;
    ``tool_calls`` every call ``{name, arguments, result, turn}``; ``transcript`` the events
    ``{role: user|agent|tool|system, type, content, t}`` with ``t`` in seconds since the start.
    ``usage`` maps role (agent, user, judge) to ``{model, prompt_tokens, completion_tokens, calls}``.
    ``duration_s`` is wall time in seconds; ``agent_turns`` counts spoken agent turns.
    """

    scenario_name: str
    trial: int
    stop_reason: StopReason
    error: str | None = None
    final_db: dict[str, Any] | None = None
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
    user_db: dict[str, Any] | None = None

    @property
    def clean_exit(self) -> bool:
        return self.stop_reason in CLEAN_STOP_REASONS
