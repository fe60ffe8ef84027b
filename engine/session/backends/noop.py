"""The ``noop`` backend: a baseline side that does nothing, to show what a score of nothing is.

As the agent it greets and hangs up at once with the scenario's hang-up tool (the tool its table
declares ``ends_call: exit``; ``end_conversation`` when the scenario is unknown): no other tool call,
so the final DB is the initial DB. A domain's noop floor is the share of scenarios whose expected
DB is their initial DB. As the user it hangs up with ``end_call`` on its first turn.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine.core.model import Scenario
from engine.core.protocol import END_CALL_TOOL
from engine.session.backends import BackendReply, SessionInfo, ToolCallRequest, TurnInfo, Usage

GREETING = "Hello, thank you for calling. Goodbye."


@dataclass
class NoopBackend:
    """One session's noop side: on round 0 of every turn, the agent says :data:`GREETING` (first
    turn only) and calls ``end_tool``; the user calls ``end_call``. Nothing on later rounds."""

    role: str
    end_tool: str = "end_conversation"
    name: str = "noop"

    async def respond(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], turn: TurnInfo
    ) -> BackendReply:
        usage = Usage(calls=1)
        if turn.round > 0:
            return BackendReply(usage=usage)
        tool = END_CALL_TOOL if self.role == "user" else self.end_tool
        text = GREETING if self.role == "agent" and turn.index == 0 else ""
        call = ToolCallRequest(f"noop-{turn.index}", tool, "{}")
        return BackendReply(text=text, tool_calls=[call], usage=usage)


@dataclass(frozen=True)
class NoopFactory:
    """Makes a :class:`NoopBackend` per session; ``scenarios`` (name -> Scenario) give each
    scenario's hang-up tool."""

    scenarios: Mapping[str, Scenario]

    def __call__(self, info: SessionInfo) -> NoopBackend:
        scenario = self.scenarios.get(str(info.scenario.get("name", "")))
        hangup = [t.name for t in scenario.tools.tools if t.ends_call == "exit"] if scenario else []
        return NoopBackend(info.role, hangup[0] if hangup else "end_conversation")
