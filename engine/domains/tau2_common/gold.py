"""Replaying tau2 gold actions with evalctl handlers, on a copy-on-write view of one shared DB.

A task's ``evaluation_criteria.actions`` are tool calls (``name``, ``arguments``). tau2 builds its
expected end state by running them in order on a fresh DB (17e07b1 ``evaluator_env``), keeping
going after a call that raises. :func:`replay_actions` does the same with handlers, the way the
engine's runtime runs them (``engine.core.tools.writeset``):

- the shared base DB is never changed: the session is a :func:`session_view` of it, and before
  each call the nodes the tool declares in ``WRITES`` are copied (a ``/-`` container shallowly);
- a call that returns an error is rolled back (tau2 would keep a half-applied write; no gold
  action reaches one, see docs/domains/tau2_airline_retail.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.core.tools.context import CallContext
from engine.core.tools.writeset import WritePath, WriteSet, parse_writes, session_view
from engine.domains.tau2_common.results import Handler


@dataclass
class Session:
    """One replay session over a shared ``base`` DB: ``db`` is the session's copy-on-write view,
    ``successes`` counts successful calls per tool (for ``CallContext.call_index``)."""

    base: Mapping[str, Any]
    db: dict[str, Any] = field(init=False)
    successes: dict[str, int] = field(default_factory=dict)
    _writes: WriteSet = field(default_factory=WriteSet, repr=False)
    _parsed: dict[str, tuple[WritePath, ...]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.db = session_view(self.base)
        self._writes.adopt(self.db)

    def call(
        self,
        handlers: Mapping[str, Handler],
        writes: Mapping[str, Sequence[str]],
        name: str,
        args: Mapping[str, Any],
        options: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Run tool ``name`` with ``args``; an error result or an exception leaves the session as
        it was (an exception is raised again).

        Raises KeyError for a tool with no handler or no WRITES entry.
        """
        handler = handlers[name]
        if name not in self._parsed:
            self._parsed[name] = parse_writes(writes[name])
        self._writes.prepare(self.db, self._parsed[name], args)
        ctx = CallContext(
            tool=name,
            call_index=self.successes.get(name, 0) + 1,
            options=dict(options or {}),
            today=str(self.db.get("_current_date", "")),
        )
        try:
            result = handler(self.db, args, ctx)
        except Exception:
            self._writes.rollback()
            raise
        if result.get("status") == "success":
            self._writes.commit()
            self.successes[name] = self.successes.get(name, 0) + 1
        else:
            self._writes.rollback()
        return result


@dataclass(frozen=True)
class Replay:
    """The outcome of replaying gold actions: each call's result in order, and the end DB (which
    shares every unchanged node with the base DB: do not mutate it)."""

    results: list[dict[str, Any]]
    db: dict[str, Any]


def replay_actions(
    base: Mapping[str, Any],
    actions: Sequence[Mapping[str, Any]],
    handlers: Mapping[str, Handler],
    writes: Mapping[str, Sequence[str]],
) -> Replay:
    """Replay ``actions`` (each ``{"name", "arguments"}``) in order on a copy-on-write view of
    ``base``; ``base`` is left unchanged. Raises KeyError for an action naming an unknown tool."""
    session = Session(base)
    results = [session.call(handlers, writes, a["name"], a.get("arguments") or {}) for a in actions]
    return Replay(results, session.db)
