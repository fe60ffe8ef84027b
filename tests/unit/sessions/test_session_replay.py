"""Replay sessions on the mock shop: every scenario at two concurrencies lands on its expected DB
with the same calls, turn counts and usage follow the gold, the trace is cut into turns by the
caller's lines. eva's 50 scenarios (with transfers): tests/domains/eva_airline/test_replay_sessions.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.core.dbhash import db_hash
from engine.core.gold import actions_trace
from engine.run.runner import run
from engine.session.backends import SessionInfo
from engine.session.backends.replay import ReplayFactory, split_trace
from engine.spec.loader import LoadedDomain
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR
from tests.runtime_helpers import run_options

TRIALS = 4


def _kinds(scenario) -> list[str]:
    return [e["event_type"] for e in scenario.record["trace"]]


async def test_replay_run_clean_on_expected_hash_at_both_concurrencies(
    tmp_path: Path, loaded: LoadedDomain
) -> None:
    hashes: dict[int, dict[tuple[str, int], str]] = {}
    calls: dict[int, dict[tuple[str, int], list]] = {}
    for concurrency in (8, 1):
        opts = run_options(
            MOCK_SPEC_DIR,
            MOCK_DATA_ROOT,
            output_dir=tmp_path / f"c{concurrency}",
            concurrency=concurrency,
            trials=TRIALS,
            progress=False,
        )
        report = await run(opts)
        assert not report.interrupted and not report.scoring_errors
        assert len(report.outcomes) == len(loaded.scenarios) * TRIALS
        hashes[concurrency], calls[concurrency] = {}, {}
        for result, metrics in report.results():
            scenario = loaded.scenario(result.scenario_name)
            rules = scenario.domain.hash_rules
            assert result.clean_exit and result.stop_reason == "exit", (result.scenario_name, result.error)
            assert db_hash(result.final_db, rules) == db_hash(scenario.expected_db, rules), (
                result.scenario_name
            )
            assert metrics is not None and metrics.signals.db_state_match is True
            assert metrics.stop_reason == result.stop_reason
            key = (result.scenario_name, result.trial)
            hashes[concurrency][key] = db_hash(result.final_db, rules)
            calls[concurrency][key] = [(c["name"], c["arguments"]) for c in result.tool_calls]
        text = (
            tmp_path / f"c{concurrency}" / "mock__cancel_order" / "trial_2" / "final_scenario_db_hash.txt"
        ).read_text()
        assert text.startswith(f"db_hash: {hashes[concurrency][('mock__cancel_order', 2)]}")
    assert hashes[1] == hashes[8]
    assert calls[1] == calls[8]


async def test_replay_turn_counts_and_usage_follow_the_gold(tmp_path: Path, loaded: LoadedDomain) -> None:
    scenario = loaded.scenario("mock__late_delivery_credit")
    opts = run_options(
        MOCK_SPEC_DIR, MOCK_DATA_ROOT, scenarios=(scenario.name,), output_dir=tmp_path, progress=False
    )
    [(result, _)] = list((await run(opts)).results())
    kinds = _kinds(scenario)
    lines = kinds.count("user_utterance")
    assert (result.user_turns, result.agent_turns) == (lines, lines)
    gold_tools = [e["tool_name"] for e in scenario.record["trace"] if e["event_type"] == "tool_call"]
    assert [c["name"] for c in result.tool_calls] == [*gold_tools, "end_conversation"]
    assert result.stop_reason == "exit"
    assert result.usage["agent"]["model"] == "replay" and result.usage["agent"]["calls"] >= lines
    roles = [e["role"] for e in result.transcript if e["type"] == "utterance"]
    assert roles[:4] == ["user", "agent", "user", "agent"]
    assert result.transcript[-1]["content"] == {"stop_reason": "exit", "error": None}


def test_split_trace_cuts_turns_by_user_lines(loaded: LoadedDomain) -> None:
    scenario = loaded.scenario("mock__cancel_order")
    script = split_trace(scenario.gold_trace, "Opening line.")
    assert script.user_lines[0] == "Opening line."
    assert len(script.user_lines) == len(script.agent_turns) == _kinds(scenario).count("user_utterance")
    per_turn: list[list[str]] = []  # the gold's tool calls, grouped by the caller line they answer
    for event in scenario.record["trace"]:
        if event["event_type"] == "user_utterance":
            per_turn.append([])
        elif event["event_type"] == "tool_call":
            per_turn[-1].append(event["tool_name"])
    assert per_turn == [[], ["get_order"], ["cancel_order"], []]
    assert [[name for name, _ in turn.calls] for turn in script.agent_turns] == per_turn
    assert script.agent_turns[0].calls == () and script.agent_turns[0].text


async def test_replay_agent_ends_after_the_last_line_and_user_hangs_up_past_the_end(
    loaded: LoadedDomain,
) -> None:
    from engine.session.backends import TurnInfo

    scenario = loaded.scenario("mock__shipped_refusal")
    factory = ReplayFactory({scenario.name: scenario})
    agent = factory(SessionInfo("agent", {"name": scenario.name}, "", []))
    user = factory(SessionInfo("user", {"name": scenario.name}, "", []))
    turns = len(split_trace(scenario.gold_trace).agent_turns)
    last = await agent.respond([], [], TurnInfo(turns - 1))
    assert [c.name for c in last.tool_calls] == ["end_conversation"] and last.text
    beyond = await user.respond([], [], TurnInfo(99))
    assert [c.name for c in beyond.tool_calls] == ["end_call"] and beyond.text == ""
    with pytest.raises(LookupError, match="no scenario named 'nope'"):
        factory(SessionInfo("agent", {"name": "nope"}, "", []))


def test_an_actions_trace_ending_with_the_users_calls_leaves_the_agent_a_last_turn() -> None:
    """tau2 golds are tool calls only, often ending with the caller's: the agent (who opens) must
    hang up after them, not before."""
    trace = actions_trace(
        [
            {"requestor": "user", "name": "toggle_data", "arguments": {}},
            {"requestor": "assistant", "name": "refuel_data", "arguments": {"gb_amount": 2.0}},
            {"requestor": "user", "name": "reboot_device", "arguments": {}},
        ]
    )
    script = split_trace(trace, None, user_first=False)
    assert [turn.calls for turn in script.agent_turns] == [(), (("refuel_data", {"gb_amount": 2.0}),), ()]
    assert script.user_calls == ((("toggle_data", {}),), (("reboot_device", {}),))
    assert script.user_lines == ("", "")
