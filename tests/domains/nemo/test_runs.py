"""The three NeMo spec folders on the real path: loaded and validated through the registry, every
gold conversation replayed by `evalctl run` over the protocol (35/35), the same runs with an agent
that only hangs up (0/22 on the action-matched scenarios), and the qa judge path against a scripted
judge server that reads the prompt it is sent.

The agent that only hangs up is a scripted side served on loopback (the ``noop`` backend of the
wire-tau2 branch is not on main yet): it ends the call in its first turn without a word.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.domains.nemo_common import END_TOOL, domain_of, evalctl_name
from engine.domains.registry import plugins
from engine.results.scoring_stage import ScoringOptions
from engine.run.runner import RunOptions, run
from engine.session.backends import BackendReply, SessionInfo, ToolCallRequest, TurnInfo, Usage
from engine.session.sides import builtin_side
from engine.spec.validate import validate_specs
from tests.domains.nemo.helpers import REPO, data_root, loaded, release_records
from tests.mock_domain.judge_server import scripted_judge

DOMAINS = ("restaurant", "customer_service", "qa")
COUNTS = {"restaurant": 12, "customer_service": 10, "qa": 13}


def _section(prompt: str, title: str) -> str:
    """The text of the prompt section ``## <title>...`` up to the next ``## `` heading ('' if none)."""
    found = re.search(rf"^## {re.escape(title)}[^\n]*\n(.*?)(?=^## |\Z)", prompt, re.M | re.S)
    return found.group(1) if found else ""


def reading_judge(body: dict[str, Any]) -> dict[str, Any]:
    """A judge that reads the prompt: full marks when the reference's answer was spoken in the
    conversation and, for a weather question, the weather tool's result is among the tool calls;
    each claim holds when its quoted text is in what the agent did (write actions)."""
    prompt = body["messages"][0]["content"]
    expected = _section(prompt, "Expected outcome")
    reference = None
    if "```json" in expected:
        reference = json.loads(expected.split("```json\n", 1)[1].split("\n```", 1)[0])
    spoken = _section(prompt, "Conversation")
    calls = _section(prompt, "Every tool call")
    score = 0.0
    if isinstance(reference, dict) and "answer" in reference:
        heard = f"[agent] {reference['answer']}" in spoken
        weather_seen = '"weather": "sunny"' in calls or "weather" not in reference["question"].lower()
        score = 1.0 if heard and weather_seen else 0.0
    actions = _section(prompt, "What the agent did")
    verdicts = []
    for index, claim in re.findall(r"^(\d+)\. (.*)$", _section(prompt, "Claims to check"), re.M):
        quoted = re.search(r'"(.*)"', claim)
        held = bool(quoted) and json.dumps(quoted.group(1), ensure_ascii=False)[1:-1] in actions
        verdicts.append({"index": int(index), "passed": held, "reason": "read"})
    return {"score": score, "reason": "read the prompt", "nl_assertion_verdicts": verdicts}


class _HangUp:
    """An agent that ends the call in its first turn and says nothing."""

    name = "hang-up"

    async def respond(self, messages: list, tools: list, turn: TurnInfo) -> BackendReply:
        if turn.round or turn.index:
            return BackendReply(usage=Usage(calls=1))
        return BackendReply(tool_calls=[ToolCallRequest("end", END_TOOL, "{}")], usage=Usage(calls=1))


def _hang_up(info: SessionInfo) -> _HangUp:
    return _HangUp()


async def _run_all(out: Path, judge_url: str, agent: str = "replay") -> dict[str, dict[str, Any]]:
    """Run the three folders; returns metrics.json by scenario name."""
    scoring = ScoringOptions(judge_model="judge-1", judge_base_url=judge_url, judge_retry_delay_s=0.0)
    metrics: dict[str, dict[str, Any]] = {}
    for domain in DOMAINS:
        opts = RunOptions(
            REPO / "specs" / domain,
            data_root(),
            plugins=plugins(),
            agent=agent,
            output_dir=out / domain,
            progress=False,
            quiet=True,
            scoring=scoring,
        )
        report = await run(opts)
        assert report.summary is not None and not report.scoring_errors, report.scoring_errors
        for sdir in (out / domain).iterdir():
            if (sdir / "metrics.json").is_file():
                metrics[sdir.name] = json.loads((sdir / "metrics.json").read_text(encoding="utf-8"))
    return metrics


@pytest.fixture(scope="module")
def judged_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict, dict, list]]:
    """``(gold replay metrics, hang-up agent metrics, judge requests)`` of all 35 scenarios."""
    out = tmp_path_factory.mktemp("nemo_runs")
    saved = os.environ.get("OPENAI_API_KEY")
    os.environ["OPENAI_API_KEY"] = saved or "unused-by-the-scripted-judge"

    async def both(url: str) -> tuple[dict, dict]:
        gold = await _run_all(out / "gold", url)
        async with builtin_side(_hang_up, role="agent") as uri:
            silent = await _run_all(out / "silent", url, agent=uri)
        return gold, silent

    try:
        with scripted_judge([reading_judge]) as (url, server):
            gold, silent = asyncio.run(both(url))
        yield gold, silent, server.requests
    finally:
        if saved is None:
            os.environ.pop("OPENAI_API_KEY", None)


