"""Fake agents for ``evalctl load``: an in-process ``python:`` agent that plays each scenario's gold
conversation after ``latency_s`` seconds per reply, and, with ``fails_above=N``, answers every
turn of a session that started while more than N sessions were open with an exception (the
agent's FAIL, stop reason ``agent_error``): an agent that breaks under load.

A session counts as open from its factory call until its last gold turn was answered (or it
raised). A step with at most N callers can therefore never fail; a step with more fails the
sessions that started past N, while the earlier ones still wait on their first reply."""

from __future__ import annotations

import asyncio
import contextlib
import json
import multiprocessing
import sys
from pathlib import Path
from typing import Any

import websockets

from engine.core.gold import GoldStep
from engine.domains.registry import plugins
from engine.session.backends.bridge import InprocSession
from engine.session.backends.python_agent import ToolCaller, register_agent
from engine.spec.loader import load_domain

ENDING = ("end_conversation", "transfer_to_agent")
Turn = tuple[list[tuple[str, dict[str, Any]]], str]


def gold_turns(trace: list[GoldStep]) -> list[Turn]:
    """The agent's turns of a gold trace: (tool calls, words) after each caller line."""
    turns: list[Turn] = []
    for step in trace:
        if step.kind == "user":
            turns.append(([], ""))
        elif step.kind == "tool_call" and turns:
            turns[-1][0].append((step.tool, dict(step.arguments)))
        elif step.kind == "agent" and turns:
            turns[-1] = (turns[-1][0], (turns[-1][1] + " " + step.text).strip())
    return turns


class GoldAgent:
    """Gold play after ``latency_s`` per reply; ``fails_above``: see the module docstring.
    ``peak`` is the most sessions open at once; :meth:`register` gives the ``--agent`` spec. The
    counts live in shared memory: the run's supervised worker (``engine.run.workers.isolated``),
    forked after this object was made, updates the same counts this process reads."""

    def __init__(
        self, spec_dir: Path, data_root: Path | None, latency_s: float, fails_above: int | None = None
    ):
        loaded = load_domain(spec_dir, data_root, plugins=plugins())
        self.scripts = {s.name: gold_turns(list(s.gold_trace or ())) for s in loaded.scenarios}
        self.latency_s = latency_s
        self.fails_above = fails_above
        self._counts = multiprocessing.Array("i", 2)  # open, peak

    @property
    def open(self) -> int:
        return int(self._counts[0])

    @property
    def peak(self) -> int:
        return int(self._counts[1])

    def _opened(self, by: int) -> int:
        """Count a session opened (``by`` 1) or closed (-1); the sessions open now."""
        with self._counts.get_lock():
            self._counts[0] += by
            self._counts[1] = max(self._counts[1], self._counts[0])
            return int(self._counts[0])

    def register(self, name: str) -> str:
        return register_agent(self.make_agent, name)

    def make_agent(self, session: InprocSession, tools: ToolCaller) -> Any:
        script = self.scripts.get(str(session.scenario.get("name")), [])
        now_open = self._opened(1)
        overloaded = self.fails_above is not None and now_open > self.fails_above
        turns = iter(range(len(script) + 100))
        state = {"open": True}

        def close() -> None:
            if state["open"]:
                state["open"] = False
                self._opened(-1)

        async def turn(line: str) -> str | None:
            k = next(turns)
            await asyncio.sleep(self.latency_s)
            if overloaded:
                close()
                raise RuntimeError("overloaded: too many sessions at once")
            calls, words = script[k] if k < len(script) else ([], "")
            last = k >= len(script) - 1
            ending = [c for c in calls if c[0] in ENDING]
            for name, arguments in calls:
                if name not in ENDING:
                    await tools.call(name, arguments)
            if last:
                close()
            if ending or last:  # the words are said with the call that ends the session
                name, arguments = ending[0] if ending else ("end_conversation", {})
                await tools.call(name, arguments, say=words or "Goodbye.")
                return ""
            return words

        return turn


class GoldWsAgent:
    """The same gold play as an external ``ws://`` agent (docs/protocol.md), for a run whose CPU
    should not include the agent's: ``python -m tests.load_agents SPEC_DIR DATA_ROOT LATENCY_S``
    serves it on loopback and prints its URI."""

    def __init__(self, spec_dir: Path, data_root: Path | None, latency_s: float) -> None:
        loaded = load_domain(spec_dir, data_root, plugins=plugins())
        self.scripts = {s.name: gold_turns(list(s.gold_trace or ())) for s in loaded.scenarios}
        self.latency_s = latency_s

    async def handler(self, ws: Any) -> None:
        with contextlib.suppress(websockets.ConnectionClosed):
            start = json.loads(await ws.recv())
            script = self.scripts.get(start["scenario"]["name"], [])
            await ws.send(json.dumps({"v": 1, "type": "session.ready", "id": "a0", "reply_to": start["id"]}))
            n = 0
            async for frame in ws:
                msg = json.loads(frame)
                if msg["type"] != "turn.request":
                    return
                await asyncio.sleep(self.latency_s)
                k = msg["turn"]
                calls, words = script[k] if k < len(script) else ([], "")
                if k >= len(script) - 1 and not any(name in ENDING for name, _ in calls):
                    calls = [*calls, ("end_conversation", {})]
                for name, arguments in calls:
                    n += 1
                    call = {"v": 1, "type": "tool.call", "id": f"a{n}", "reply_to": msg["id"]}
                    call.update(call_id=f"call_{n}", name=name, arguments=json.dumps(arguments))
                    await ws.send(json.dumps(call))
                    await ws.recv()  # the tool result
                n += 1
                reply = {"v": 1, "type": "turn.response", "id": f"a{n}", "reply_to": msg["id"], "text": words}
                await ws.send(json.dumps(reply))


async def _serve(agent: GoldWsAgent) -> None:
    async with websockets.serve(agent.handler, "127.0.0.1", 0, max_queue=None) as server:
        print(f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}", flush=True)
        await asyncio.Future()


if __name__ == "__main__":
    spec, root, latency = sys.argv[1:4]
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(GoldWsAgent(Path(spec), Path(root), float(latency))))
