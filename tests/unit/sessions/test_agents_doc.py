"""docs/agents.md's examples, run as the doc says on the mock shop against a scripted
chat-completions endpoint: examples/ws_agent.py's handler (in this process) as ``--agent ws://``,
``--agent openai:MODEL --base-url``, and the in-process examples (examples/python_agent.py,
examples/pipecat_bot.py, examples/livekit_bot.py: the real pipecat and LiveKit packages, streamed
answers) as ``--agent python:`` / ``pipecat:`` / ``livekit:``. Each reaches the engine with the
model's calls and ends the call. The RTVI example bot is run on all 50 eva scenarios by
tests/domains/eva_airline/test_rtvi_agent.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import websockets

from engine.run.runner import run
from examples import ws_agent
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR, REPO
from tests.fake_llm import Answer, GoldLLM
from tests.runtime_helpers import ScriptedOpenAI, Step, completion, run_options

SCENARIO = "mock__cancel_order"
DOC = REPO / "docs" / "agents.md"


def route(body: dict[str, Any]) -> Step:
    """A model that looks the order up on the caller's second line and hangs up on the third."""
    messages = body["messages"]
    if messages[-1]["role"] == "tool":
        return Step(completion("Done."))
    callers = sum(1 for m in messages if m["role"] == "user")
    if callers == 2:
        return Step(completion("Let me look.", [("c1", "get_order", '{"order_id": "O-100"}')]))
    if callers >= 3:
        return Step(completion("Goodbye.", [("c2", "end_conversation", "{}")]))
    return Step(completion("How can I help?"))


async def _one(tmp_path: Path, **kwargs: Any) -> Any:
    opts = run_options(
        MOCK_SPEC_DIR, MOCK_DATA_ROOT, scenarios=(SCENARIO,), output_dir=tmp_path, progress=False, **kwargs
    )
    [(result, _)] = list((await run(opts)).results())
    return result


@pytest.mark.parametrize("how", ["ws", "openai"])
async def test_the_docs_examples_run(how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with ScriptedOpenAI([], route=route) as llm:
        if how == "ws":
            monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
            async with websockets.serve(ws_agent.handler("scripted"), "127.0.0.1", 0) as server:
                port = server.sockets[0].getsockname()[1]
                result = await _one(tmp_path, agent=f"ws://127.0.0.1:{port}")
            assert "--agent ws://127.0.0.1:9000" in DOC.read_text()
        else:
            result = await _one(tmp_path, agent="openai:scripted", base_url=llm.base_url)
            assert "--agent openai:" in DOC.read_text()
    assert result.stop_reason == "exit"
    assert [(c["name"], c["arguments"]) for c in result.tool_calls] == [
        ("get_order", '{"order_id": "O-100"}'),
        ("end_conversation", "{}"),
    ]


class _Routed(GoldLLM):
    """The fake endpoint answering (streamed or not) as :func:`route` does."""

    def answer(self, body: dict[str, Any], index: int) -> Answer:
        message = route(body).body["choices"][0]["message"]  # type: ignore[index]
        calls = tuple(
            (c["id"], c["function"]["name"], c["function"]["arguments"])
            for c in message.get("tool_calls") or ()
        )
        return Answer(message.get("content") or "", calls)


INPROC = {
    "python": ("python:examples/python_agent.py:make_agent", "openai"),
    "pipecat": ("pipecat:examples/pipecat_bot.py:make_pipeline", "pipecat"),
    "livekit": ("livekit:examples/livekit_bot.py:make_agent", "livekit.plugins.openai"),
}


@pytest.mark.parametrize("how", sorted(INPROC))
async def test_the_docs_inprocess_examples_run(
    how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec, needs = INPROC[how]
    pytest.importorskip(needs)
    assert f"--agent {spec}" in DOC.read_text()  # the command the doc gives
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.chdir(REPO)  # the doc's paths are relative to the repository
    with _Routed() as llm:
        monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
        result = await _one(tmp_path, agent=spec)
        assert llm.requests, "the example never asked the model"
    assert result.stop_reason == "exit"
    assert [(c["name"], c["arguments"]) for c in result.tool_calls] == [
        ("get_order", '{"order_id": "O-100"}'),
        ("end_conversation", "{}"),
    ]
