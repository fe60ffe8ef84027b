"""tau2's DB hash, reproduced on a plain JSON DB.

tau2 (17e07b1, ``get_pydantic_hash``) hashes a DB as the SHA-256 hex of
``json.dumps(db.model_dump(), sort_keys=True, default=str)``: default separators (``", "``,
``": "``), ASCII escapes, no number normalisation. The dump differs from the JSON file only where
a model declares an optional field that the file leaves out: the dump holds it as null. Those
fields are declared per record type in a null-defaults table,
``{"/reservations/*": {"status": None}}``: a JSON-Pointer-like pattern (``*`` = every value of a
dict or item of a list) to the fields that are null when absent. Keys are sorted, so field order
does not matter here.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Mapping
from typing import Any

NullDefaults = Mapping[str, Mapping[str, Any]]
_ABSENT = object()


def _patch(node: Any, segments: list[str], defaults: Mapping[str, Any]) -> Any:
    """``node`` with the defaults filled in below ``segments``; the same object when nothing
    was missing (only the records that lack a field are copied, shallowly)."""
    if not segments:
        if not isinstance(node, Mapping):
            return node
        missing = {k: v for k, v in defaults.items() if k not in node}
        return {**node, **missing} if missing else node
    head, rest = segments[0], segments[1:]
    if head == "*":
        if isinstance(node, Mapping):
            patched = {k: _patch(v, rest, defaults) for k, v in node.items()}
            changed = any(patched[k] is not v for k, v in node.items())
            return patched if changed else node
        if isinstance(node, list):
            items = [_patch(v, rest, defaults) for v in node]
            return items if any(a is not b for a, b in zip(items, node, strict=True)) else node
        return node
    if isinstance(node, Mapping) and head in node:
        child = _patch(node[head], rest, defaults)
        return node if child is node[head] else {**node, head: child}
    return node


def with_null_defaults(db: Mapping[str, Any], null_defaults: NullDefaults) -> Mapping[str, Any]:
    """A view of ``db`` in which every field of ``null_defaults`` is present (null when absent).

    ``db`` is never changed; unchanged subtrees are shared with it. Raises ValueError for a
    pattern that does not start with ``/``.
    """
    view: Any = db
    for pattern, defaults in null_defaults.items():
        if not pattern.startswith("/"):
            raise ValueError(f"null-default pattern must start with '/': {pattern!r}")
        view = _patch(view, [s for s in pattern.split("/")[1:] if s], defaults)
    return view


def tau2_db_hash(db: Mapping[str, Any], null_defaults: NullDefaults, exclude: Collection[str] = ()) -> str:
    """SHA-256 hex of tau2's canonical dump of ``db`` (see the module docstring).

    ``exclude`` names top-level keys that are not part of tau2's DB (an engine's own keys). Values
    that are not JSON types are dumped with ``str`` as tau2 does. Mirrors tau2 17e07b1
    ``get_pydantic_hash`` for DBs whose records hold only the fields their models declare.
    """
    view = with_null_defaults(db, null_defaults)
    if exclude:
        view = {k: v for k, v in view.items() if k not in exclude}
    text = json.dumps(view, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Tau2Hasher:
    """:func:`tau2_db_hash` for many DBs derived from one shared ``base`` DB, fast.

    The JSON text of each record (``/<table>/<key>``) of ``base`` is made once and reused for every
    DB that still holds that very record object; only records a session replaced are dumped again.
    The result equals :func:`tau2_db_hash` as long as records shared with ``base`` are never changed
    in place (the WRITES contract: a handler copies what it changes). Null-default patterns must
    point at or below a record (``/<table>/*...``).
    """

    def __init__(self, base: Mapping[str, Any], null_defaults: NullDefaults, exclude: Collection[str] = ()):
        for pattern in null_defaults:
            if len([s for s in pattern.split("/") if s]) < 2:
                raise ValueError(f"null-default pattern must name records below a table: {pattern!r}")
        self.base = base
        self.null_defaults = null_defaults
        self.exclude = frozenset(exclude)
        self._records: dict[tuple[str, str], tuple[Any, str]] = {}

    def _record_text(self, table: str, key: str, record: Any) -> str:
        hit = self._records.get((table, key))
        if hit is not None and hit[0] is record:
            return hit[1]
        patched = with_null_defaults({table: {key: record}}, self.null_defaults)[table][key]
        text = json.dumps(patched, sort_keys=True, default=str)
        base_table = self.base.get(table)
        if isinstance(base_table, Mapping) and base_table.get(key) is record:
            self._records[(table, key)] = (record, text)
        return text

    def text(self, db: Mapping[str, Any]) -> str:
        """tau2's canonical dump text of ``db`` (what :func:`tau2_db_hash` hashes)."""
        parts: list[str] = []
        for name in sorted(k for k in db if k not in self.exclude):
            value = db[name]
            if isinstance(value, Mapping):
                entries = (f"{json.dumps(k)}: {self._record_text(name, k, value[k])}" for k in sorted(value))
                body = "{" + ", ".join(entries) + "}"
            else:
                patched = with_null_defaults({name: value}, self.null_defaults)[name]
                body = json.dumps(patched, sort_keys=True, default=str)
            parts.append(f"{json.dumps(name)}: {body}")
        return "{" + ", ".join(parts) + "}"

    def hash(self, db: Mapping[str, Any]) -> str:
        """SHA-256 hex of :meth:`text`."""
        return hashlib.sha256(self.text(db).encode("utf-8")).hexdigest()


class SharedRecordHasher(Tau2Hasher):
    """:func:`tau2_db_hash` as a plugin hash style (``(db) -> hex``), fast for many DBs that share
    record objects (sessions over one shared DB hold its records except where a tool wrote: a write
    copies the record first). There is no base DB to name, so it keeps, per ``/<table>/<key>``, the
    JSON text of the last ``keep`` record objects seen there, and per table the text of the last
    ``keep`` tables seen (reused while a table holds the very same record objects under the same
    keys), and the hashes of the last DBs made of those very table texts: a hash dumps only the
    records a session replaced.

    Equals :func:`tau2_db_hash` as long as a record object is never changed in place after it was
    hashed (the engine's runtime copies a record before every call that may write it). Memory: at
    most ``keep`` texts per record and per table. Safe to call from several threads.
    """

    def __init__(self, null_defaults: NullDefaults, exclude: Collection[str] = (), keep: int = 2):
        super().__init__({}, null_defaults, exclude)
        self.keep = keep
        self._entries: dict[tuple[str, str], list[tuple[Any, str]]] = {}
        self._tables: dict[str, list[tuple[tuple[str, ...], tuple[Any, ...], str]]] = {}
        self._hashes: list[tuple[tuple[tuple[str, ...], tuple[str, ...]], str]] = []

    @staticmethod
    def _recent(slot: list[Any], i: int) -> None:
        if i:
            slot.insert(0, slot.pop(i))  # most recently used first

    def _entry(self, table: str, key: str, record: Any) -> str:
        """``"<key>": <record text>`` of one record, from the cache when that object was seen."""
        slot = self._entries.setdefault((table, key), [])
        for i, (obj, text) in enumerate(slot):
            if obj is record:
                self._recent(slot, i)
                return text
        patched = with_null_defaults({table: {key: record}}, self.null_defaults)[table][key]
        text = f"{json.dumps(key)}: {json.dumps(patched, sort_keys=True, default=str)}"
        slot.insert(0, (record, text))
        del slot[self.keep :]
        return text

    def _table_body(self, name: str, table: Mapping[str, Any]) -> str:
        slot = self._tables.setdefault(name, [])
        for i, (keys, records, body) in enumerate(slot):
            pairs = zip(keys, records, strict=True)
            if len(keys) == len(table) and all(table.get(k, _ABSENT) is r for k, r in pairs):
                self._recent(slot, i)
                return body
        keys = tuple(sorted(table))
        records = tuple(table[k] for k in keys)
        body = "{" + ", ".join(self._entry(name, k, r) for k, r in zip(keys, records, strict=True)) + "}"
        slot.insert(0, (keys, records, body))
        del slot[self.keep :]
        return body

    def _bodies(self, db: Mapping[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        names = tuple(sorted(k for k in db if k not in self.exclude))
        bodies: list[str] = []
        for name in names:
            value = db[name]
            if isinstance(value, Mapping):
                bodies.append(self._table_body(name, value))
            else:
                patched = with_null_defaults({name: value}, self.null_defaults)[name]
                bodies.append(json.dumps(patched, sort_keys=True, default=str))
        return names, tuple(bodies)

    @staticmethod
    def _join(names: tuple[str, ...], bodies: tuple[str, ...]) -> str:
        return "{" + ", ".join(f"{json.dumps(n)}: {b}" for n, b in zip(names, bodies, strict=True)) + "}"

    def text(self, db: Mapping[str, Any]) -> str:
        """tau2's canonical dump text of ``db`` (what :func:`tau2_db_hash` hashes)."""
        return self._join(*self._bodies(db))

    def hash(self, db: Mapping[str, Any]) -> str:
        """SHA-256 hex of :meth:`text`; a DB made of the very table texts of a recent one (the
        cached strings themselves) reuses its hash."""
        names, bodies = self._bodies(db)
        for (seen_names, seen_bodies), hexdigest in self._hashes:
            if seen_names == names and all(a is b for a, b in zip(seen_bodies, bodies, strict=True)):
                return hexdigest
        hexdigest = hashlib.sha256(self._join(names, bodies).encode("utf-8")).hexdigest()
        self._hashes.insert(0, ((names, bodies), hexdigest))
        del self._hashes[4 * self.keep :]
        return hexdigest

    def __call__(self, db: Mapping[str, Any]) -> str:
        return self.hash(db)
