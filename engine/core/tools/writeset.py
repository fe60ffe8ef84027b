"""Copy-on-write session DBs and the ``writes`` declarations of tools.

Many sessions may start from one big parsed DB (tau2: one 7 MB DB for 50 tasks). A session does
not copy it: :func:`session_view` gives it its own top level and its own shallow copy of every
top-level container, sharing the records. Before a writing tool runs, :class:`WriteSet` copies just
the nodes the tool declares it may change (and, shallowly, the containers on the way to them), so
the handler mutates the session's own copies; rolling back puts the previous nodes back.

A declaration is a list of paths with JSON-Pointer syntax whose segments may be ``{argument}``
placeholders:

- ``/reservations/{reservation_id}``: the node at that path may change (it is deep-copied first);
- ``/reservations/-``: entries may be added to or removed from that container (shallow copy);
- ``[]``: a pure read; ``None`` (no declaration): anything may change, the whole DB is copied.
"""

from __future__ import annotations

import json
import marshal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

_MISSING = object()


def json_copy(value: Any) -> Any:
    """Deep copy of JSON-shaped data (dicts and lists; leaves shared). ~3x faster than deepcopy."""
    if isinstance(value, dict):
        return {k: json_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_copy(v) for v in value]
    return value


def deep_copy(value: Any) -> Any:
    """Deep copy of JSON-shaped data at C speed (a ``marshal`` round trip, ~2x faster than
    :func:`json_copy`; tuples are copied too, and two references to one object stay one object).
    Data marshal does not take (objects, subclasses of dict/list/str, very deep nesting) is copied
    by :func:`json_copy`."""
    try:
        return marshal.loads(marshal.dumps(value))
    except ValueError:
        return json_copy(value)


def session_view(base: Mapping[str, Any]) -> dict[str, Any]:
    """A session's DB over ``base``: a new top level and a shallow copy of each top-level dict or
    list; deeper records are shared with ``base`` until a declared write copies them."""
    return {
        k: dict(v) if isinstance(v, dict) else list(v) if isinstance(v, list) else v for k, v in base.items()
    }


def view_delta(base: Mapping[str, Any], view: Mapping[str, Any]) -> dict[str, Any]:
    """What a session's DB ``view`` (a :func:`session_view` over ``base``, after its writes) holds
    that ``base`` does not, found by identity (a record no write copied is ``base``'s own object):
    ``{"order": [the view's top-level keys], "top": {key: value replaced whole}, "rows": {key:
    {record key: record}}}`` (records changed or appended in a top-level dict whose other records
    and order are ``base``'s). :func:`apply_delta` rebuilds the view from ``base``. A few records for a
    session over a big DB (tau2 airline: 7 MB of JSON); the whole DB when the view is a deep copy."""
    top: dict[str, Any] = {}
    rows: dict[str, dict[str, Any]] = {}
    for key, value in view.items():
        was = base.get(key, _MISSING)
        if value is was:
            continue
        if isinstance(value, dict) and isinstance(was, dict) and _appended_only(was, value):
            changed = {k: v for k, v in value.items() if was.get(k, _MISSING) is not v}
            if changed:
                rows[key] = changed
        elif isinstance(value, list) and isinstance(was, list) and len(value) == len(was):
            if any(a is not b for a, b in zip(value, was, strict=True)):
                top[key] = value
        else:
            top[key] = value
    return {"order": list(view), "top": top, "rows": rows}


def _appended_only(base: dict[str, Any], view: dict[str, Any]) -> bool:
    """Whether ``view`` holds ``base``'s keys in ``base``'s order, then perhaps new ones."""
    if len(view) < len(base):
        return False
    return all(a == b for a, b in zip(base, view, strict=False))


def apply_delta(base: Mapping[str, Any], delta: Mapping[str, Any]) -> dict[str, Any]:
    """The session DB :func:`view_delta` described: a :func:`session_view` over ``base`` with the
    delta's changes (records shared with ``base`` where it kept them)."""
    top, rows = delta["top"], delta["rows"]
    db = {}
    for key in delta["order"]:
        if key in top:
            db[key] = top[key]
            continue
        value = base[key]
        db[key] = (
            dict(value) if isinstance(value, dict) else list(value) if isinstance(value, list) else value
        )
        if key in rows:
            db[key].update(rows[key])
    return db


