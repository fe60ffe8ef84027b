"""Brains for examples/rtvi_bot.py (``--brain tests.domains.eva_airline.rtvi_brains:mistakes``) and
the same mistakes as a plain-protocol backend, for tests/domains/eva_airline/test_rtvi_agent.py."""

from __future__ import annotations

from typing import Any

from engine.core.model import Scenario
from engine.session.backends import BackendReply, SessionInfo, ToolCallRequest, TurnInfo, Usage
from engine.session.backends.replay import ReplayFactory

#: The scenario the mistakes are made in.
SCENARIO = "eva_airline__voluntary_date_change"
#: Its agent turn 1: a call with arguments that are not JSON, a tool that does not exist, then the
#: gold's call, all in one step (parallel); turn 3 (the rebooking) says nothing and calls nothing.
BROKEN = ToolCallRequest("bad-1", "get_reservation", '{"confirmation_number": "ZK3FFW", "last_name": ')
UNKNOWN = ToolCallRequest("bad-2", "lookup_everything", '{"what": "all"}')


def mistaken(reply: BackendReply, turn: TurnInfo) -> BackendReply:
    """The gold step ``reply`` of ``turn`` with the mistakes of that turn."""
    if turn.round == 0 and turn.index == 1:
        return BackendReply(reply.text, tool_calls=[BROKEN, UNKNOWN, *reply.tool_calls], usage=reply.usage)
    if turn.round == 0 and turn.index == 3:
        return BackendReply(usage=reply.usage)
    return reply


class MistakenAgent:
    """The plain-protocol agent making the mistakes (a built-in side's backend)."""

    name = "mistakes"

    def __init__(self, scenarios: dict[str, Scenario], info: SessionInfo) -> None:
        self.gold = ReplayFactory(scenarios)(info)

    async def respond(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], turn: TurnInfo):
        return mistaken(await self.gold.respond(messages, tools, turn), turn)


def mistakes(scenarios: dict[str, Scenario]) -> Any:
    """The RTVI bot's brain making the same mistakes (the bot's tool names through rtvi.yaml)."""
    import examples.rtvi_bot as bot

    gold = bot.gold_brain(scenarios)
    names = bot.load_tool_map(scenarios[SCENARIO].domain)

    async def brain(name: str, messages: list[dict[str, Any]], turn: TurnInfo) -> Any:
        step = await gold(name, messages, turn)
        engine_calls = [
            ToolCallRequest(c.call_id, names.engine_name(c.name), c.arguments) for c in step.calls
        ]
        reply = mistaken(BackendReply(step.text, tool_calls=engine_calls, usage=Usage()), turn)
        calls = [ToolCallRequest(c.call_id, names.bot_name(c.name), c.arguments) for c in reply.tool_calls]
        return bot.Step(reply.text, calls)

    return brain
