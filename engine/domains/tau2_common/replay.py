"""Replaying tau2 gold actions with evalctl handlers, on a copy-on-write view of one shared DB.

A task's ``evaluation_criteria.actions`` are tool calls (``name``, ``arguments``). tau2 builds its
expected end state by running them in order on a fresh DB (17e07b1 ``evaluator_env``), keeping
going after a call that raises. :func:`replay_actions` does the same with handlers:

- the shared base DB is never changed: the session is a shallow copy of its root, and before each
  call the nodes the tool declares in ``WRITES`` are copied along their path (containers on the
  way shallowly, a declared node deeply, a ``/-`` container shallowly), as the engine's runtime does;
- a call that returns an error is rolled back (tau2 would keep a half-applied write; no gold
  action hits that, see the tool contract doc).

WRITES paths are JSON-Pointer-like: ``/reservations/{reservation_id}`` (one record, the segment in
braces is an argument's value) or ``/reservations/-`` (the container: entries may be added,
removed or replaced, never changed in place).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.domains.tau2_common.results import Handler
from engine.tools.context import CallContext

Path = tuple[str, ...]


def json_copy(value: Any) -> Any:
    """Deep copy of JSON-shaped data (dicts and lists; plain values shared)."""
    if isinstance(value, dict):
        return {k: json_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_copy(v) for v in value]
    return value


def resolve_writes(paths: Sequence[str], args: Mapping[str, Any]) -> list[Path]:
    """The declared paths with ``{arg}`` segments replaced by the arguments' values.

    A path whose argument is absent or not a string/int is dropped (the call cannot name that
    node). Raises ValueError for a path that does not start with ``/``.
    """
    out: list[Path] = []
    for path in paths:
        if not path.startswith("/"):
            raise ValueError(f"WRITES path must start with '/': {path!r}")
        segments: list[str] = []
        for seg in path.split("/")[1:]:
            if seg.startswith("{") and seg.endswith("}"):
                value = args.get(seg[1:-1])
                if not isinstance(value, str | int) or isinstance(value, bool):
                    break
                segments.append(str(value))
            else:
                segments.append(seg)
        else:
            out.append(tuple(segments))
    return out


def copy_on_write(db: dict[str, Any], paths: Sequence[Path]) -> None:
    """Give ``db`` its own copies of what ``paths`` may change, so that shared nodes stay unchanged.

    Every container on a path is replaced by a shallow copy; the node a path names is replaced by
    a deep copy, or, for a path ending in ``-``, its container is (only) shallowly copied.
    Missing nodes stop the walk quietly.
    """
    for path in paths:
        parent: Any = db
        for seg in path[:-1]:
            child = _get(parent, seg)
            if not isinstance(child, dict | list):
                break
            owned = dict(child) if isinstance(child, dict) else list(child)
            _set(parent, seg, owned)
            parent = owned
        else:
            last = path[-1]
            if last != "-":
                node = _get(parent, last)
                if isinstance(node, dict | list):
                    _set(parent, last, json_copy(node))


def _get(container: Any, seg: str) -> Any:
    if isinstance(container, dict):
        return container.get(seg)
    if isinstance(container, list) and seg.isdigit() and int(seg) < len(container):
        return container[int(seg)]
    return None


def _set(container: Any, seg: str, value: Any) -> None:
    if isinstance(container, dict):
        container[seg] = value
    else:
        container[int(seg)] = value


@dataclass
class Session:
    """One replay session over a shared ``base`` DB: ``db`` is the session's view (copy-on-write),
    ``successes`` counts successful calls per tool (for ``CallContext.call_index``)."""

    base: Mapping[str, Any]
    db: dict[str, Any] = field(init=False)
    successes: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.db = dict(self.base)

    def call(
        self,
        handlers: Mapping[str, Handler],
        writes: Mapping[str, Sequence[str]],
        name: str,
        args: Mapping[str, Any],
        options: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Run tool ``name`` with ``args``; an error result leaves the session as it was.

        Raises KeyError for a tool with no handler or no WRITES entry.
        """
        handler, paths = handlers[name], writes[name]
        saved = dict(self.db)
        copy_on_write(self.db, resolve_writes(paths, args))
        ctx = CallContext(
            tool=name,
            call_index=self.successes.get(name, 0) + 1,
            options=dict(options or {}),
            today=str(self.db.get("_current_date", "")),
        )
        result = handler(self.db, args, ctx)
        if result.get("status") == "success":
            self.successes[name] = self.successes.get(name, 0) + 1
        else:
            self.db.clear()
            self.db.update(saved)
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
