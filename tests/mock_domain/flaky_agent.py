"""A scripted flaky agent for the mock shop: an external ``ws://`` agent (docs/protocol.md) that
plays each scenario's gold conversation, except that for the scenarios in ``flaky`` it leaves
out every tool call in even trials (the DB stays as it was: the session fails). Deterministic:
trial k of a flaky scenario fails exactly when k is even."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import websockets

from engine.core.gold import GoldStep
from engine.domains.registry import plugins
from engine.spec.loader import load_domain
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR


def _turns(trace: list[GoldStep]) -> list[tuple[list[tuple[str, dict[str, Any]]], str]]:
    """The agent's turns of a gold trace: (tool calls, line) after each caller line."""
    turns: list[tuple[list[tuple[str, dict[str, Any]]], str]] = []
    for step in trace:
        if step.kind == "user":
            turns.append(([], ""))
        elif step.kind == "tool_call":
            turns[-1][0].append((step.tool, dict(step.arguments)))
        elif step.kind == "agent":
            turns[-1] = (turns[-1][0], (turns[-1][1] + " " + step.text).strip())
    return turns


class FlakyAgent:
    """Gold play, with the tool calls of ``flaky`` scenarios dropped in even trials; ``sessions``
    counts the (scenario, trial) sessions it served."""

    def __init__(self, flaky: set[str]) -> None:
        loaded = load_domain(MOCK_SPEC_DIR, MOCK_DATA_ROOT, plugins=plugins())
        self.scripts = {s.name: _turns(list(s.gold_trace or ())) for s in loaded.scenarios}
        self.flaky = flaky
        self.sessions: list[tuple[str, int]] = []

    async def handler(self, ws: Any) -> None:
        with contextlib.suppress(websockets.ConnectionClosed):
            await self._session(ws)

    async def _session(self, ws: Any) -> None:
        start = json.loads(await ws.recv())
        name, trial = start["scenario"]["name"], start["scenario"]["trial"]
        self.sessions.append((name, trial))
        fails = name in self.flaky and trial % 2 == 0
        await ws.send(json.dumps({"v": 1, "type": "session.ready", "id": "a0", "reply_to": start["id"]}))
        script = self.scripts.get(name, [])
        n = 0
        async for frame in ws:
            msg = json.loads(frame)
            if msg["type"] != "turn.request":
                return
            calls, line = script[msg["turn"]] if msg["turn"] < len(script) else ([], "")
            if fails:
                calls = [c for c in calls if c[0] in ("end_conversation", "transfer_to_agent")]
            if msg["turn"] >= len(script) - 1 and not any(c == "transfer_to_agent" for c, _ in calls):
                calls = [*calls, ("end_conversation", {})]
            for tool, params in calls:
                n += 1
                await ws.send(
                    json.dumps(
                        {
                            "v": 1,
                            "type": "tool.call",
                            "id": f"a{n}",
                            "reply_to": msg["id"],
                            "call_id": f"call_{n}",
                            "name": tool,
                            "arguments": json.dumps(params),
                        }
                    )
                )
                await ws.recv()  # the tool result
            n += 1
            await ws.send(
                json.dumps(
                    {"v": 1, "type": "turn.response", "id": f"a{n}", "reply_to": msg["id"], "text": line}
                )
            )


@contextlib.asynccontextmanager
async def serving(agent: FlakyAgent) -> AsyncIterator[str]:
    """Serve ``agent`` on loopback; yields its ``ws://`` URI."""
    async with websockets.serve(agent.handler, "127.0.0.1", 0) as server:
        yield f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}"
