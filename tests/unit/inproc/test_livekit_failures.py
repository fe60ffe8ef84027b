"""The hostile tester's findings on the ``livekit:`` backend, with the real livekit-agents
package: an ``Agent`` with no LLM, and an agent whose LLM call raises ``SystemExit``, are the
agent's FAIL (``agent_error``) at once, in one line, never a traceback nor the turn timeout."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from engine.run.runner import run
from engine.session.backends.bridge import InprocSession
from engine.session.backends.python_agent import register_agent
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR
from tests.runtime_helpers import run_options

pytest.importorskip("livekit.agents")

SCENARIO = "mock__cancel_order"


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


def _no_llm(session: InprocSession) -> Any:
    from livekit.agents import Agent

    return Agent(instructions=session.system_prompt)


def test_a_livekit_agent_with_no_llm_is_a_one_line_fail(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    result = _result("livekit:" + register_agent(_no_llm).removeprefix("python:"), tmp_path)
    assert result.stop_reason == "agent_error" and "no LLM" in (result.error or "")
    assert "Traceback" not in capfd.readouterr().err
    assert not [r for r in caplog.records if r.exc_info]


def _exiting_llm(session: InprocSession) -> Any:
    from livekit.agents import Agent
    from livekit.plugins.openai import LLM

    class Exiting(Agent):
        async def llm_node(self, chat_ctx: Any, tools: Any, model_settings: Any) -> Any:
            raise SystemExit("the LLM call quit")

    return Exiting(instructions=session.system_prompt, llm=LLM(model="m", api_key="local"))


def test_a_livekit_llm_call_raising_system_exit_is_the_agents_fail(tmp_path: Path) -> None:
    pytest.importorskip("livekit.plugins.openai")
    result = _result("livekit:" + register_agent(_exiting_llm).removeprefix("python:"), tmp_path)
    assert result.stop_reason == "agent_error"
    assert "SystemExit: the LLM call quit" in (result.error or "")


def _recording(seen: list[Any]) -> Any:
    def make(session: InprocSession) -> Any:
        from livekit.agents import Agent
        from livekit.plugins.openai import LLM

        class Recording(Agent):
            async def llm_node(self, chat_ctx: Any, tools: Any, model_settings: Any) -> Any:
                seen.append(self.session)
                yield "Goodbye."

        return Recording(instructions=session.system_prompt, llm=LLM(model="m", api_key="local"))

    return make


def test_a_livekit_agent_runs_in_a_text_mode_session(tmp_path: Path) -> None:
    """No VAD, no turn detector, no interruptions, no preemptive generation, no user-away timer:
    the voice-call machinery a text session has no audio for (issue #27 item 5, the cost)."""
    pytest.importorskip("livekit.plugins.openai")
    seen: list[Any] = []
    result = _result("livekit:" + register_agent(_recording(seen)).removeprefix("python:"), tmp_path)
    assert result.agent_turns >= 1 and result.error is None
    session = seen[0]
    assert session.vad is None
    assert session.options.turn_handling["turn_detection"] == "manual"
    assert session.options.interruption["enabled"] is False
    assert session.options.preemptive_generation["enabled"] is False
    assert session.options.user_away_timeout is None
