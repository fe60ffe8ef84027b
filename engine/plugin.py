"""What a domain package gives the engine: one frozen :class:`DomainPlugin` record.

A domain is a spec folder (``domain.yaml``, tool tables, scenarios), a data release in the data
root and a handler package holding one ``PLUGIN = DomainPlugin(...)``. The engine core never
imports a domain package: the command layer looks plugins up in ``engine.domains.registry`` (one
literal dict, plus third-party packages registered under the ``evalctl.domains`` entry-point group)
and hands them to the spec loader. A domain spec names its plugin with ``plugin:`` (default: the
domain's ``name``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from engine.tools.arguments import FieldRule

if TYPE_CHECKING:
    from engine.gold import GoldTrace
    from engine.model import Scenario, SessionResult
    from engine.tools.context import CallContext


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
#: number, string or None = not applicable). A scenario may gate on it by listing it in
#: ``success_signals``.
Diagnostic = Callable[[DiagnosticInputs], Any]


@dataclass(frozen=True)
class DomainPlugin:
    """Everything domain-specific the engine runs: handlers and the rules around them.

    ``handlers``: handler name -> function, for the agent's and the user's tool tables alike;
    ``field_rules``: handler name -> per-argument rules (error types and extra constraints);
    ``predicates``: ``func_name`` of ``db_state_assertions`` -> predicate;
    ``diagnostics``: name -> diagnostic, computed for every session of the domain;
    ``gold_adapters``: gold ``format`` name (as the domain spec's ``gold_trace.format``) -> adapter;
    ``sync``: the step run after every successful tool call of a dual-side session (None: no sync);
    ``initialise``: the scenario's set-up step before the first turn (None: none). A domain with a
    sync or set-up step gets deep copies of its DBs per session (both steps may write anywhere);
    ``hash_styles``: ``hash_rules.style`` name -> hash function (the engine's own is ``canonical``);
    ``result_text``: what a model is shown as a tool's output (None: the result dict as JSON text).
    The engine sends it in ``tool.result.text`` and the built-in sides use it as the tool message.
    """

    name: str
    handlers: Mapping[str, Handler]
    field_rules: Mapping[str, Mapping[str, FieldRule]] = field(default_factory=dict)
    predicates: Mapping[str, Predicate] = field(default_factory=dict)
    diagnostics: Mapping[str, Diagnostic] = field(default_factory=dict)
    gold_adapters: Mapping[str, GoldAdapter] = field(default_factory=dict)
    sync: SyncStep | None = None
    initialise: InitStep | None = None
    hash_styles: Mapping[str, HashFunc] = field(default_factory=dict)
    result_text: ResultText | None = None
    description: str = ""


#: Plugins by name, as the command layer hands them to the loader.
Plugins = Mapping[str, DomainPlugin]
