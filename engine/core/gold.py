"""Gold traces: a scenario's reference conversation, parsed once into a typed :class:`GoldTrace`.

Every source format has an adapter ``(raw, record, language) -> GoldTrace``. The engine knows the
formats that are data layouts, not domain rules:

- ``events`` (default): a list of ``{event_type: user_utterance | agent_utterance | tool_call |
  tool_response, ...}`` (``utterance``; ``tool_name`` + ``params``; ``response``), as documented in
  docs/authoring.md;
- ``actions``: a list of tool calls ``{name, arguments, requestor?}`` with no words, the shape of
  tau2-bench's ``evaluation_criteria.actions`` (``requestor`` ``assistant``/``agent`` or ``user``).

Domain plugins add their own (``DomainPlugin.gold_adapters``; eva_airline's ``eva_trace`` resolves
person placeholders first). validate, the replay sides and scoring all read the same record.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

StepKind = Literal["user", "agent", "tool_call"]
Side = Literal["agent", "user"]


def resolve_pointer(doc: Any, pointer: str) -> Any:
    """Follow an RFC 6901 JSON Pointer (``''`` is the whole document).

    Raises KeyError (with the pointer) when a step is missing or not indexable.
    """
    if pointer == "":
        return doc
    node = doc
    for raw in pointer.lstrip("/").split("/"):
        step = raw.replace("~1", "/").replace("~0", "~")
        try:
            node = node[int(step)] if isinstance(node, list) else node[step]
        except (KeyError, IndexError, ValueError, TypeError):
            raise KeyError(pointer) from None
    return node


@dataclass(frozen=True)
class GoldStep:
    """One step of a gold conversation.

    ``kind`` ``user`` / ``agent``: a spoken line in ``text``; ``tool_call``: ``tool`` called with
    ``arguments`` by ``side``; ``result`` is the tool result the source recorded for that call
    (None when it recorded none).
    """

    kind: StepKind
    text: str = ""
    tool: str = ""
    arguments: Mapping[str, Any] = field(default_factory=dict)
    side: Side = "agent"
    result: Any = None


@dataclass(frozen=True)
class GoldTrace:
    """A gold conversation: ``steps`` in order; ``format`` names the adapter that read it."""

    steps: tuple[GoldStep, ...]
    format: str = "events"

    def __len__(self) -> int:
        return len(self.steps)

    def __iter__(self) -> Iterator[GoldStep]:
        return iter(self.steps)

    def tool_calls(self, side: Side | None = None) -> tuple[GoldStep, ...]:
        """The tool-call steps (of ``side`` only, when given), in order."""
        return tuple(s for s in self.steps if s.kind == "tool_call" and (side is None or s.side == side))

    def lines(self, kind: Literal["user", "agent"]) -> tuple[str, ...]:
        """The spoken lines of one speaker, in order."""
        return tuple(s.text for s in self.steps if s.kind == kind)

    def agent_turns(self) -> int:
        """Spoken agent turns: runs of steps holding an agent line, between user lines."""
        turns, spoke = 0, False
        for step in self.steps:
            if step.kind == "user":
                turns, spoke = turns + spoke, False
            elif step.kind == "agent":
                spoke = True
        return turns + spoke


def events_trace(raw: Any, record: Mapping[str, Any] | None = None, language: str = "en") -> GoldTrace:
    """Read the ``events`` format. A ``tool_response`` event becomes the ``result`` of the call
    before it. Raises TypeError when ``raw`` is not a list of mappings."""
    if not isinstance(raw, list):
        raise TypeError("a gold trace in the 'events' format is a list of events")
    steps: list[GoldStep] = []
    for event in raw:
        if not isinstance(event, Mapping):
            raise TypeError("every gold event is a mapping with an event_type")
        kind = event.get("event_type")
        if kind == "user_utterance":
            steps.append(GoldStep("user", text=str(event.get("utterance", ""))))
        elif kind == "agent_utterance":
            steps.append(GoldStep("agent", text=str(event.get("utterance", ""))))
        elif kind == "tool_call":
            params = event.get("params") or {}
            steps.append(
                GoldStep(
                    "tool_call",
                    tool=str(event.get("tool_name")),
                    arguments=params if isinstance(params, Mapping) else {},
                )
            )
        elif kind == "tool_response" and steps and steps[-1].kind == "tool_call" and steps[-1].result is None:
            last = steps[-1]
            steps[-1] = GoldStep(
                "tool_call",
                tool=last.tool,
                arguments=last.arguments,
                side=last.side,
                result=event.get("response"),
            )
    return GoldTrace(tuple(steps), "events")


_USER_REQUESTORS = frozenset({"user"})
_AGENT_REQUESTORS = frozenset({"assistant", "agent"})


def actions_trace(raw: Any, record: Mapping[str, Any] | None = None, language: str = "en") -> GoldTrace:
    """Read the ``actions`` format: tool calls only, each ``{name, arguments, requestor?}``
    (requestor ``assistant``/``agent`` -> agent side, ``user`` -> user side; default agent).
    Raises TypeError / ValueError for anything else."""
    if not isinstance(raw, list):
        raise TypeError("a gold trace in the 'actions' format is a list of tool calls")
    steps: list[GoldStep] = []
    for action in raw:
        if not isinstance(action, Mapping) or not isinstance(action.get("name"), str):
            raise TypeError("every gold action is a mapping with a string 'name'")
        requestor = str(action.get("requestor") or "assistant")
        if requestor not in _USER_REQUESTORS | _AGENT_REQUESTORS:
            raise ValueError(f"gold action {action['name']!r} has an unknown requestor {requestor!r}")
        args = action.get("arguments") or {}
        if not isinstance(args, Mapping):
            raise TypeError(f"gold action {action['name']!r} has arguments that are not a mapping")
        side: Side = "user" if requestor in _USER_REQUESTORS else "agent"
        steps.append(GoldStep("tool_call", tool=action["name"], arguments=dict(args), side=side))
    return GoldTrace(tuple(steps), "actions")


#: The formats every domain can use (a plugin's ``gold_adapters`` add to these).
CORE_ADAPTERS = {"events": events_trace, "actions": actions_trace}


class PerTrace:
    """Values derived from a gold trace (its replay, its turns), kept while that trace object lives
    and dropped with it, so a long process holds none for scenarios it let go. Each value is kept
    with the other ``inputs`` it was made from (compared by identity). Thread-safe."""

    def __init__(self) -> None:
        self._items: dict[int, tuple[weakref.ref[GoldTrace], tuple[Any, ...], Any]] = {}
        self._lock = threading.Lock()

    def get(self, trace: GoldTrace, inputs: tuple[Any, ...]) -> tuple[Any] | None:
        """``(value,)`` when one was kept for this very trace and inputs, else None."""
        with self._lock:
            hit = self._items.get(id(trace))
        if hit is None or hit[0]() is not trace or len(hit[1]) != len(inputs):
            return None
        if not all(a is b for a, b in zip(hit[1], inputs, strict=True)):
            return None
        return (hit[2],)

    def put(self, trace: GoldTrace, inputs: tuple[Any, ...], value: Any) -> None:
        key = id(trace)
        with self._lock:
            fresh = key not in self._items
            self._items[key] = (weakref.ref(trace), inputs, value)
        if fresh:
            weakref.finalize(trace, self._drop, key)

    def _drop(self, key: int) -> None:
        with self._lock:
            self._items.pop(key, None)

    def __len__(self) -> int:
        return len(self._items)
