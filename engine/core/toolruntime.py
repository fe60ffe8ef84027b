"""Per-session tool execution driven by the tool table.

A ``ToolRuntime`` owns one session's DB and per-tool success counters. ``call`` parses and
validates the raw arguments against the tool's JSON Schema (lax coercion as eva's pydantic
models), dispatches to the tool's handler, appends an action record for tools with an
``action_type``, and never raises for a bad call: it returns an error result instead and leaves
the DB exactly as before the call. Only what the tool declares it ``writes`` is copied before the
handler runs (the whole DB when it declares nothing) and put back if it raises or returns an
error result.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from engine.core.model import ToolSpec, ToolTable
from engine.core.tools.arguments import ArgumentChecker, parse_arguments, shown
from engine.core.tools.context import CallContext, error
from engine.core.tools.writeset import WriteSet, deep_copy, json_copy, parse_writes

__all__ = ["ToolOutcome", "ToolRuntime", "checker_for", "json_copy"]


@dataclass(frozen=True)
class ToolOutcome:
    """Result of one tool call.

    ``result`` is the JSON-able dict returned to the model (``{status: success|error, ...}``);
    it may share objects with the DB, so serialise it right away if you keep it. ``ended`` is the
    stop reason the tool table declares for the tool (``ends_call``: ``exit`` for
    end_conversation, ``transfer`` for a transfer) after a successful call, else None; ``action``
    is the action record appended (tools with an ``action_type``), else None.
    """

    result: dict[str, Any]
    ended: Literal["exit", "transfer"] | None = None
    action: dict[str, Any] | None = None


_CHECKERS: dict[int, tuple[ToolSpec, ArgumentChecker]] = {}


def checker_for(spec: ToolSpec) -> ArgumentChecker:
    """The (cached) argument checker of one tool spec, with its handler's field rules. Scenarios
    of one domain carry equal tool specs: a checker is built once per distinct parameter schema and
    rules (building one checks the schema itself, about a millisecond)."""
    hit = _CHECKERS.get(id(spec))
    if hit is not None and hit[0] is spec:
        return hit[1]
    try:
        key: tuple[bytes, int] | None = (
            orjson.dumps(spec.parameters, option=orjson.OPT_SORT_KEYS),
            id(spec.field_rules),
        )
    except TypeError:
        key = None
    shared = _BY_CONTENT.get(key) if key is not None else None
    if shared is not None and shared[0] is spec.field_rules:
        made = shared[1]
    else:
        made = ArgumentChecker(spec.parameters, spec.field_rules)
        if key is not None:
            _BY_CONTENT[key] = (spec.field_rules, made)
    _CHECKERS[id(spec)] = (spec, made)
    return made


#: (parameter schema as sorted JSON, id of the rules) -> (the rules, kept so the id stays theirs;
#: the checker).
_BY_CONTENT: dict[tuple[bytes, int], tuple[Any, ArgumentChecker]] = {}


class ToolRuntime:
    """Executes tool calls for one side of one session against ``db`` (mutated in place, owned by
    the engine; pass a :func:`engine.core.tools.writeset.session_view` to share a big base DB). The top
    level of ``db`` and the containers right under it are the session's own: a declared write
    replaces records inside them, so two runtimes must never share them (``dict(db)`` is not enough).

    Handlers come from the tool specs (resolved from the domain plugin at load time); ``handlers``
    overrides them by handler name (unit tests). ``actions`` holds the action records of
    successful calls, in call order; ``successes`` counts successful calls per tool name (the
    minted-id index is that count + 1). ``after_call`` runs after every successful call (a
    domain's sync step).
    """

    def __init__(
        self,
        table: ToolTable,
        db: dict[str, Any],
        handlers: Mapping[str, Callable[..., dict[str, Any]]] | None = None,
        after_call: Callable[[], None] | None = None,
    ):
        self.table = table
        self._specs: dict[str, ToolSpec] = {}
        for tool in table.tools:
            self._specs.setdefault(tool.name, tool)  # the first of a name wins, as ToolTable.get
        self.db = db
        self.actions: list[dict[str, Any]] = []
        self.successes: Counter[str] = Counter()
        self.handlers = handlers or {}
        self.after_call = after_call
        self.writes = WriteSet(nested=False)  # replay's audit turns nested on
        self.writes.adopt(db)
        #: Concrete paths the last call was allowed to change (None: undeclared, anything).
        self.last_allowed: list[tuple[str, ...]] | None = None

    def _copy_all(self) -> dict[str, Any]:
        """Before an undeclared write: the live DB gets its own deep copy of everything (a shared
        base is never mutated); returns the previous top level, untouched, for a rollback."""
        previous = dict(self.db)
        fresh = deep_copy(previous)
        self.db.clear()
        self.db.update(fresh)
        if self.writes.nested:
            self.writes.own_tree(self.db)
        else:
            self.writes.adopt(self.db)
        return previous

    def _restore(self, previous: dict[str, Any]) -> None:
        """Put the previous top level back, in the same dict object."""
        self.db.clear()
        self.db.update(previous)

    def call(self, name: str, arguments: str | Mapping[str, Any] | None) -> ToolOutcome:
        """Run one call. ``arguments`` may be the model's raw JSON string. Never raises."""
        try:
            return self._call(name, arguments)
        except Exception as exc:  # a bug in validation itself must not break the session
            return ToolOutcome(error("execution_error", f"Tool execution failed: {exc}"))

    def _call(self, name: str, arguments: str | Mapping[str, Any] | None) -> ToolOutcome:
        spec = self._specs.get(name) if isinstance(name, str) else None
        if spec is None:
            listed = ", ".join(self.table.names)
            message = f"Tool '{shown(name)}' not found. Available tools: {listed}"
            return ToolOutcome(error("tool_not_found", message))
        args, failed = parse_arguments(arguments)
        if failed is None and spec.check is not None:
            args, failed = spec.check(spec, args or {})
        elif failed is None:
            args, failed = checker_for(spec).check(args or {})
        if failed is not None:
            return ToolOutcome(failed)
        assert args is not None
        handler = self.handlers.get(spec.handler) or spec.run
        if handler is None:
            return ToolOutcome(
                error("execution_error", f"Tool execution failed: no handler '{spec.handler}'")
            )
        ctx = CallContext(
            tool=name,
            call_index=self.successes[name] + 1,
            options=spec.options,
            today=str(self.db.get("_current_date", "")),
        )
        declared = spec.writes is not None
        snapshot: dict[str, Any] | None = None
        top = dict(self.db)  # the top level is put back whole on failure, declared or not
        if declared:
            self.last_allowed = self.writes.prepare(self.db, _parsed(spec), args)
        else:
            self.last_allowed = None
            snapshot = self._copy_all()
        try:
            result = handler(self.db, args, ctx)
            if not isinstance(result, dict):
                raise TypeError(f"handler returned {type(result).__name__}, not a dict")
        except Exception as exc:
            self._rollback(snapshot, top)
            return ToolOutcome(error("execution_error", f"Tool execution failed: {exc}"))
        if result.get("status") != "success":
            self._rollback(snapshot, top)  # an error result never half-applies
            return ToolOutcome(result)
        if declared:
            self.writes.commit()
        self.successes[name] += 1
        action = None
        if spec.action_type:
            action = {"action_type": spec.action_type, **args}
            self.actions.append(action)
        if self.after_call is not None:
            self.after_call()
        return ToolOutcome(result, spec.ends_call, action)

    def _rollback(self, snapshot: dict[str, Any] | None, top: dict[str, Any]) -> None:
        if snapshot is None:
            self.writes.rollback()
            self._restore(top)
        else:
            self._restore(snapshot)


_PARSED: dict[int, tuple[ToolSpec, Any]] = {}


def _parsed(spec: ToolSpec) -> Any:
    hit = _PARSED.get(id(spec))
    if hit is not None and hit[0] is spec:
        return hit[1]
    made = parse_writes(spec.writes or ())
    _PARSED[id(spec)] = (spec, made)
    return made
