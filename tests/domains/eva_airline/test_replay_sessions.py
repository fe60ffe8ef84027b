"""Replay sessions on the real eva data: all 50 scenarios, both concurrencies, transfers. Moved from
tests/unit/sessions/test_session_replay.py, which runs the same on the mock shop."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.core.dbhash import db_hash
from engine.run.runner import run
from engine.session.backends import SessionInfo
from engine.session.backends.replay import ReplayFactory, split_trace
from engine.spec.loader import LoadedDomain
from tests.conftest import SPEC_DIR
from tests.runtime_helpers import run_options


def _transfers(loaded: LoadedDomain) -> set[str]:
    return {
        s.name
        for s in loaded.scenarios
        if any(step.tool == "transfer_to_agent" for step in s.gold_trace.tool_calls())
    }


async def test_replay_run_all_50_clean_on_expected_hash_at_both_concurrencies(
    tmp_path: Path, data_root: Path, loaded: LoadedDomain
) -> None:
    hashes: dict[int, dict[str, str]] = {}
    calls: dict[int, dict[str, list]] = {}
    for concurrency in (8, 1):
        opts = run_options(
            SPEC_DIR,
            data_root,
            output_dir=tmp_path / f"c{concurrency}",
            concurrency=concurrency,
            progress=False,
        )
        report = await run(opts)
        assert not report.interrupted and not report.scoring_errors
        assert len(report.outcomes) == 50
        hashes[concurrency], calls[concurrency] = {}, {}
        for result, metrics in report.results():
            scenario = loaded.scenario(result.scenario_name)
            rules = scenario.domain.hash_rules
            assert result.clean_exit, (result.scenario_name, result.stop_reason, result.error)
            assert db_hash(result.final_db, rules) == db_hash(scenario.expected_db, rules), (
                result.scenario_name
            )
            assert metrics is not None and metrics.signals.db_state_match is True
            assert metrics.stop_reason == result.stop_reason
            hashes[concurrency][result.scenario_name] = db_hash(result.final_db, rules)
            calls[concurrency][result.scenario_name] = [
                (c["name"], c["arguments"]) for c in result.tool_calls
            ]
        transfers = {r.scenario_name for r, _ in report.results() if r.stop_reason == "transfer"}
        assert transfers == _transfers(loaded) and len(transfers) == 7
        text = (
            tmp_path / f"c{concurrency}" / "eva_airline__3_1_5" / "final_scenario_db_hash.txt"
        ).read_text()
        assert text.startswith(f"db_hash: {hashes[concurrency]['eva_airline__3_1_5']}")
    assert hashes[1] == hashes[8]
    assert calls[1] == calls[8]


async def test_replay_turn_counts_and_usage_follow_the_gold(tmp_path: Path, data_root: Path) -> None:
    opts = run_options(
        SPEC_DIR, data_root, scenarios=("eva_airline__7_1_1",), output_dir=tmp_path, progress=False
    )
    [(result, _)] = list((await run(opts)).results())
    # 7.1.1: ten user lines, ten agent lines; the last agent turn transfers (no end_conversation)
    assert (result.user_turns, result.agent_turns) == (10, 10)
    assert result.stop_reason == "transfer"
    assert result.tool_calls[-1]["name"] == "transfer_to_agent"
    assert all(c["name"] != "end_conversation" for c in result.tool_calls)
    assert result.usage["agent"]["model"] == "replay" and result.usage["agent"]["calls"] >= 10
    roles = [e["role"] for e in result.transcript if e["type"] == "utterance"]
    assert roles[:4] == ["user", "agent", "user", "agent"]
    assert result.transcript[-1]["content"] == {"stop_reason": "transfer", "error": None}


def test_split_trace_cuts_turns_by_user_lines(loaded: LoadedDomain) -> None:
    scenario = loaded.scenario("eva_airline__voluntary_date_change")  # eva 1.1.2
    script = split_trace(scenario.gold_trace, "Opening line.")
    assert script.user_lines[0] == "Opening line."
    assert len(script.user_lines) == len(script.agent_turns) == 4
    assert [name for name, _ in script.agent_turns[3].calls] == ["rebook_flight", "assign_seat"]
    assert script.agent_turns[0].calls == () and script.agent_turns[0].text


async def test_replay_agent_ends_after_the_last_line_and_user_hangs_up_past_the_end(
    loaded: LoadedDomain,
) -> None:
    from engine.session.backends import TurnInfo

    scenario = loaded.scenario("eva_airline__2_2_5")
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


async def test_a_transfer_over_a_websocket_side_ends_the_call(tmp_path: Path, loaded: LoadedDomain) -> None:
    """eva 5.2.5's gold ends by transfer_to_agent: played by an agent side over a WebSocket (the mock
    shop, which tests/unit/sessions/test_external_agent.py runs, has no transfer tool)."""
    from engine.session.sides import builtin_side

    factory = ReplayFactory({s.name: s for s in loaded.scenarios})
    names = ("eva_airline__3_1_5", "eva_airline__5_2_5")
    async with builtin_side(factory, role="agent") as agent_uri:
        opts = run_options(
            SPEC_DIR,
            loaded.domain.data_root,
            scenarios=names,
            agent=agent_uri,
            output_dir=tmp_path,
            quiet=True,
        )
        report = await run(opts)
    stops = {r.scenario_name: r.stop_reason for r, _ in report.results()}
    assert stops == {"eva_airline__3_1_5": "exit", "eva_airline__5_2_5": "transfer"}
    assert all(m is not None and m.signals.db_state_match is True for _, m in report.results())
    assert all(r.agent_backend == "replay" for r, _ in report.results())  # as the side reports itself
