"""The canonical DB text (``engine.core.dbhash``) from one orjson dump, for plain JSON-shaped DBs.

orjson dumps a DB (sorted keys, compact) about six times faster than the standard library's C
encoder, but its text is the canonical one only where both write a value the same way. This path
takes the orjson text when it can show that, and otherwise returns None (the caller then takes
:mod:`engine.util.canonical_text`, then the slow way). What it checks, and why that is enough:

- orjson refuses (the path gives up): keys that are not strings, integers beyond 64 bits, lone
  surrogates, cycles, and, with the pass-through options, subclasses, dataclasses and dates;
- the text must be ASCII with no backslash and no DEL: then every string was printable ASCII
  without a quote or backslash, which both encoders write as the characters themselves, and each
  string token is exactly ``"`` + its characters + ``"`` (a quote always opens or closes one);
- every value of the DB is looked at once, level by level, through the garbage collector's
  ``get_referents`` (C; a dict, list or tuple hands over every value or item it holds; a key is
  a string): all must be of the eight plain types (an Enum, a UUID or an orjson Fragment, which
  orjson writes natively, makes the path give up), and the floats are collected;
- each float value, dumped by orjson, must read exactly as ``float.__repr__`` (the standard
  library's way) writes it: this refuses NaN and the infinities (orjson writes null) and the forms
  the two write differently (1e-05 against 0.00001); exponent forms are refused too (a whole float
  of 1e16 or more is an integer in the canonical text), and so is -0.0 (0 there). Values found
  written alike are remembered (the check depends on the value alone). A whole float is then
  ``<its integer>.0``, and removing every ``.0`` followed by ``,`` ``]`` or ``}`` gives the
  canonical integers, provided the number of removals equals the number of whole floats (else a
  string held such a ``.0``: give up);
- a string whose trimmed, lower-cased text is none/null ends, in the lower-cased text, with
  ``none``/``null`` followed by a space or a quote (a null literal is followed by ``,``, ``]`` or
  ``}``); each such token is checked whole and, as a value (not followed by ``:``), becomes null;
- a non-empty list held under an unordered key starts at ``"key":[`` preceded by ``{`` or ``,``;
  its items (already canonical) are sorted by their text, innermost lists first.

The tests in tests/unit/results/test_canonical_orjson.py hold this path to the slow way's text on
generated DBs, including the values it must refuse.
"""

from __future__ import annotations

import gc
import json
import re
from collections.abc import Callable, Collection, Mapping
from math import copysign
from typing import Any

import orjson

_OPTIONS = (
    orjson.OPT_SORT_KEYS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
)
_PLAIN = frozenset({dict, list, tuple, str, int, float, bool, type(None)})
_WHOLE_FLOAT_TAIL = re.compile(rb"\.0(?=[,\]}])")
_NULL_END = re.compile(rb'n(?:one|ull)[" ]')  # in the lower-cased text
_NULLS = frozenset({b"none", b"null"})
# the C scanner: (text, index) -> (value, end); JSONDecoder sets it in __init__, which typeshed omits
_scan_once: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
_MARKERS: dict[Collection[str], re.Pattern[bytes]] = {}  # by the rules' unordered_lists
#: Float values orjson writes exactly as ``float.__repr__`` does, without an exponent (bounded).
_WRITTEN_ALIKE: set[float] = set()
_WRITTEN_ALIKE_LIMIT = 20_000


def floats_of(db: Mapping[str, Any]) -> list[float] | None:
    """Every float value in ``db`` (one entry per occurrence), or None when a value is not of a
    plain JSON type. A level's values are screened before the next level is asked for, so only
    dicts, lists and tuples are ever opened."""
    found: list[float] = []
    level: list[Any] = [db]
    plain, real, kind = _PLAIN, float, type
    while level:
        level = gc.get_referents(*level)
        present = set(map(kind, level))
        if not plain.issuperset(present):
            return None
        if real in present:
            found += [x for x in level if kind(x) is real]
    return found


