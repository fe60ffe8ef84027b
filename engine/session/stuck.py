"""Conversations that go nowhere: the rule that ends them early (stop reason ``no_progress``).

A turn is *idle* when its side called no tool and its words move nothing: it said nothing, it said
only a farewell (a closing phrase such as "goodbye" or "have a great day" in at most
:data:`MAX_FAREWELL_WORDS` words), or it said again exactly what that side said in its previous
turn (case, punctuation and spacing aside). ``SessionLimits.max_idle_turns`` idle turns in a row,
counting both sides (4 by default: two exchanges), end the session: two sides trading goodbyes
without ending the call, or two silent models, would otherwise go on, each turn a paid request,
until ``max_duration`` (900 s for eva). Any tool call, and any turn with other words, starts the
count again. The farewell phrases are English; the repeat and silence tests hold in any language.
"""

from __future__ import annotations

import re

#: A turn of at most this many words that holds a farewell phrase is a farewell.
MAX_FAREWELL_WORDS = 25

FAREWELL = re.compile(
    r"\b(?:good\s*-?\s*bye|bye|farewell|take care|see you|talk (?:to you )?(?:later|soon)"
    r"|have an? (?:great|good|nice|wonderful|lovely|safe|pleasant|fantastic) (?:day|evening|night|"
    r"afternoon|morning|weekend|week|trip|flight|journey|one|time))\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"\w+", re.UNICODE)


def words(text: str) -> tuple[str, ...]:
    """The words of ``text``, lower-cased (punctuation and spacing dropped)."""
    return tuple(map(str.lower, _WORD.findall(text)))


def is_farewell(text: str) -> bool:
    """A short turn that closes the call: a farewell phrase in at most MAX_FAREWELL_WORDS words."""
    return len(words(text)) <= MAX_FAREWELL_WORDS and FAREWELL.search(text) is not None


def is_idle(text: str, tool_calls: int, previous: str | None) -> bool:
    """Whether a turn that said ``text`` with ``tool_calls`` calls moves nothing; ``previous`` is
    what the same side said in its previous turn (None for its first)."""
    if tool_calls:
        return False
    said = words(text)
    return not said or is_farewell(text) or (previous is not None and said == words(previous))
