"""A LiveKit Agents agent as an evalctl agent (text mode): the scenario's prompt as the agent's
instructions and an OpenAI-compatible LLM from the LiveKit openai plugin.

    evalctl run specs/eva_airline --agent livekit:examples/livekit_bot.py:make_agent

The model is $BOT_MODEL (default gpt-4.1-mini) at $OPENAI_BASE_URL with $OPENAI_API_KEY. The
sessions of one event loop share one HTTP client, as a server holding many calls would (a new
client costs a TLS context: ~80 ms a session), and that client is warmed once: LiveKit's
``AgentSession`` pre-warms its LLM at every start with a ``GET /models`` request, which a warm
shared client does not need (one request a session otherwise).
"""

from __future__ import annotations

import asyncio
import os

import openai as openai_client
from livekit.agents import Agent
from livekit.plugins import openai

from engine.session.backends.bridge import InprocSession

_CLIENTS: dict[asyncio.AbstractEventLoop, openai_client.AsyncClient] = {}
_WARMED: set[int] = set()  # id() of the shared clients already pre-warmed


def _client() -> openai_client.AsyncClient:
    loop = asyncio.get_running_loop()
    if loop not in _CLIENTS:
        _CLIENTS.clear()  # a client of a closed loop cannot be used again
        _WARMED.clear()
        _CLIENTS[loop] = openai_client.AsyncClient(
            api_key=os.environ.get("OPENAI_API_KEY", "unused"), base_url=os.environ.get("OPENAI_BASE_URL")
        )
    return _CLIENTS[loop]


class SharedClientLLM(openai.LLM):
    """The plugin's LLM on the shared client, pre-warmed once per client rather than per session."""

    async def _prewarm_impl(self) -> None:
        if id(self._client) not in _WARMED:
            _WARMED.add(id(self._client))
            await super()._prewarm_impl()


def make_agent(session: InprocSession) -> Agent:
    """The agent for one evalctl session (evalctl gives it the scenario's tools as proxies)."""
    llm = SharedClientLLM(model=os.environ.get("BOT_MODEL", "gpt-4.1-mini"), client=_client())
    return Agent(instructions=session.system_prompt, llm=llm)
