"""What a side (or a model server) sends, made safe to keep and to show.

A side is any program at the other end of a session: it may send a legal but absurd token count,
or a model name or error message meant to forge lines in a report. Everything of that kind goes
through here before it reaches ``metrics.json``, ``summary.json``, ``all_summary.txt`` or the
terminal:

- :func:`bounded_count`: a non-negative int of at most :data:`MAX_COUNT` (anything else counts 0);
- :func:`one_line`: one line of text, control characters made spaces, invisible and
  direction-changing characters (bidi overrides, zero-width spaces, line separators...) shown as
  ``<U+202E>``, cut to a length.
"""

from __future__ import annotations

import re
from typing import Any

MAX_COUNT = 10**12
"""Largest count (tokens, calls) taken from a side; the protocol refuses larger ones per turn."""

MAX_TEXT = 2000
"""Default longest text kept from a side for a report line (characters)."""

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]+")
#: Unicode format characters (category Cf) and the line / paragraph separators (Zl, Zp): invisible,
#: or able to reorder or break what a terminal shows (Unicode 15.0).
_INVISIBLE = re.compile(
    "[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f\u2028-\u202e"
    "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]"
)


def bounded_count(value: Any) -> int:
    """``value`` when it is an int (not a bool) in ``0..MAX_COUNT``; MAX_COUNT when larger; else 0."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        return 0
    return min(value, MAX_COUNT)


def one_line(text: Any, limit: int | None = MAX_TEXT) -> str:
    """``str(text)`` on one line: each run of control characters (newlines, ANSI escapes) becomes
    one space, each invisible or bidi character becomes ``<U+XXXX>``, and the result is cut to
    ``limit`` characters (None: no cut), noting the full length."""
    text = text if isinstance(text, str) else str(text)
    full = len(text)
    if limit is not None:
        text = text[: limit + 1]  # the rest would be cut anyway: keep the work bounded
    text = _INVISIBLE.sub(lambda m: f"<U+{ord(m.group()):04X}>", _CONTROL.sub(" ", text))
    if limit is None or (len(text) <= limit and full <= limit):
        return text
    return f"{text[:limit]}... ({full} chars)"
