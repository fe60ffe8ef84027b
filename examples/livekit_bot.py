"""A LiveKit Agents agent as an evalctl agent (text mode): the scenario's prompt as the agent's
instructions and an OpenAI-compatible LLM from the LiveKit openai plugin.

    evalctl run specs/eva_airline --agent livekit:examples/livekit_bot.py:make_agent

The model is $BOT_MODEL (default gpt-4.1-mini) at $OPENAI_BASE_URL with $OPENAI_API_KEY.
"""

from __future__ import annotations

import os

from livekit.agents import Agent
from livekit.plugins import openai

from engine.session.backends.bridge import InprocSession


def make_agent(session: InprocSession) -> Agent:
    """The agent for one evalctl session (evalctl gives it the scenario's tools as proxies)."""
    llm = openai.LLM(
        model=os.environ.get("BOT_MODEL", "gpt-4.1-mini"),
        base_url=os.environ.get("OPENAI_BASE_URL"),
        api_key=os.environ.get("OPENAI_API_KEY", "unused"),
    )
    return Agent(instructions=session.system_prompt, llm=llm)
