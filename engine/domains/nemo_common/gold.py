"""Gold-conversation steps: the shape, small constructors, and lines taken from a record's text.

Upstream ships no gold conversations for these domains. evalctl derives one per scenario from the
record (see each domain's ``gold_steps``); they are ours, not NVIDIA's, and say so through
:data:`GOLD_SOURCE`. A step is a plain dict with all four keys:

``{"kind": "user" | "agent" | "tool_call", "text": str, "tool": str, "arguments": dict}``

(``text`` is empty for a tool call, ``tool`` empty and ``arguments`` ``{}`` for a spoken line).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from engine.domains.nemo_common.records import END_TOOL

#: Provenance of every gold conversation built by the domain packages.
GOLD_SOURCE = "evalctl: derived from nemo-1a83139 scenarios.json (not upstream data)"

Step = dict[str, Any]


def user(text: str) -> Step:
    """A caller line."""
    return {"kind": "user", "text": text, "tool": "", "arguments": {}}


def agent(text: str) -> Step:
    """An agent line."""
    return {"kind": "agent", "text": text, "tool": "", "arguments": {}}


def call(tool: str, arguments: Mapping[str, Any] | None = None) -> Step:
    """An agent tool call with its arguments (copied)."""
    return {"kind": "tool_call", "text": "", "tool": tool, "arguments": dict(arguments or {})}


def hang_up() -> Step:
    """The agent's final call of the upstream end tool."""
    return call(END_TOOL)


def quoted(text: str) -> str | None:
    """The span between the first and the last single quote of ``text``, or None when it has
    fewer than two. Upstream quotes whole spoken sentences that may hold apostrophes:
    ``Greet ... by saying 'Welcome! I'm Lisa.'.`` -> ``Welcome! I'm Lisa.``"""
    first, last = text.find("'"), text.rfind("'")
    if first < 0 or last <= first:
        return None
    inner = text[first + 1 : last].strip()
    return inner or None


def first_quoted(lines: Iterable[str]) -> str | None:
    """:func:`quoted` of the first line that has a quoted span."""
    for line in lines:
        found = quoted(line)
        if found:
            return found
    return None


def double_quoted(lines: Iterable[str]) -> list[str]:
    """Every ``"..."`` span of ``lines``, in order (used for scripted callers)."""
    out: list[str] = []
    for line in lines:
        parts = line.split('"')
        out.extend(p.strip() for p in parts[1::2] if p.strip())
    return out


def said_line(guidelines: Sequence[str], verb: str = "Say") -> str | None:
    """The sentence a guideline tells the side to say, from the first guideline that starts with
    ``verb`` (``Say 'Thank you, goodbye.' once ...`` -> ``Thank you, goodbye.``)."""
    for line in guidelines:
        if line.strip().startswith(f"{verb} '"):
            return quoted(line)
    return None


def to_gold_events(steps: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Steps in the engine's gold-trace event shape (``engine/session/backends/replay.py``):
    ``{event_type: user_utterance|agent_utterance, utterance}`` and
    ``{event_type: tool_call, tool_name, params}``. Raises ValueError on an unknown kind."""
    events: list[dict[str, Any]] = []
    for step in steps:
        kind = step["kind"]
        if kind == "user":
            events.append({"event_type": "user_utterance", "utterance": step["text"]})
        elif kind == "agent":
            events.append({"event_type": "agent_utterance", "utterance": step["text"]})
        elif kind == "tool_call":
            events.append(
                {"event_type": "tool_call", "tool_name": step["tool"], "params": dict(step["arguments"])}
            )
        else:
            raise ValueError(f"unknown step kind {kind!r}")
    return events
