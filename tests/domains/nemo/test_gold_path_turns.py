"""`evalctl diff`'s gold path in the NeMo domains, where the agent opens the call: the gold's turn
numbers are the agent turns a session gives the same calls, and an agent that made exactly the
gold's calls, hanging up included, followed the gold path.

Before the fix gold_path.json counted the gold's turns as if the caller spoke first (each call one
agent turn early: "the gold makes it in agent turn 1" for the call a session makes in its turn 2),
and diff compared the gold's hang-up call with the agent's calls minus hang-ups ("left the gold path
at tool call 3: gold EndConversationTool(), got no call" for an agent that did exactly that)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.results.diff import _left_gold_path
from engine.results.session_files import gold_path
from engine.session.backends.replay import ReplayFactory
from engine.util.artifacts import write_json
from tests.domains.nemo.helpers import loaded
from tests.runtime_helpers import session_between


@pytest.mark.parametrize("domain", ["restaurant", "customer_service"])
async def test_gold_turns_are_the_sessions_and_the_gold_hang_up_is_followed(
    domain: str, tmp_path: Path
) -> None:
    scenarios = [s for s in loaded(domain).scenarios if s.gold_trace][:3]
    assert scenarios and not scenarios[0].user_speaks_first  # the agent opens the call here
    for scenario in scenarios:
        replay = ReplayFactory({scenario.name: scenario})
        result = await session_between(scenario, replay, replay)
        gold = gold_path(scenario)
        ending = set(gold["ending_tools"])
        made = [c for c in result.tool_calls if c.get("side", "agent") == "agent"]
        assert [(c["turn"], c["name"]) for c in gold["tool_calls"]] == [(c["turn"], c["name"]) for c in made]
        sdir = tmp_path / scenario.name
        write_json(sdir / "scenario_config" / "gold_path.json", gold)
        write_json(sdir / "tool_calls.json", made)
        assert ending and any(c["name"] in ending for c in made)  # the replay agent hangs up with the tool
        assert _left_gold_path(sdir) == "followed the gold path (every gold tool call, in order)"
