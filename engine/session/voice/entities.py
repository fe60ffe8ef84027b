"""Key entities of an agent line and whether a transcript heard them as meant.

An entity is a run of words a caller must get exactly right, found in the agent's own text:

- a code or number said piece by piece: two or more consecutive single letters written as
  capitals (``Z K three F F W``), digits or number words (``seven oh three``, ``one hundred
  fifteen``), with a following ``dollars`` / ``cents`` / ``percent`` (an amount);
- a date: a month name and the number words after it (``March twenty-fifth``);
- a name: a capitalised word that does not start a sentence (``Austin``, ``Los Angeles``: joined).

:func:`entities` gives each as its words after :func:`engine.session.voice.asr.normalize`;
:func:`heard` says whether those words appear, in order and contiguous, in the transcript's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from engine.session.voice.asr import normalize

_NUMBER_WORDS = frozenset(
    (
        "zero",
        "oh",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
        "twenty",
        "thirty",
        "forty",
        "fifty",
        "sixty",
        "seventy",
        "eighty",
        "ninety",
        "hundred",
        "thousand",
        "first",
        "second",
        "third",
        "fourth",
        "fifth",
        "sixth",
        "seventh",
        "eighth",
        "ninth",
        "tenth",
        "eleventh",
        "twelfth",
        "thirteenth",
        "fourteenth",
        "fifteenth",
        "sixteenth",
        "seventeenth",
        "eighteenth",
        "nineteenth",
        "twentieth",
        "thirtieth",
    )
)
_MONTHS = frozenset(
    (
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    )
)
_UNITS = frozenset({"dollars", "dollar", "cents", "percent"})
_NOT_NAMES = frozenset({"I", "AM", "PM", "OK", "I'm", "I'll", "I've", "I'd"})
_TOKEN = re.compile(r"[A-Za-z0-9']+|[.!?]")


def _piece(word: str) -> bool:
    return (
        (len(word) == 1 and (word.isupper() or word.isdigit()))
        or word.isdigit()
        or (word.lower() in _NUMBER_WORDS)
    )


def entities(text: str) -> list[tuple[str, ...]]:
    """The key entities of ``text`` in order, each as its normalised words (see the module)."""
    tokens = _TOKEN.findall(text.replace("\u2019", "'"))
    out: list[tuple[str, ...]] = []
    i, sentence_start = 0, True
    while i < len(tokens):
        word = tokens[i]
        if word in ".!?":
            sentence_start, i = True, i + 1
            continue
        j = i
        if word.lower() in _MONTHS and i + 1 < len(tokens) and _piece(tokens[i + 1]):
            j = i + 1
            while j < len(tokens) and _piece(tokens[j]):
                j += 1
        elif _piece(word):
            while j < len(tokens) and _piece(tokens[j]):
                j += 1
            if j - i < 2 and not word.isdigit():
                j = i  # one number word alone ("one passenger") is not an entity
            elif j < len(tokens) and tokens[j].lower() in _UNITS:
                j += 1
        elif word[:1].isupper() and not sentence_start and word not in _NOT_NAMES:
            j = i + 1
            while j < len(tokens) and tokens[j][:1].isupper() and tokens[j] not in _NOT_NAMES:
                j += 1
        if j > i:
            words = tuple(normalize(" ".join(tokens[i:j])))
            if words:
                out.append(words)
            i, sentence_start = j, False
        else:
            i, sentence_start = i + 1, False
    return out


def heard(entity: Sequence[str], transcript: str) -> bool:
    """True when ``entity``'s words appear contiguously, in order, in ``transcript``'s words."""
    words, n = normalize(transcript), len(entity)
    return n > 0 and any(tuple(words[k : k + n]) == tuple(entity) for k in range(len(words) - n + 1))
