"""The canonical DB text (``engine.core.dbhash``) made from one C-encoder dump and a few text edits.

The slow way normalises a deep copy of the DB in Python and dumps that. Here the C JSON encoder
dumps the DB itself (compact, sorted keys, ASCII) and the normalisations are made on the text.
The encoder writes every string (key or value) through :class:`_Strings`, a cache of encoded
strings that also screens each distinct string once:

- a string whose text could be mistaken for a number edit (``.0,`` ``.0]`` ``.0}`` ``e+``) makes
  the fast path give up (None: the caller takes the slow way);
- a none/null string is written between two ``\\r`` (JSON white space, never raw inside an
  ASCII-escaped string); a value one becomes ``null`` afterwards, a key (followed by ``:``) keeps
  its text;
- an unordered-list key is written after a ``\\n``; a non-empty list that follows such a key is
  parsed item by item with the C scanner only to find the items' extents, and the item texts
  (already canonical) are sorted and put back, innermost lists first (same length, so the other
  positions stay valid).

Since no string holds them, every ``.0`` followed by ``,``/``]``/``}`` ends a whole float
(``150.0`` becomes ``150``, ``-0.0`` becomes ``0``) and ``e+`` only occurs in a float of 1e16 or
more (left to the slow way). Values the encoder does not know (``default=str`` in the slow way) are
left to it as well. The screened strings are kept in a bounded cache (most DB strings recur: keys,
statuses, codes). :func:`marked_canonical_text` gives the text with its markers still in;
:func:`feed` reads it out piece by piece (``db_hash`` feeds SHA-256 without joining a copy). This
costs about what a plain ``json.dumps(db, sort_keys=True)`` does; ``engine.core.dbhash`` first tries
the orjson path (:mod:`engine.util.canonical_orjson`) and comes here for the DBs it does not take
(non-ASCII text, escaped characters, values of other types). The property tests in
tests/unit/results/test_canonical_text.py hold it to the slow way's text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Mapping
from typing import Any

# the C encoder (``_json.make_encoder``), None where the interpreter lacks it (CPython always has it)
_c_make_encoder: Callable[..., Any] | None = getattr(json.encoder, "c_make_encoder", None)

_escape = json.encoder.encode_basestring_ascii
# the C scanner: (text, index) -> (value, end); JSONDecoder sets it in __init__, which typeshed omits
_scan_once: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
_NULL_STRINGS = frozenset({"none", "null"})
_UNSAFE = re.compile(r"\.0[,\]}]|e\+")  # a string holding these could pass for a number edit
_WHOLE_FLOAT_TAIL = re.compile(r"\.0(?=[,\]}])")
_NEGATIVE_ZERO = re.compile(r"-0\.0(?=[,\]}])")
_CACHE_LIMIT = 200_000


class _GiveUp(Exception):
    """The fast path cannot make this DB's text exactly."""


def _refuse(value: Any) -> Any:
    raise _GiveUp  # a value JSON does not know: the slow way dumps it with str()


class _Strings(dict[str, str]):
    """Encoded (and screened) strings, for one set of unordered-list keys."""

    def __init__(self, unordered: frozenset[str]):
        super().__init__()
        self.unordered = unordered

    def __missing__(self, text: str) -> str:
        encoded = _escape(text)
        if _UNSAFE.search(encoded):
            raise _GiveUp
        null = text.strip().lower() in _NULL_STRINGS
        if null and text in self.unordered:
            raise _GiveUp
        if null:
            encoded = f"\r{encoded}\r"
        elif text in self.unordered:
            encoded = f"\n{encoded}"
        if len(self) >= _CACHE_LIMIT:
            self.clear()
        self[text] = encoded
        return encoded


class _Encoder:
    def __init__(self, unordered: frozenset[str]):
        self.strings = _Strings(unordered)
        assert _c_make_encoder is not None
        self.encode = _c_make_encoder(
            None, _refuse, self.strings.__getitem__, None, ":", ",", True, False, True
        )
        self.markers = tuple(f"\n{_escape(key)}:[" for key in sorted(unordered))


_ENCODERS: dict[Collection[str], _Encoder] = {}  # by the rules' unordered_lists (a tuple)


