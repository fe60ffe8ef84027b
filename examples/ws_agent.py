"""A plain-protocol agent (docs/protocol.md): any OpenAI-compatible chat model behind a WebSocket.

Your agent as its own process: evalctl connects to it (``--agent ws://HOST:PORT``), sends the
scenario's system prompt and tool schemas in ``session.start``, the caller's words in each
``turn.request``; the agent asks its model, forwards each tool call the model makes to the engine
(``tool.call``: the engine runs it on the scenario DB and answers ``tool.result``), and closes the
turn with ``turn.response``. Nothing here comes from evalctl: ``websockets`` and ``openai`` only.

    export OPENAI_BASE_URL=http://127.0.0.1:8000/v1 OPENAI_API_KEY=...
    python examples/ws_agent.py --model M --port 9000 &
    evalctl run specs/eva_airline --agent ws://127.0.0.1:9000
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
from collections.abc import Awaitable, Callable
from typing import Any

import websockets
from openai import AsyncOpenAI


class Session:
    """One connection: one scenario's conversation with the model."""

    def __init__(self, ws: Any, client: AsyncOpenAI, model: str) -> None:
        self.ws, self.client, self.model = ws, client, model
        self.ids = (f"a{n}" for n in itertools.count())
        self.messages: list[dict[str, Any]] = []
        self.tools: list[dict[str, Any]] = []

    async def send(self, kind: str, **fields: Any) -> str:
        msg_id = next(self.ids)
        await self.ws.send(json.dumps({"v": 1, "type": kind, "id": msg_id, **fields}))
        return msg_id

    async def run(self) -> None:
        start = json.loads(await self.ws.recv())
        self.messages = [{"role": "system", "content": start["system_prompt"]}]
        self.tools = start["tools"]
        await self.send("session.ready", reply_to=start["id"], backend=self.model)
        async for frame in self.ws:
            msg = json.loads(frame)
            if msg["type"] != "turn.request":  # session.end or error
                return
            await self.turn(msg)

    async def turn(self, request: dict[str, Any]) -> None:
        if request.get("utterance"):
            self.messages.append({"role": "user", "content": request["utterance"]})
        said: list[str] = []
        for _ in range(8):  # at most 8 model steps a turn
            reply = await self.client.chat.completions.create(
                model=self.model, messages=self.messages, tools=self.tools or None
            )
            message = reply.choices[0].message
            if message.content:
                said.append(message.content)
            calls = message.tool_calls or []
            self.messages.append(message.model_dump(exclude_none=True))
            ended = False
            for call in calls:  # the raw argument text goes to the engine as the model wrote it
                call_id = await self.send(
                    "tool.call",
                    reply_to=request["id"],
                    call_id=call.id,
                    name=call.function.name,
                    arguments=call.function.arguments,
                )
                result = json.loads(await self.ws.recv())
                assert result["type"] == "tool.result" and result["reply_to"] == call_id, result
                content = json.dumps(result["result"])
                self.messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
                ended = ended or bool(result["ended"])
            if not calls or ended:
                break
        await self.send("turn.response", reply_to=request["id"], text=" ".join(said))


def handler(model: str) -> Callable[[Any], Awaitable[None]]:
    """The connection handler: one session per connection, with ``model`` at the endpoint of
    ``OPENAI_BASE_URL`` (key: ``OPENAI_API_KEY``)."""
    client = AsyncOpenAI()

    async def handle(ws: Any) -> None:
        with contextlib.suppress(websockets.ConnectionClosed):
            await Session(ws, client, model).run()

    return handle


async def serve(host: str, port: int, model: str) -> None:
    async with websockets.serve(handler(model), host, port):
        print(f"ws_agent: listening on ws://{host}:{port} (model {model}); Ctrl-C stops it", flush=True)
        await asyncio.Future()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9000)
    parser.add_argument("--model", required=True)
    opts = parser.parse_args()
    asyncio.run(serve(opts.host, opts.port, opts.model))


if __name__ == "__main__":
    main()
