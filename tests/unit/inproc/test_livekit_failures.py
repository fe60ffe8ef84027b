"""The hostile tester's findings on the ``livekit:`` backend, with the real livekit-agents
package: an ``Agent`` with no LLM, and an agent whose LLM call raises ``SystemExit``, are the
agent's FAIL (``agent_error``) at once, in one line, never a traceback nor the turn timeout."""

from __future__ import annotations

import asyncio
import json
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
    """The one scenario's result, the agent in this process (``isolate_agent_code=False``): a test
    that reads what the agent saw must not depend on whether a worker could be forked."""
    opts = run_options(
        MOCK_SPEC_DIR,
        MOCK_DATA_ROOT,
        agent=agent,
        scenarios=(SCENARIO,),
        output_dir=out,
        progress=False,
        turn_timeout_s=60.0,  # the failure must come at once, long before this
        isolate_agent_code=False,
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


def _agent_lines(out: Path) -> list[tuple[str, str]]:
    lines = (out / SCENARIO / "transcript.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    return [(r["role"], r["content"]) for r in rows if r["type"] == "utterance"]


def _greeting(how: str) -> Any:
    """An agent that greets from ``on_enter`` (``say`` or ``generate_reply``), then answers
    every caller line with "Goodbye.": its LLM greets when the context has no caller line."""

    def make(session: InprocSession) -> Any:
        from livekit.agents import Agent
        from livekit.plugins.openai import LLM

        class Greeting(Agent):
            async def on_enter(self) -> None:
                if how == "say":
                    await self.session.say("Hello, welcome to the airline!")
                else:
                    self.session.generate_reply(instructions="greet the caller")

            async def llm_node(self, chat_ctx: Any, tools: Any, model_settings: Any) -> Any:
                users = [i for i in chat_ctx.items if getattr(i, "role", None) == "user"]
                yield "Goodbye." if users else "Hi, this is the airline."

        return Greeting(instructions=session.system_prompt, llm=LLM(model="m", api_key="local"))

    return make


@pytest.mark.parametrize(
    ("how", "greeting"), [("say", "Hello, welcome to the airline!"), ("generate", "Hi, this is the airline.")]
)
def test_what_a_livekit_agent_says_from_on_enter_is_its_first_words(
    tmp_path: Path, how: str, greeting: str
) -> None:
    """Issue: on_enter's greeting was dropped (and with generate_reply the first caller line got
    an empty answer): it is said first in the agent's first turn, before its answer."""
    pytest.importorskip("livekit.plugins.openai")
    result = _result("livekit:" + register_agent(_greeting(how)).removeprefix("python:"), tmp_path)
    assert result.error is None
    agent = [text for role, text in _agent_lines(tmp_path) if role == "agent"]
    assert agent[0] == f"{greeting}\n\nGoodbye."
    assert all(text == "Goodbye." for text in agent[1:])


def _raising_on_enter(session: InprocSession) -> Any:
    from livekit.agents import Agent
    from livekit.plugins.openai import LLM

    class Boom(Agent):
        async def on_enter(self) -> None:
            raise RuntimeError("on_enter boom")

    return Boom(instructions=session.system_prompt, llm=LLM(model="m", api_key="local"))


def _raising_vad(session: InprocSession) -> Any:
    from livekit.agents import Agent
    from livekit.agents import vad as lkvad
    from livekit.plugins.openai import LLM

    class BadVAD(lkvad.VAD):
        def __init__(self) -> None:
            super().__init__(capabilities=lkvad.VADCapabilities(update_interval=0.1))

        def stream(self) -> Any:
            raise RuntimeError("my VAD stream failed")

    return Agent(
        instructions=session.system_prompt,
        llm=LLM(model="m", api_key="local"),
        vad=BadVAD(),
        turn_detection="vad",
    )


@pytest.mark.parametrize(
    ("factory", "said"),
    [
        (_raising_on_enter, "RuntimeError: on_enter boom"),
        (_raising_vad, "RuntimeError: my VAD stream failed"),
    ],
)
def test_a_livekit_agents_on_enter_or_vad_raising_is_a_one_line_fail(
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    factory: Any,
    said: str,
) -> None:
    """Issue: LiveKit logged the traceback and the verdict was PASS. The agent's own code raising
    (its on_enter; its own VAD, which LiveKit runs in text mode too) is its FAIL, in one line."""
    pytest.importorskip("livekit.plugins.openai")
    result = _result("livekit:" + register_agent(factory).removeprefix("python:"), tmp_path)
    assert result.stop_reason == "agent_error" and said in (result.error or "")
    assert "Traceback" not in capfd.readouterr().err
    assert not [r for r in caplog.records if r.exc_info]


def _saying_in_llm_node(session: InprocSession) -> Any:
    from livekit.agents import Agent
    from livekit.plugins.openai import LLM

    class Saying(Agent):
        async def llm_node(self, chat_ctx: Any, tools: Any, model_settings: Any) -> Any:
            self.session.say("One moment.")
            yield "Goodbye."

    return Saying(instructions=session.system_prompt, llm=LLM(model="m", api_key="local"))


def test_what_a_livekit_agent_says_mid_call_reaches_the_transcript(tmp_path: Path) -> None:
    """A ``session.say`` outside on_enter is the agent's words too (LiveKit plays it after the
    reply it was made in: evalctl says it first in the agent's next turn)."""
    pytest.importorskip("livekit.plugins.openai")
    result = _result("livekit:" + register_agent(_saying_in_llm_node).removeprefix("python:"), tmp_path)
    assert result.error is None
    agent = [text for role, text in _agent_lines(tmp_path) if role == "agent"]
    assert agent[0] == "Goodbye." and len(agent) >= 2
    assert all(text == "One moment.\n\nGoodbye." for text in agent[1:])