def _list_starts(text: str, markers: tuple[str, ...]) -> list[int]:
    """Index of the ``[`` of every non-empty list held under an unordered key (each such key is
    written after a ``\\n``; the same name as a value is too, and is passed over)."""
    out: list[int] = []
    at = text.find("\n")
    while at >= 0:
        for marker in markers:
            if text.startswith(marker, at):
                start = at + len(marker) - 1
                if text[start + 1] != "]":
                    out.append(start)
                break
        at = text.find("\n", at + 1)
    return out


def _resolved(text: str) -> str:
    """``text`` with its markers resolved: ``\\n`` dropped, a ``\\r``-wrapped string as null
    (a value) or as itself (a key, followed by ``:``)."""
    if "\r" in text:
        parts = text.split("\r")
        for i in range(1, len(parts), 2):
            if not parts[i + 1].startswith(":"):
                parts[i] = "null"
        text = "".join(parts)
    return text.replace("\n", "")


def _sort_list(text: str, start: int) -> str:
    """``text`` with the list whose ``[`` is at ``start`` sorted by its items' canonical text."""
    items: list[str] = []
    at = start + 1
    while True:
        first = at
        while text[first] in "\n\r":  # a marked string: an unordered key's name, none/null
            first += 1
        end = _scan_once(text, first)[1]
        while text[end] == "\r":  # a none/null string's closing mark
            end += 1
        items.append(text[at:end])
        if text[end] == "]":
            break
        at = end + 1
    if len(items) < 2:
        return text
    items.sort(key=_resolved)
    return text[: start + 1] + ",".join(items) + text[end:]


def feed(marked: bytes, sink: Callable[[Any], Any]) -> None:
    """Pass the canonical text held in ``marked`` (ASCII with the markers still in) to ``sink``
    in pieces (bytes-like), the markers resolved: a ``\\n`` is dropped, a ``\\r``-wrapped string
    becomes null as a value and stays itself as a key (followed by ``:``)."""
    if b"\n" in marked:
        marked = marked.replace(b"\n", b"")
    ret = marked.find(b"\r")
    if ret < 0:
        sink(marked)
        return
    view = memoryview(marked)
    at = 0
    while ret >= 0:
        close = marked.index(b"\r", ret + 1)
        sink(view[at:ret])
        sink(view[ret + 1 : close] if marked[close + 1 : close + 2] == b":" else b"null")
        at = close + 1
        ret = marked.find(b"\r", at)
    sink(view[at:])


def marked_canonical_text(db: Mapping[str, Any], unordered: Collection[str]) -> bytes | None:
    """The canonical text of ``db`` (excluded keys already removed) as ASCII bytes with the
    markers still in (read it through :func:`feed`), or None when this fast path cannot make it
    exactly (the caller then normalises a copy the slow way)."""
    if _c_make_encoder is None:
        return None
    if not isinstance(unordered, tuple | frozenset):
        unordered = tuple(unordered)  # a key for the encoders (the rules give a tuple)
    encoder = _ENCODERS.get(unordered)
    if encoder is None:
        encoder = _ENCODERS.setdefault(unordered, _Encoder(frozenset(unordered)))
    try:
        text = "".join(encoder.encode(db, 0))
    except _GiveUp:
        return None
    plus = text.find("+")
    while plus >= 0:  # "e+": a float of 1e16 or more, whole, written with an exponent
        if text[plus - 1] == "e":
            return None
        plus = text.find("+", plus + 1)
    if _NEGATIVE_ZERO.search(text):
        text = _NEGATIVE_ZERO.sub("0.0", text)
    text = _WHOLE_FLOAT_TAIL.sub("", text)
    if "\n" in text:
        for start in sorted(_list_starts(text, encoder.markers), reverse=True):
            text = _sort_list(text, start)
    return text.encode("ascii")


def fast_canonical_text(db: Mapping[str, Any], unordered: Collection[str]) -> str | None:
    """:func:`marked_canonical_text` as text with the markers resolved (None: take the slow way)."""
    marked = marked_canonical_text(db, unordered)
    if marked is None:
        return None
    parts: list[bytes] = []
    feed(marked, lambda piece: parts.append(bytes(piece)))
    return b"".join(parts).decode("ascii")
