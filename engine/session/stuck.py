"""Conversations that go nowhere: the rule that ends them early (stop reason ``no_progress``).

A turn is *idle* when its side called no tool and its words move nothing: it said nothing, it said
only a farewell (a closing phrase such as "goodbye" or "have a great day" in at most
:data:`MAX_FAREWELL_WORDS` words), or it said again exactly what that side said in its previous
turn (case, punctuation and spacing aside). A turn with tool calls is idle only when every call
was refused (an error result) and the side made the same refused calls (names and arguments) and
said the same words in its previous turn: a model repeating one refused call and one sentence
makes no progress however many calls it sends. ``SessionLimits.max_idle_turns`` idle turns in a row,
counting both sides (4 by default: two exchanges), end the session: two sides trading goodbyes
without ending the call, or two silent models, would otherwise go on, each turn a paid request,
until ``max_duration`` (900 s for eva). A tool call that is not refused, other refused calls, or
other words start the count again. The farewell phrases are English; the repeat and silence tests
hold in any language.
"""

from __future__ import annotations

import json
import re
from typing import Any

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


#: A turn's refused tool calls: (tool name, its arguments as canonical JSON) in call order.
RefusedCalls = tuple[tuple[str, str], ...]


def refused_call(name: str, arguments: Any) -> tuple[str, str]:
    """One refused call as :data:`RefusedCalls` holds it (arguments in sorted-key JSON, so the
    same arguments in another key order are the same call)."""
    return name, json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)


def is_idle(
    text: str,
    tool_calls: int,
    previous: str | None,
    refused: RefusedCalls = (),
    previous_refused: RefusedCalls | None = None,
) -> bool:
    """Whether a turn that said ``text`` with ``tool_calls`` calls moves nothing; ``previous`` is
    what the same side said in its previous turn (None for its first); ``refused`` the calls of
    this turn that were refused, ``previous_refused`` those of the side's previous turn."""
    said = words(text)
    if tool_calls:
        return (
            len(refused) == tool_calls
            and refused == previous_refused
            and previous is not None
            and said == words(previous)
        )
    return not said or is_farewell(text) or (previous is not None and said == words(previous))
