"""The model tokens of a ``pipecat:`` or ``livekit:`` agent are the ones its LLM server reported
(before: recorded as 0, and ``compare`` printed ``agent: 4900+490 -> 0+0``): the example bots
against the fake OpenAI-compatible server on loopback, which reports 10 prompt and 5 completion
tokens on every streamed answer; the ``openai:`` agent's record is the reference. A server that
reports none leaves the tokens unknown (``unreported``), never 0."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from engine.domains.registry import plugins
from engine.results.compare import compare_runs, render_text
from engine.run.runner import run
from engine.spec.loader import load_domain
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR
from tests.fake_llm import USAGE, GoldLLM
from tests.runtime_helpers import run_options

pytest.importorskip("pipecat")
pytest.importorskip("livekit.plugins.openai")

REPO = Path(__file__).resolve().parents[3]
SCENARIO = "mock__cancel_order"
AGENTS = {
    "openai": "openai:gold",
    "pipecat": f"pipecat:{REPO}/examples/pipecat_bot.py:make_pipeline",
    "livekit": f"livekit:{REPO}/examples/livekit_bot.py:make_agent",
}


def _run(agent: str, out: Path, monkeypatch: pytest.MonkeyPatch, usage: bool = True) -> tuple[Any, int]:
    scenarios = load_domain(MOCK_SPEC_DIR, MOCK_DATA_ROOT, plugins=plugins()).scenarios
    with GoldLLM(scenarios, usage=usage) as llm:
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
        assert not report.scoring_errors, report.scoring_errors
        [(_, metrics)] = list(report.results())
        return metrics, len(llm.requests)


@pytest.mark.parametrize("name", ["openai", "pipecat", "livekit"])
def test_the_tokens_are_what_the_server_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    metrics, requests = _run(AGENTS[name], tmp_path / name, monkeypatch)
    agent = metrics.usage["agent"]
    assert metrics.is_successful is True and requests > 0
    assert agent.calls == requests and agent.unreported == 0 and agent.tokens_known
    assert agent.prompt_tokens == USAGE["prompt_tokens"] * requests
    assert agent.completion_tokens == USAGE["completion_tokens"] * requests


@pytest.mark.parametrize("name", ["pipecat", "livekit"])
def test_tokens_a_server_never_reported_are_unknown_not_0(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    metrics, requests = _run(AGENTS[name], tmp_path / "quiet", monkeypatch, usage=False)
    agent = metrics.usage["agent"]
    assert agent.calls == requests and agent.unreported == requests and not agent.tokens_known
    assert (agent.prompt_tokens, agent.completion_tokens) == (0, 0)
    body = (tmp_path / "quiet" / SCENARIO / "metrics.json").read_text()
    assert f'"unreported": {requests}' in body
    summary = (tmp_path / "quiet" / "all_summary.txt").read_text()
    assert f"unknown tokens (not reported), {requests} calls" in summary
    _run(AGENTS["openai"], tmp_path / "counted", monkeypatch)
    text = render_text(compare_runs(tmp_path / "counted", tmp_path / "quiet"))
    counted = f"{USAGE['prompt_tokens'] * requests}+{USAGE['completion_tokens'] * requests}"
    assert f"  agent: {counted} -> unknown" in text  # before: -> 0+0
