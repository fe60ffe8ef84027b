"""A Python callable as an evalctl agent: an OpenAI-compatible chat model and its tool loop,
with the engine running every tool call.

    evalctl run specs/eva_airline --agent python:examples/python_agent.py:make_agent

The model is $BOT_MODEL (default gpt-4.1-mini) at $OPENAI_BASE_URL with $OPENAI_API_KEY. Each
model response is one step: its tool calls go to the engine as one batch with the model's raw
argument text (never parsed here), their results go back to the model, and a response without
calls ends the turn. The sessions of one event loop share one HTTP client.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from openai import AsyncOpenAI

from engine.session.backends.bridge import InprocSession
from engine.session.backends.python_agent import AgentTurn, ToolCaller

_CLIENTS: dict[asyncio.AbstractEventLoop, AsyncOpenAI] = {}
MAX_STEPS = 8  # model responses per caller line


def _client() -> AsyncOpenAI:
    loop = asyncio.get_running_loop()
    if loop not in _CLIENTS:
        _CLIENTS.clear()  # a client of a closed loop cannot be used again
        _CLIENTS[loop] = AsyncOpenAI(
            api_key=os.environ.get("OPENAI_API_KEY", "unused"), base_url=os.environ.get("OPENAI_BASE_URL")
        )
    return _CLIENTS[loop]


def make_agent(session: InprocSession, tools: ToolCaller) -> AgentTurn:
    """The agent for one evalctl session: returns the coroutine answering each caller line."""
    model = os.environ.get("BOT_MODEL", "gpt-4.1-mini")
    chat: list[Any] = [{"role": "system", "content": session.system_prompt}]

    async def turn(caller_line: str) -> str:
        chat.append({"role": "user", "content": caller_line})
        for _ in range(MAX_STEPS):
            kwargs: dict[str, Any] = {"tools": session.tools} if session.tools else {}
            response = await _client().chat.completions.create(model=model, messages=chat, **kwargs)
            message = response.choices[0].message
            calls = message.tool_calls or []
            chat.append(message.model_dump(exclude_none=True))
            if not calls:
                return message.content or ""
            results = await tools.call_many(
                [(c.function.name, c.function.arguments) for c in calls], say=message.content or ""
            )
            for call, result in zip(calls, results, strict=True):
                chat.append({"role": "tool", "tool_call_id": call.id, "content": result})
        return ""

    return turn
