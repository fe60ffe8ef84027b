"""The hostile tester's findings on the ``pipecat:`` backend, with the real pipecat package: an
LLM service that cannot connect is the agent's FAIL with pipecat's error text at once (its
``ErrorFrame``), not silence until the turn timeout; a factory that returns no pipeline is a
one-line FAIL (an ``async def`` factory is awaited), never a traceback; and pipecat's import
banner stays off unless ``EVALCTL_PIPECAT_LOG=1``."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from engine.run.runner import run
from engine.session.backends.bridge import InprocSession
from engine.session.backends.python_agent import register_agent
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR, REPO
from tests.runtime_helpers import run_options

pytest.importorskip("pipecat")

SCENARIO = "mock__cancel_order"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again: nothing listens there


def _unreachable_llm(session: InprocSession) -> Any:
    """A pipeline whose OpenAI service points at a port nothing listens on (no retries)."""
    from openai import AsyncOpenAI
    from pipecat.pipeline.pipeline import Pipeline
    from pipecat.processors.aggregators.llm_context import LLMContext
    from pipecat.processors.aggregators.llm_response_universal import (
        LLMContextAggregatorPair,
        LLMUserAggregatorParams,
    )
    from pipecat.services.openai.llm import OpenAILLMService
    from pipecat.turns.user_turn_strategies import ExternalUserTurnStrategies

    from engine.session.backends.pipecat_agent import tools_schema

    url = f"http://127.0.0.1:{_closed_port()}/v1"

    class Unreachable(OpenAILLMService):
        def create_client(self, api_key: Any = None, base_url: Any = None, **kwargs: Any) -> AsyncOpenAI:
            return AsyncOpenAI(api_key="local", base_url=url, max_retries=0)

    llm = Unreachable(api_key="local", settings=OpenAILLMService.Settings(model="m"))
    user = LLMUserAggregatorParams(user_turn_strategies=ExternalUserTurnStrategies())
    pair = LLMContextAggregatorPair(LLMContext(tools=tools_schema(session)), user_params=user)
    return Pipeline([pair.user(), llm, pair.assistant()])


async def _async_unreachable(session: InprocSession) -> Any:
    return _unreachable_llm(session)


def _result(agent: str, out: Path) -> Any:
    opts = run_options(
        MOCK_SPEC_DIR,
        MOCK_DATA_ROOT,
        agent=agent,
        scenarios=(SCENARIO,),
        output_dir=out,
        progress=False,
        turn_timeout_s=60.0,  # the failure must come at once, long before this
    )
    [(result, _)] = list(asyncio.run(run(opts)).results())
    return result


@pytest.mark.parametrize("factory", [_unreachable_llm, _async_unreachable])
def test_an_llm_service_that_cannot_connect_is_an_agent_error_at_once(factory: Any, tmp_path: Path) -> None:
    result = _result("pipecat:" + register_agent(factory).removeprefix("python:"), tmp_path)
    assert result.stop_reason == "agent_error" and result.error_source is None
    assert "PipelineError" in (result.error or "") and "Connection error" in result.error


def _returns(value: Any) -> Any:
    def make(session: InprocSession) -> Any:
        return value

    return make


async def _async_none(session: InprocSession) -> None:
    return None


@pytest.mark.parametrize(
    ("factory", "named"),
    [
        (_returns(None), "NoneType"),
        (_returns("a pipeline"), "str"),
        (_returns([1, 2]), "a list that is not of processors"),
        (_async_none, "NoneType"),  # awaited: its result, not the coroutine, is named
    ],
)
def test_a_factory_returning_no_pipeline_is_a_one_line_fail(
    factory: Any,
    named: str,
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    result = _result("pipecat:" + register_agent(factory).removeprefix("python:"), tmp_path)
    assert result.stop_reason == "agent_error"
    assert f"the factory returned {named}, not a Pipeline" in (result.error or "")
    assert "Traceback" not in capfd.readouterr().err
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize(("env", "banner"), [({}, False), ({"EVALCTL_PIPECAT_LOG": "1"}, True)])
def test_the_pipecat_banner_is_off_unless_asked_for(env: dict[str, str], banner: bool) -> None:
    code = (
        "from engine.session.backends.rtvi_wire import encode_frame, envelope\n"
        "encode_frame(envelope('x', '1', {}))"
    )
    environ = {k: v for k, v in os.environ.items() if k != "EVALCTL_PIPECAT_LOG"}
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env={**environ, "PYTHONPATH": str(REPO), **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert ("Pipecat 1.14" in done.stderr) is banner, done.stderr
