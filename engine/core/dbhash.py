"""Canonical DB normalisation and hash, driven entirely by a domain's :class:`HashRules`.

Mirrors the canonical hash of the eva harness: drop excluded top-level keys, turn finite whole
floats into ints and ``"none"``/``"null"`` strings into null, sort the lists held under the
declared unordered keys (at any depth) by their key-sorted JSON, then SHA-256 the compact
sorted-keys JSON (``default=str``, ASCII escapes).

:func:`canonical_json` makes that text without building a normalised copy of the DB: one dump of
the DB as it is, the few normalisations made on the text. Three ways, the first that can show its
text exact is taken: an orjson dump for plain ASCII JSON (:mod:`engine.util.canonical_orjson`, what
eva's DBs take), the standard library's C encoder with every string screened
(:mod:`engine.util.canonical_text`), and :func:`normalize_db` then one dump (the tree form, which also
serves diffs).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any

from engine.core.model import HashRules
from engine.util.canonical_orjson import orjson_canonical_text
from engine.util.canonical_text import fast_canonical_text, feed, marked_canonical_text

_NULL_STRINGS = frozenset({"none", "null"})


def _sort_key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str, ensure_ascii=True, separators=(",", ":"))


def _normalize(value: Any, unordered: frozenset[str], key: str | None, sort: bool = True) -> Any:
    if isinstance(value, Mapping):
        return {k: _normalize(v, unordered, k, sort) for k, v in value.items()}
    if isinstance(value, list | tuple):
        items = [_normalize(v, unordered, None, sort) for v in value]
        if sort and key in unordered:
            items.sort(key=_sort_key)
        return items
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lower() in _NULL_STRINGS:
        return None
    return value


def normalize_db(db: Mapping[str, Any], rules: HashRules, *, sort_lists: bool = True) -> Any:
    """Return a normalised deep copy of ``db`` (plain dicts/lists; the input is not mutated).

    Top-level keys in ``rules.excluded_keys`` are dropped; whole finite floats become ints;
    strings equal to none/null (trimmed, any case) become None; lists under any key named in
    ``rules.unordered_lists`` (any depth) are sorted by their key-sorted JSON, unless
    ``sort_lists`` is False (a diff keeps list positions as they are in the files).
    """
    excluded = set(rules.excluded_keys)
    unordered = frozenset(rules.unordered_lists)
    return {k: _normalize(v, unordered, k, sort_lists) for k, v in db.items() if k not in excluded}


def reference_canonical_json(db: Mapping[str, Any], rules: HashRules) -> str:
    """The canonical text made the slow, obvious way: :func:`normalize_db`, then one dump. Equal
    to :func:`canonical_json` for every DB (tests check it); used when neither fast path can be
    sure of its text edits."""
    return _sort_key(normalize_db(db, rules))


def _without_excluded(db: Mapping[str, Any], rules: HashRules) -> Mapping[str, Any]:
    for key in rules.excluded_keys:
        if key in db:
            excluded = rules.excluded_keys
            return {k: v for k, v in db.items() if k not in excluded}
    return db


def canonical_json(db: Mapping[str, Any], rules: HashRules) -> str:
    """Compact, sorted-keys, ASCII JSON of :func:`normalize_db` — the exact text that is hashed."""
    kept = _without_excluded(db, rules)
    raw = orjson_canonical_text(kept, rules.unordered_lists)
    if raw is not None:
        return raw.decode("ascii")
    text = fast_canonical_text(kept, rules.unordered_lists)
    return reference_canonical_json(db, rules) if text is None else text


def db_hash(db: Mapping[str, Any], rules: HashRules) -> str:
    """SHA-256 hex (64 chars) of :func:`canonical_json`; equal DBs under ``rules`` hash equal.
    A domain whose rules select a plugin hash style (``rules.func``) is hashed by that function."""
    if rules.func is not None:
        return str(rules.func(db))
    kept = _without_excluded(db, rules)
    raw = orjson_canonical_text(kept, rules.unordered_lists)
    if raw is not None:
        return hashlib.sha256(raw).hexdigest()
    marked = marked_canonical_text(kept, rules.unordered_lists)
    if marked is None:
        return hashlib.sha256(reference_canonical_json(db, rules).encode("ascii")).hexdigest()
    if b"\r" not in marked:  # no none/null string: one piece
        return hashlib.sha256(marked.replace(b"\n", b"") if b"\n" in marked else marked).hexdigest()
    digest = hashlib.sha256()
    feed(marked, digest.update)
    return digest.hexdigest()