def _whole_floats(floats: list[float]) -> int | None:
    """How many of ``floats`` are whole, or None when orjson does not write each value exactly as
    ``float.__repr__`` does (NaN and the infinities, which orjson writes null; 1e-05 against
    0.00001), or one is written with an exponent (a whole float of 1e16 or more is an integer in
    the canonical text), or one is -0.0 (0 in the canonical text; it equals 0.0, so its sign is
    looked at). A value found written alike is remembered: the check depends on the value alone,
    and the same prices recur from DB to DB (a NaN equals nothing, so it is never taken as seen)."""
    new = set(floats).difference(_WRITTEN_ALIKE)
    if new:
        values = list(new)
        written = ",".join(map(float.__repr__, values))
        if "e" in written or orjson.dumps(values) != f"[{written}]".encode():
            return None
        if len(_WRITTEN_ALIKE) > _WRITTEN_ALIKE_LIMIT:
            _WRITTEN_ALIKE.clear()
        _WRITTEN_ALIKE.update(values)
    if 0.0 in floats and any(copysign(1.0, x) < 0.0 for x in floats if x == 0.0):
        return None
    return sum(map(float.is_integer, floats))


def _nulled(raw: bytes) -> bytes:
    """``raw`` with every none/null string value written null (a key keeps its text)."""
    low = raw.lower()
    parts: list[bytes] = []
    at = 0
    for match in _NULL_END.finditer(low):
        end = low.index(b'"', match.start())
        start = low.rindex(b'"', 0, match.start())
        if start >= at and low[start + 1 : end].strip(b" ") in _NULLS and raw[end + 1] != 58:  # 58: ":"
            parts += (raw[at:start], b"null")
            at = end + 1
    if not parts:
        return raw
    parts.append(raw[at:])
    return b"".join(parts)


def _list_starts(raw: bytes, unordered: Collection[str]) -> list[int]:
    """Index of the ``[`` of every non-empty list held under an unordered key, last first (a
    key's opening quote follows ``{`` or ``,``; anywhere else the text is inside a string). The
    text is searched backwards: ``[:"`` then the reversed name, which the regex engine finds much
    faster than a pattern that starts with a bare quote."""
    if not unordered:
        return []
    pattern = _MARKERS.get(unordered)
    if pattern is None:
        names = b"|".join(re.escape(orjson.dumps(name)[-2:0:-1]) for name in sorted(unordered))
        pattern = _MARKERS.setdefault(unordered, re.compile(rb'\[:"(?:' + names + rb')"[{,]'))
    size = len(raw)
    return [
        size - 1 - m.start()
        for m in pattern.finditer(raw[::-1])
        if raw[size - m.start()] != 93  # 93: "]", an empty list
    ]


def _sort_list(raw: bytes, start: int) -> bytes:
    """``raw`` with the list whose ``[`` is at ``start`` sorted by its items' text."""
    text = raw.decode("ascii")
    items: list[str] = []
    at = start + 1
    while True:
        end = _scan_once(text, at)[1]
        items.append(text[at:end])
        if text[end] == "]":
            break
        at = end + 1
    if len(items) < 2:
        return raw
    items.sort()
    return b"".join((raw[: start + 1], ",".join(items).encode("ascii"), raw[end:]))


def orjson_canonical_text(db: Mapping[str, Any], unordered: Collection[str]) -> bytes | None:
    """The canonical text of ``db`` (excluded keys already removed; ``unordered`` = the rules'
    unordered-list keys, a tuple) as ASCII bytes, or None when this path cannot show its text is
    the canonical one (see the module docstring)."""
    try:
        raw = orjson.dumps(db, option=_OPTIONS)  # no default: what it does not know is refused
    except orjson.JSONEncodeError:
        return None
    if not raw.isascii() or b"\\" in raw or b"\x7f" in raw:
        return None
    floats = floats_of(db)
    if floats is None:
        return None
    if floats:
        whole = _whole_floats(floats)
        if whole is None:
            return None
        if whole:
            raw, removed = _WHOLE_FLOAT_TAIL.subn(b"", raw)
            if removed != whole:
                return None
    raw = _nulled(raw)
    if not isinstance(unordered, tuple | frozenset):
        unordered = tuple(unordered)  # a key for the patterns (the rules give a tuple)
    for start in _list_starts(raw, unordered):
        raw = _sort_list(raw, start)
    return raw
