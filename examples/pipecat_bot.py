"""A pipecat bot as an evalctl agent (text mode): the scenario's prompt and tools in an
LLMContext, a context aggregator pair around an OpenAI-compatible LLM service.

    evalctl run specs/eva_airline --agent pipecat:examples/pipecat_bot.py:make_pipeline

The model is $BOT_MODEL (default gpt-4.1-mini) at $OPENAI_BASE_URL with $OPENAI_API_KEY.
"""

from __future__ import annotations

import os

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


def make_pipeline(session: InprocSession) -> Pipeline:
    """The bot's pipeline for one evalctl session."""
    llm = OpenAILLMService(
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