@dataclass(frozen=True)
class WritePath:
    """One parsed declaration: ``segments`` (``{name}`` placeholders kept) and ``entries``
    (True for a trailing ``/-``: the container's entries change, not the entries themselves)."""

    text: str
    segments: tuple[str, ...]
    entries: bool = False
    #: ``(index, argument name)`` of each ``{name}`` segment (from ``segments``).
    places: tuple[tuple[int, str], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        segs = self.segments
        found = tuple((i, s[1:-1]) for i, s in enumerate(segs) if s.startswith("{") and s.endswith("}"))
        object.__setattr__(self, "places", found)

    def resolve(self, args: Mapping[str, Any]) -> tuple[str, ...] | None:
        """The concrete path for one call's arguments; None when a placeholder's argument is
        absent (the call cannot touch that path)."""
        places = self.places
        if not places:
            return self.segments
        out = list(self.segments)
        for i, name in places:
            value = args.get(name)
            if value is None or isinstance(value, dict | list):
                return None
            out[i] = value if type(value) is str else str(value)
        return tuple(out)


def parse_writes(paths: Sequence[str]) -> tuple[WritePath, ...]:
    """Parse declarations; raises ValueError for a path that does not start with ``/``, is empty,
    or has an empty segment."""
    parsed: list[WritePath] = []
    for text in paths:
        if not text.startswith("/") or text == "/":
            raise ValueError(f"write path {text!r} must start with '/' and name at least one key")
        segs = [s.replace("~1", "/").replace("~0", "~") for s in text[1:].split("/")]
        entries = segs[-1] == "-"
        if entries:
            segs = segs[:-1]
        if not segs or any(s == "" for s in segs):
            raise ValueError(f"write path {text!r} has an empty segment")
        parsed.append(WritePath(text, tuple(segs), entries))
    return tuple(parsed)


def _get(container: Any, key: str) -> Any:
    if isinstance(container, dict):
        return container.get(key, _MISSING)
    if isinstance(container, list):
        try:
            return container[int(key)]
        except (ValueError, IndexError):
            return _MISSING
    return _MISSING


def _set(container: Any, key: str, value: Any) -> None:
    if value is _MISSING:
        if isinstance(container, dict):
            container.pop(key, None)
        return
    if isinstance(container, dict):
        container[key] = value
    else:
        container[int(key)] = value


@dataclass
class WriteSet:
    """Which nodes of one session DB the session owns (copied from the shared base), and the undo
    log of the call in progress."""

    owned: dict[int, Any] = field(default_factory=dict)  # id -> container (kept alive: ids stay unique)
    _undo: list[tuple[Any, str, Any]] = field(default_factory=list)
    #: Also mark every container inside a deep-copied node as owned (a walk of the copy). Needed
    #: only to audit calls (snapshot_owned); without it a later path through such a container
    #: copies it once more, which is correct, just not free.
    nested: bool = True

    def adopt(self, db: dict[str, Any]) -> None:
        """Mark a :func:`session_view` as owned at the top two levels."""
        self.owned[id(db)] = db
        for value in db.values():
            if isinstance(value, dict | list):
                self.owned[id(value)] = value

    def _own(self, parent: Any, key: str, node: Any) -> Any:
        """``node`` (the value at ``parent[key]``) as a container the session owns (shallow copy)."""
        if id(node) in self.owned:
            return node
        copy = dict(node) if isinstance(node, dict) else list(node)
        self._undo.append((parent, key, node))
        _set(parent, key, copy)
        self.owned[id(copy)] = copy
        return copy

    def prepare(
        self, db: dict[str, Any], paths: Sequence[WritePath], args: Mapping[str, Any]
    ) -> list[tuple[str, ...]]:
        """Copy what a call may change before its handler runs (start of a call); returns the
        concrete paths the call may change."""
        self._undo.clear()
        resolved: list[tuple[str, ...]] = []
        for path in paths:
            concrete = path.resolve(args)
            if concrete is None:
                continue
            resolved.append(concrete)
            node: Any = db
            for key in concrete[:-1]:
                child = _get(node, key)
                if not isinstance(child, dict | list):
                    node = None
                    break
                node = self._own(node, key, child)
            if node is None:
                continue
            last = concrete[-1]
            target = _get(node, last)
            self._undo.append((node, last, target))
            if isinstance(target, dict | list):
                fresh = (
                    (dict(target) if isinstance(target, dict) else list(target))
                    if path.entries
                    else deep_copy(target)
                )
                _set(node, last, fresh)
                self.owned[id(fresh)] = fresh
                if self.nested and not path.entries:
                    self.own_tree(fresh)
        return resolved

    def own_tree(self, value: Any) -> None:
        """Mark every container in ``value`` as owned (it is the session's own copy)."""
        if isinstance(value, dict):
            self.owned[id(value)] = value
            for v in value.values():
                self.own_tree(v)
        elif isinstance(value, list):
            self.owned[id(value)] = value
            for v in value:
                self.own_tree(v)

    def rollback(self) -> None:
        """Put back every node the call in progress replaced (in reverse order)."""
        for parent, key, old in reversed(self._undo):
            _set(parent, key, old)
        self._undo.clear()

    def commit(self) -> None:
        """Keep the call's changes."""
        self._undo.clear()


def changed_outside(
    before: Mapping[str, Any], after: Mapping[str, Any], allowed: Sequence[tuple[str, ...]]
) -> list[str]:
    """Paths (JSON Pointer text) where ``after`` differs from ``before`` outside the ``allowed``
    prefixes (concrete segment tuples). Used by validate to check declarations on gold replays."""
    out: list[str] = []

    def walk(a: Any, b: Any, where: tuple[str, ...]) -> None:
        if any(where[: len(p)] == p for p in allowed):
            return
        if a is b:
            return
        if isinstance(a, dict) and isinstance(b, dict):
            for key in a.keys() | b.keys():
                x, y = a.get(key, _MISSING), b.get(key, _MISSING)
                if x is not y:  # (inlined: a big table's untouched records cost no call)
                    walk(x, y, (*where, str(key)))
            return
        if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                walk(x, y, (*where, str(i)))
            return
        if (
            a is _MISSING
            or b is _MISSING
            or json.dumps(a, sort_keys=True, default=str) != json.dumps(b, sort_keys=True, default=str)
        ):
            out.append("/" + "/".join(where))

    walk(before, after, ())
    return sorted(out)


def snapshot_owned(value: Any, owned: Mapping[int, Any]) -> Any:
    """A copy of the session-owned part of a DB; shared (not owned) containers are kept by
    reference. With :func:`changed_outside`, which skips identical objects, it finds what a call
    changed in the session's own nodes; a change to a shared node shows in the shared base."""
    if isinstance(value, dict) and id(value) in owned:
        return {k: snapshot_owned(v, owned) if id(v) in owned else v for k, v in value.items()}
    if isinstance(value, list) and id(value) in owned:
        return [snapshot_owned(v, owned) if id(v) in owned else v for v in value]
    return value
