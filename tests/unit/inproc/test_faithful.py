"""Issue #27 §4: an agent's mistakes reach evalctl through the in-process adapters as they do over
the plain protocol. One LLM script (malformed arguments, an unknown tool, parallel calls, an
empty reply, then a goodbye) is played by a fake OpenAI-compatible server on loopback to the
real pipecat and LiveKit packages (the example bots), to a ``python:`` agent making the same
calls, and to evalctl's own ``openai:`` agent; every run records the same tool calls (raw
arguments, never repaired), the same results and the same verdict."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from engine.run.runner import run
from engine.session.backends.bridge import InprocSession
from engine.session.backends.python_agent import ToolCaller, register_agent
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR
from tests.fake_llm import Answer, GoldLLM
from tests.runtime_helpers import run_options

pytest.importorskip("pipecat")
pytest.importorskip("livekit.plugins.openai")

REPO = Path(__file__).resolve().parents[3]
SCENARIO = "mock__cancel_order"
MALFORMED = '{"order_id": "O-100"'  # cut short: not JSON
SCRIPT = [
    Answer("Let me look.", (("c1", "get_order", MALFORMED), ("c2", "refund_everything", "{}"))),
    Answer(
        "", (("c3", "get_order", '{"order_id": "O-100"}'), ("c4", "cancel_order", '{"order_id":"O-100"}'))
    ),
    Answer(""),  # an empty reply
    Answer("Goodbye.", (("c5", "end_conversation", "{}"),)),
]


def _python_agent(session: InprocSession, tools: ToolCaller) -> Any:
    turns = iter(SCRIPT)

    async def turn(line: str) -> str | None:
        for answer in turns:  # one model step each, as the LLM script's
            if not answer.calls:
                return answer.text or None
            await tools.call_many([(name, args) for _, name, args in answer.calls], say=answer.text)
        return None

    return turn


AGENTS = {
    "openai": "openai:scripted",
    "pipecat": f"pipecat:{REPO}/examples/pipecat_bot.py:make_pipeline",
    "livekit": f"livekit:{REPO}/examples/livekit_bot.py:make_agent",
    "python": register_agent(_python_agent, "faithful_script"),
}


def _run(agent: str, out: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any, list[dict[str, Any]]]:
    with GoldLLM(steps=list(SCRIPT)) as llm:
        monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "local")
        opts = run_options(
            MOCK_SPEC_DIR,
            MOCK_DATA_ROOT,
            agent=agent,
            scenarios=(SCENARIO,),
            output_dir=out,
            progress=False,
            base_url=llm.base_url,
        )
        report = asyncio.run(run(opts))
        [(result, metrics)] = list(report.results())
        return result, metrics, llm.requests


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any, list[dict[str, Any]]]:
    with pytest.MonkeyPatch.context() as mp:
        return _run(AGENTS["openai"], tmp_path_factory.mktemp("openai"), mp)


def _calls(result: Any) -> list[tuple[str, str, Any]]:
    return [
        (c["name"], c["arguments"], c["result"])
        for c in result.tool_calls
        if c.get("side", "agent") == "agent"
    ]


def test_the_plain_protocol_reference_makes_each_mistake(reference: Any) -> None:
    result, _, _ = reference
    calls = _calls(result)
    assert [c[:2] for c in calls[:4]] == [(n, a) for answer in SCRIPT[:2] for _, n, a in answer.calls]
    assert calls[0][1] == MALFORMED  # the raw text, never repaired
    assert "error" in json.dumps(calls[0][2]).lower() and "error" in json.dumps(calls[1][2]).lower()
    assert result.stop_reason == "exit"


@pytest.mark.parametrize("kind", ["pipecat", "livekit", "python"])
def test_each_mistake_reaches_evalctl_as_over_the_plain_protocol(
    kind: str, reference: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ref_result, ref_metrics, ref_requests = reference
    result, metrics, requests = _run(AGENTS[kind], tmp_path, monkeypatch)
    assert _calls(result) == _calls(ref_result)
    assert result.stop_reason == ref_result.stop_reason
    assert metrics.is_successful == ref_metrics.is_successful
    assert metrics.signals == ref_metrics.signals
    agent_lines = [
        e["content"] for e in result.transcript if e["type"] == "utterance" and e["role"] == "agent"
    ]
    ref_lines = [
        e["content"] for e in ref_result.transcript if e["type"] == "utterance" and e["role"] == "agent"
    ]
    assert agent_lines == ref_lines
    if kind != "python":  # the adapters' LLM was asked once per model step, as the plain agent's
        assert len(requests) == len(ref_requests)
