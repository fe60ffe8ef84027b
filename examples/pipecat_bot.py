"""A pipecat bot as an evalctl agent (text mode): the scenario's prompt and tools in an
LLMContext, a context aggregator pair around an OpenAI-compatible LLM service.

    evalctl run specs/eva_airline --agent pipecat:examples/pipecat_bot.py:make_pipeline

The model is $BOT_MODEL (default gpt-4.1-mini) at $OPENAI_BASE_URL with $OPENAI_API_KEY. The
sessions of one event loop share one HTTP client, as a server holding many calls would (a new
client costs a TLS context: ~80 ms a session).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from openai import AsyncOpenAI
from pipecat.pipeline.pipeline import Pipeline
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.aggregators.llm_response_universal import (
    LLMContextAggregatorPair,
    LLMUserAggregatorParams,
)
from pipecat.services.openai.llm import OpenAILLMService
from pipecat.turns.user_turn_strategies import ExternalUserTurnStrategies

from engine.session.backends.bridge import InprocSession
from engine.session.backends.pipecat_agent import tools_schema

_CLIENTS: dict[asyncio.AbstractEventLoop, AsyncOpenAI] = {}


class SharedClientLLMService(OpenAILLMService):
    """OpenAILLMService with one AsyncOpenAI client per event loop (pipecat never closes it)."""

    def create_client(self, api_key: Any = None, base_url: Any = None, **kwargs: Any) -> AsyncOpenAI:
        loop = asyncio.get_running_loop()
        if loop not in _CLIENTS:
            _CLIENTS.clear()  # a client of a closed loop cannot be used again
            _CLIENTS[loop] = AsyncOpenAI(api_key=api_key, base_url=base_url)
        return _CLIENTS[loop]


def make_pipeline(session: InprocSession) -> Pipeline:
    """The bot's pipeline for one evalctl session."""
    llm = SharedClientLLMService(
        api_key=os.environ.get("OPENAI_API_KEY", "unused"),
        base_url=os.environ.get("OPENAI_BASE_URL"),
        settings=OpenAILLMService.Settings(
            model=os.environ.get("BOT_MODEL", "gpt-4.1-mini"), system_instruction=session.system_prompt
        ),
    )
    context = LLMContext(tools=tools_schema(session))
    # text mode: the caller's lines arrive as whole messages, so no voice turn detection
    user_params = LLMUserAggregatorParams(user_turn_strategies=ExternalUserTurnStrategies())
    aggregators = LLMContextAggregatorPair(context, user_params=user_params)
    return Pipeline([aggregators.user(), llm, aggregators.assistant()])