@pytest.mark.parametrize("domain", DOMAINS)
def test_each_folder_lists_and_validates_its_scenarios(domain: str) -> None:
    names = loaded(domain).names
    expected = [evalctl_name(r) for r in release_records().values() if domain_of(r) == domain]
    assert list(names) == expected and len(names) == COUNTS[domain]
    report = validate_specs(REPO / "specs" / domain, data_root(), plugins=plugins())
    assert report.ok, report.lines()
    count = COUNTS[domain]
    assert (report.scenarios, report.prompts, len(report.replay)) == (count, 2 * count, count)
    assert all(r.ok and r.tool_calls >= 2 for r in report.replay)


def test_the_scenarios_carry_what_the_record_says() -> None:
    pepperoni = loaded("restaurant").scenario("restaurant__pizza_pepperoni")
    assert pepperoni.tools.names == ("GetMenuTool", "PlaceOrderTool", "EndConversationTool")
    assert (pepperoni.user_speaks_first, pepperoni.kickoff, pepperoni.max_duration) == (False, "Hello", 180.0)
    assert pepperoni.reference_answer[0]["total_price"] == 11.49
    fastbite = loaded("restaurant").scenario("restaurant__fastbite")
    assert fastbite.tools.names == ("PlaceOrderTool", "EndConversationTool")  # table order, no menu tool
    billing = loaded("customer_service").scenario("customer_service__billing_dispute")
    assert billing.current_date == "2026-04-22" and billing.initial_db["_current_date"] == "2026-04-22"
    assert billing.success_signals == ("is_action_match", "db_state_assertion", "nl_assertion", "clean_exit")
    weather = loaded("qa").scenario("qa__weather_new_york")
    assert weather.judge_reference == release_records()["qa__weather_new_york"]["reference_answer"]
    assert weather.reference_answer is None and "GetCityWeatherTool" in weather.tools.names


def test_every_gold_conversation_passes_when_replayed(judged_runs) -> None:
    gold, _, _ = judged_runs
    assert len(gold) == 35
    failed = {name: m["success_breakdown"] for name, m in gold.items() if m["is_successful"] is not True}
    assert failed == {}
    for name, m in gold.items():
        assert m["stop_reason"] == "exit"
        if name.startswith("qa__"):
            assert m["judge_passed"] is True and m["key_term_mentioned"] is True, name
        elif name.startswith("customer_service__"):
            assert m["nl_assertion_pass_rate"] == 1.0, name  # the claims were judged, and held
        else:
            assert m["is_action_match"] is True, name


def test_an_agent_that_only_hangs_up_passes_no_action_matched_scenario(judged_runs) -> None:
    _, silent, _ = judged_runs
    action_matched = [n for n in silent if not n.startswith("qa__")]
    assert len(action_matched) == 22
    assert [n for n in action_matched if silent[n]["is_action_match"] is not False] == []
    assert [n for n in silent if silent[n]["is_successful"] is not False] == []  # qa too: the judge says no
    qa = [m for n, m in silent.items() if n.startswith("qa__")]
    assert all(m["judge_passed"] is False and m["key_term_mentioned"] is False for m in qa)
    assert all(m["clean_exit"] is True for m in silent.values())  # it did hang up properly


def test_the_judge_saw_the_weather_tool_and_its_result(judged_runs) -> None:
    _, _, requests = judged_runs
    prompts = [r["messages"][0]["content"] for r in requests]
    weather = [p for p in prompts if "Name: qa__weather_new_york" in p]
    assert len(weather) == 2  # the gold run and the silent one
    gold_prompt, silent_prompt = weather
    calls = _section(gold_prompt, "Every tool call")
    assert '[agent] GetCityWeatherTool {"city_name": "New York"}' in calls and '"weather": "sunny"' in calls
    assert _section(silent_prompt, "Every tool call").startswith("1. [agent] EndConversationTool {}")


async def test_an_openai_agent_opens_the_call_after_the_kickoff(monkeypatch: pytest.MonkeyPatch) -> None:
    from engine.core.render import render_agent_prompt
    from engine.session.backends.openai_chat import OpenAIFactory
    from engine.session.backends.replay import ReplayFactory
    from tests.runtime_helpers import ScriptedOpenAI, Step, completion, session_between

    monkeypatch.setenv("EVALCTL_TEST_KEY", "sk-test")
    scenario = loaded("qa").scenario("qa__capital_france")
    save = '{"question": "What is the capital of France?", "answer": "Paris"}'
    steps = [
        Step(completion("Hello, I am Lisa. What can I help you with?")),
        Step(completion(None, [("c1", "SaveQuestionAnswerTool", save)])),
        Step(completion("The capital of France is Paris.")),
        Step(completion("Goodbye!", [("c2", "EndConversationTool", "{}")])),
    ]
    with ScriptedOpenAI(steps) as server:
        factory = OpenAIFactory("scripted", base_url=server.base_url, api_key_env="EVALCTL_TEST_KEY")
        result = await session_between(scenario, factory, ReplayFactory({scenario.name: scenario}))
    assert result.stop_reason == "exit", result.error
    first = server.requests[0][1]
    assert first["messages"] == [
        {"role": "system", "content": render_agent_prompt(scenario)},
        {"role": "user", "content": "Hello"},  # the kickoff, before anyone has spoken
    ]
    offered = [t["function"]["name"] for t in first["tools"]]
    assert offered == ["SaveQuestionAnswerTool", "EndConversationTool"]  # the record's subset
    question = scenario.gold_trace.lines("user")[0]
    assert server.requests[1][1]["messages"][-1] == {"role": "user", "content": question}
    spoken = [(e["role"], e["content"]) for e in result.transcript if e["type"] == "utterance"]
    assert spoken[0] == ("agent", "Hello, I am Lisa. What can I help you with?")
    assert result.actions == [{"action_type": "SaveQuestionAnswerTool", **json.loads(save)}]
