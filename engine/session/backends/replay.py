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
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.core.gold import GoldTrace, PerTrace
from engine.core.model import Scenario
from engine.core.protocol import END_CALL_TOOL
from engine.session.backends import BackendReply, SessionInfo, ToolCallRequest, TurnInfo, Usage


@dataclass(frozen=True)
class AgentTurn:
    """One turn of one side in the gold trace: tool calls ``(name, params)`` in order, then ``text``."""

    calls: tuple[tuple[str, Mapping[str, Any]], ...] = ()
    text: str = ""


@dataclass(frozen=True)
class GoldScript:
    """A gold trace cut into turns: ``user_lines`` (first = opening line), ``agent_turns`` and
    ``user_calls`` (the user side's tool calls per user turn; empty tuples when it has none)."""

    user_lines: tuple[str, ...]
    agent_turns: tuple[AgentTurn, ...]
    user_calls: tuple[tuple[tuple[str, Mapping[str, Any]], ...], ...] = ()


def split_trace(
    trace: GoldTrace, starting_utterance: str | None = None, *, user_first: bool = True
) -> GoldScript:
    """Cut a gold trace into turns. Every user line starts a user turn; the user side's tool calls
    join the user turn in progress (or start one); agent lines and agent tool calls form the agent
    turn after it. ``user_first`` says who opens: an empty turn is put first when the trace starts
    with the other side, and an empty agent turn last when the trace ends with the user's turn (so
    the agent hangs up after it). ``starting_utterance``, when given, replaces the first user line."""
    users: list[dict[str, Any]] = []
    agents: list[dict[str, Any]] = []
    order: list[str] = []  # side of each group, in order
    for step in trace.steps:
        side = (
            "user" if step.kind == "user" or (step.kind == "tool_call" and step.side == "user") else "agent"
        )
        new_group = not order or order[-1] != side or step.kind == "user"
        if new_group:
            if not order and side != ("user" if user_first else "agent"):
                (users if user_first else agents).append({"calls": [], "texts": []})
                order.append("user" if user_first else "agent")
            if order and order[-1] == side:  # two user lines in a row: an empty agent turn between
                (agents if side == "user" else users).append({"calls": [], "texts": []})
                order.append("agent" if side == "user" else "user")
            (users if side == "user" else agents).append({"calls": [], "texts": []})
            order.append(side)
        group = (users if side == "user" else agents)[-1]
        if step.kind == "tool_call":
            group["calls"].append((step.tool, dict(step.arguments)))
        else:
            group["texts"].append(step.text)
    if order and order[-1] == "user":  # the agent hangs up after the user's last actions, not before
        agents.append({"calls": [], "texts": []})
    user_lines = [" ".join(t for t in g["texts"] if t) for g in users]
    if starting_utterance:
        if user_lines:
            user_lines[0] = starting_utterance
        else:
            user_lines.append(starting_utterance)
            users.append({"calls": [], "texts": []})
    turns = tuple(AgentTurn(tuple(g["calls"]), " ".join(t for t in g["texts"] if t)) for g in agents)
    return GoldScript(tuple(user_lines), turns, tuple(tuple(g["calls"]) for g in users))


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
            gold = self.script.user_calls[turn.index] if turn.index < len(self.script.user_calls) else ()
            calls = [
                ToolCallRequest(f"replay-u{turn.index}-{i}", name, json.dumps(params, ensure_ascii=False))
                for i, (name, params) in enumerate(gold)
            ]
            return BackendReply(text=lines[turn.index], tool_calls=calls, usage=usage)
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


_SCRIPTS = PerTrace()


def gold_script(scenario: Scenario) -> GoldScript:
    """``scenario``'s gold trace cut into turns (:func:`split_trace`), once per scenario for both
    sides and every trial (kept while the trace lives)."""
    trace = scenario.gold_trace
    assert trace is not None
    start = scenario.user.starting_utterance or None
    inputs = (start, scenario.user_speaks_first)
    hit = _SCRIPTS.get(trace, inputs)
    if hit is not None:
        return hit[0]
    made = split_trace(trace, start, user_first=scenario.user_speaks_first)
    _SCRIPTS.put(trace, inputs, made)
    return made


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
        script = gold_script(scenario)
        hangup = [t.name for t in scenario.tools.tools if t.ends_call == "exit"]
        ending = frozenset(t.name for t in scenario.tools.tools if t.ends_call)
        return ReplayBackend(
            role=info.role,
            script=script,
            end_tool=hangup[0] if hangup else "end_conversation",
            ending_tools=ending or frozenset({"end_conversation"}),
            latency_s=self.latency_s,
        )
