"""The replay backend: plays a scenario's gold trace, so a run needs no model.

Agent side: its turn ``k`` is the group of gold events after the ``k``-th user line (tool calls in
order, with the recorded params, then the agent's line). The last group also calls the domain's
harness tool (``end_conversation``) unless it already ends the call (``transfer_to_agent``). The
position decides, not what the user said, so a user going off script cannot derail it; past the
end of the trace it only ends the call.

User side: turn 0 is the starting utterance, turn ``k`` the ``k``-th gold user line; past the end
it hangs up with ``end_call``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.backends import BackendReply, SessionInfo, ToolCallRequest, TurnInfo, Usage
from engine.model import Scenario
from engine.protocol import END_CALL_TOOL


@dataclass(frozen=True)
class AgentTurn:
    """One agent turn of the gold trace: tool calls ``(name, params)`` in order, then ``text``."""

    calls: tuple[tuple[str, Mapping[str, Any]], ...] = ()
    text: str = ""


@dataclass(frozen=True)
class GoldScript:
    """A gold trace cut into turns: ``user_lines`` (first = opening line) and ``agent_turns``."""

    user_lines: tuple[str, ...]
    agent_turns: tuple[AgentTurn, ...]


def split_trace(trace: Sequence[Mapping[str, Any]], starting_utterance: str | None = None) -> GoldScript:
    """Cut gold events (``{event_type: user_utterance|agent_utterance|tool_call|tool_response}``)
    into turns. ``starting_utterance``, when given, replaces the first gold user line."""
    user_lines: list[str] = []
    groups: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for event in trace:
        kind = event.get("event_type")
        if kind == "user_utterance":
            user_lines.append(str(event.get("utterance", "")))
            current = {"calls": [], "texts": []}
            groups.append(current)
            continue
        if current is None:  # the agent speaks before any user line
            current = {"calls": [], "texts": []}
            groups.append(current)
        if kind == "agent_utterance":
            current["texts"].append(str(event.get("utterance", "")))
        elif kind == "tool_call":
            current["calls"].append((str(event["tool_name"]), dict(event.get("params") or {})))
    if starting_utterance:
        if user_lines:
            user_lines[0] = starting_utterance
        else:
            user_lines.append(starting_utterance)
    turns = tuple(AgentTurn(tuple(g["calls"]), " ".join(t for t in g["texts"] if t)) for g in groups)
    return GoldScript(tuple(user_lines), turns)


@dataclass
class ReplayBackend:
    """Plays one side of a :class:`GoldScript`. ``latency_s`` seconds are slept per model step
    (a benchmark knob standing in for model time); ``end_tool`` is the agent's hang-up tool and
    ``ending_tools`` every tool that ends the call by itself."""

    role: str
    script: GoldScript
    end_tool: str = "end_conversation"
    ending_tools: frozenset[str] = frozenset({"end_conversation"})
    latency_s: float = 0.0
    name: str = "replay"
    _served: set[int] = field(default_factory=set)

    async def respond(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], turn: TurnInfo
    ) -> BackendReply:
        if self.latency_s > 0:
            await asyncio.sleep(self.latency_s)
        usage = Usage(calls=1)
        if turn.round > 0 or turn.index in self._served:
            return BackendReply(usage=usage)  # the turn's tool calls are done: nothing more to say
        self._served.add(turn.index)
        if self.role == "user":
            return self._user_turn(turn, usage)
        return self._agent_turn(turn, usage)

    def _user_turn(self, turn: TurnInfo, usage: Usage) -> BackendReply:
        lines = self.script.user_lines
        if turn.index < len(lines):
            return BackendReply(text=lines[turn.index], usage=usage)
        return BackendReply(
            tool_calls=[ToolCallRequest(f"replay-u{turn.index}", END_CALL_TOOL, "{}")], usage=usage
        )

    def _agent_turn(self, turn: TurnInfo, usage: Usage) -> BackendReply:
        turns = self.script.agent_turns
        if turn.index >= len(turns):
            call = ToolCallRequest(f"replay-a{turn.index}-end", self.end_tool, "{}")
            return BackendReply(tool_calls=[call], usage=usage)
        gold = turns[turn.index]
        calls = [
            ToolCallRequest(f"replay-a{turn.index}-{i}", name, json.dumps(params, ensure_ascii=False))
            for i, (name, params) in enumerate(gold.calls)
        ]
        last = turn.index == len(turns) - 1 or turn.closing
        if last and not any(name in self.ending_tools for name, _ in gold.calls):
            calls.append(ToolCallRequest(f"replay-a{turn.index}-end", self.end_tool, "{}"))
        return BackendReply(text=gold.text, tool_calls=calls, usage=usage)


@dataclass(frozen=True)
class ReplayFactory:
    """Makes a :class:`ReplayBackend` per session, finding the scenario by ``scenario.name``."""

    scenarios: Mapping[str, Scenario]
    latency_s: float = 0.0

    def __call__(self, info: SessionInfo) -> ReplayBackend:
        name = str(info.scenario.get("name", ""))
        scenario = self.scenarios.get(name)
        if scenario is None:
            raise LookupError(f"replay has no scenario named {name!r}")
        if scenario.gold_trace is None:
            raise LookupError(f"scenario {name!r} has no gold trace to replay")
        start = scenario.user.starting_utterance or None
        script = split_trace(scenario.gold_trace, start)
        harness = [t.name for t in scenario.tools.tools if t.kind == "harness"]
        ending = frozenset(t.name for t in scenario.tools.tools if t.kind in ("harness", "system"))
        return ReplayBackend(
            role=info.role,
            script=script,
            end_tool=harness[0] if harness else "end_conversation",
            ending_tools=ending or frozenset({"end_conversation"}),
            latency_s=self.latency_s,
        )
