"""Stop reasons and turn-taking, over real WebSockets on loopback with the mock shop's tool table
and gold conversations (the cancel caller's, at 0.1 s a replay step, outlasts a 0.4 s max_duration)."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from engine.core.dbhash import db_hash
from engine.core.model import Scenario
from engine.domains.registry import plugins
from engine.session.backends import BackendReply, SessionInfo, TurnInfo
from engine.session.backends.replay import ReplayBackend, ReplayFactory, split_trace
from engine.session.conversation import SessionLimits
from engine.spec.loader import LoadedDomain, load_domain
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR
from tests.runtime_helpers import say, scripted_factory, session_between


def _user_saying(scenario: Scenario, lines: list[str]):
    """A replay user whose lines after the opening are ``lines`` (then it hangs up)."""
    gold = split_trace(scenario.gold_trace, scenario.user.starting_utterance)

    def make(info: SessionInfo) -> ReplayBackend:
        script = dataclasses.replace(gold, user_lines=(gold.user_lines[0], *lines))
        return ReplayBackend("user", script)

    return make


async def test_replay_agent_follows_position_when_the_user_goes_off_script(loaded: LoadedDomain) -> None:
    scenario = loaded.scenario("mock__cancel_order")
    n = len(split_trace(scenario.gold_trace).agent_turns)
    user = _user_saying(scenario, ["Sorry, what was that?"] * (n - 1))
    result = await session_between(scenario, ReplayFactory({scenario.name: scenario}), user)
    assert result.stop_reason == "exit", result.error
    rules = scenario.domain.hash_rules
    assert db_hash(result.final_db, rules) == db_hash(scenario.expected_db, rules)


async def test_user_hangup_gives_the_agent_one_closing_turn(loaded: LoadedDomain) -> None:
    scenario = loaded.scenario("mock__cancel_order")
    agents: list = []
    polite = scripted_factory(lambda turn: say("Okay."), agents)
    result = await session_between(scenario, polite, _user_saying(scenario, []))
    assert result.stop_reason == "user_hangup" and not result.clean_exit
    assert [t.closing for t in agents[0].seen if t.round == 0] == [False, True]
    kinds = [(e["role"], e["type"]) for e in result.transcript]
    assert ("user", "tool_call") in kinds and ("user", "hangup") in kinds
    assert kinds.index(("user", "hangup")) < len(kinds) - 2  # the agent still spoke after it
    assert result.tool_calls == []  # end_call is the user's tool: not an agent tool call


async def test_agent_ending_in_its_closing_turn_is_a_clean_exit(loaded: LoadedDomain) -> None:
    scenario = loaded.scenario("mock__cancel_order")
    agent = scripted_factory(
        lambda t: say("Goodbye.", ("end_conversation", "{}")) if t.closing else say("Okay.")
    )
    result = await session_between(scenario, agent, _user_saying(scenario, []))
    assert result.stop_reason == "exit"


async def test_user_turn_response_end_flag_also_hangs_up(loaded: LoadedDomain) -> None:
    scenario = loaded.scenario("mock__cancel_order")

    user = scripted_factory(lambda t: say("Hello.") if t.index == 0 else say("Bye.", ("end_call", "{}")))
    result = await session_between(scenario, scripted_factory(lambda t: say("Hm.")), user)
    assert result.stop_reason == "user_hangup" and result.user_turns == 2


async def test_user_tool_other_than_end_call_is_an_error_result(loaded: LoadedDomain) -> None:
    scenario = loaded.scenario("mock__cancel_order")
    user = scripted_factory(
        lambda t: say("Hi.", ("cancel_order", "{}")) if t.index == 0 else say("", ("end_call", "{}"))
    )
    result = await session_between(scenario, scripted_factory(lambda t: say("Hm.")), user)
    results = [e["content"]["result"] for e in result.transcript if e["type"] == "tool_result"]
    assert results[0]["error_type"] == "tool_not_found"
    assert result.final_db == scenario.fresh_db()  # the user side never touches the DB


async def test_calls_after_the_end_are_refused_and_not_run(loaded: LoadedDomain) -> None:
    scenario = loaded.scenario("mock__cancel_order")
    cancel = '{"order_id": "O-100"}'
    agent = scripted_factory(lambda t: say("Bye.", ("end_conversation", "{}"), ("cancel_order", cancel)))
    result = await session_between(scenario, agent, ReplayFactory({scenario.name: scenario}))
    assert result.stop_reason == "exit"
    results = [e["content"]["result"] for e in result.transcript if e["type"] == "tool_result"]
    assert results[-1]["error_type"] == "call_ended"
    assert [c["name"] for c in result.tool_calls] == ["end_conversation"]
    assert result.final_db == scenario.fresh_db() and result.actions == []
    assert result.final_db["orders"]["O-100"]["status"] == "placed"


async def test_max_turns_stops_with_timeout(loaded: LoadedDomain) -> None:
    scenario = loaded.scenario("mock__cancel_order")
    replay = ReplayFactory({scenario.name: scenario})
    limits = SessionLimits(max_duration_s=30, turn_timeout_s=5, max_turns=2)
    result = await session_between(scenario, replay, replay, limits)
    assert result.stop_reason == "timeout" and result.agent_turns == 2
    assert "max turns (2 agent turns)" in (result.error or "")


async def test_max_duration_stops_with_timeout(loaded: LoadedDomain) -> None:
    scenario = dataclasses.replace(loaded.scenario("mock__cancel_order"), max_duration=0.4)
    slow = ReplayFactory({scenario.name: scenario}, latency_s=0.1)
    limits = SessionLimits(max_duration_s=scenario.max_duration, turn_timeout_s=5)
    result = await session_between(scenario, slow, slow, limits)
    assert result.stop_reason == "timeout"
    assert "max_duration (0.4 s)" in (result.error or "")
    assert 0.4 <= result.duration_s < 1.5


class _Hangs:
    """A side that answers its first turn, then never answers again (a model that hangs)."""

    name = "hangs"

    def __init__(self, info: SessionInfo) -> None:
        self.turns = 0

    async def respond(self, messages, tools, turn: TurnInfo) -> BackendReply:
        self.turns += 1
        if self.turns > 1:
            await asyncio.Event().wait()
        return say("Hello, I need help with an order.")


@pytest.mark.parametrize(("slow", "source"), [("user", "user_simulator"), ("agent", None)])
async def test_max_duration_while_the_user_side_answers_is_not_the_agents_failure(
    loaded: LoadedDomain, slow: str, source: str | None
) -> None:
    """Who held the clock when max_duration ran out: a user simulator stuck in its turn makes the
    result an error (infrastructure), never the agent's failure; an agent stuck in its own turn
    fails as before."""
    scenario = dataclasses.replace(loaded.scenario("mock__cancel_order"), max_duration=0.5)
    chatty = scripted_factory(lambda t: say("Sure, what is the order number?"))
    agent, user = (_Hangs, chatty) if slow == "agent" else (chatty, _Hangs)
    limits = SessionLimits(max_duration_s=scenario.max_duration, turn_timeout_s=30)
    result = await session_between(scenario, agent, user, limits)
    assert result.stop_reason == "timeout" and result.error_source == source
    assert (result.error or "").startswith("max_duration (0.5 s) reached")
    assert ("while the user side was answering" in (result.error or "")) is (slow == "user")


class _StallsThenTalks:
    """An agent that cannot win: it sits on its first turn until shortly before max_duration
    (1.4 s of 2), then hands the turn to the user side, so that time runs out while it answers."""

    name = "stalls"

    def __init__(self, info: SessionInfo) -> None:
        pass

    async def respond(self, messages, tools, turn: TurnInfo) -> BackendReply:
        await asyncio.sleep(1.4)
        return say("Could you repeat your order number?")


class _Thinks:
    """A user side that opens the call at once, then takes 1 s a turn (a model's latency)."""

    name = "thinks"

    def __init__(self, info: SessionInfo) -> None:
        self.turns = 0

    async def respond(self, messages, tools, turn: TurnInfo) -> BackendReply:
        self.turns += 1
        await asyncio.sleep(0.05 if self.turns == 1 else 1.0)
        return say("It is order 1234.")


async def test_an_agent_cannot_stall_until_the_user_side_holds_the_clock(loaded: LoadedDomain) -> None:
    """Before the fix whoever was answering when max_duration ran out was blamed: an agent that
    stalled 1.4 s of a 2 s session and then handed over had its timeout put on the user simulator
    (verdict error, never a FAIL). The side that took most of the time is blamed."""
    scenario = dataclasses.replace(loaded.scenario("mock__cancel_order"), max_duration=2.0)
    limits = SessionLimits(max_duration_s=scenario.max_duration, turn_timeout_s=30)
    result = await session_between(scenario, _StallsThenTalks, _Thinks, limits)
    assert result.stop_reason == "timeout"
    assert "while the user side was answering" in (result.error or "")  # the hand-over worked
    assert result.error_source is None  # yet the agent's own failure


async def test_side_that_cannot_play_the_scenario_is_an_error(loaded: LoadedDomain) -> None:
    scenario = loaded.scenario("mock__cancel_order")
    result = await session_between(scenario, ReplayFactory({}), ReplayFactory({scenario.name: scenario}))
    assert result.stop_reason == "error"
    assert "agent side reported unknown_scenario" in (result.error or "")


async def test_backend_crash_is_an_error_with_its_message(loaded: LoadedDomain) -> None:
    scenario = loaded.scenario("mock__cancel_order")

    def boom(turn: TurnInfo) -> BackendReply:
        raise RuntimeError("model exploded")

    result = await session_between(scenario, scripted_factory(boom), ReplayFactory({scenario.name: scenario}))
    assert result.stop_reason == "error"
    assert "internal_error: RuntimeError: model exploded" in (result.error or "")


async def test_an_engine_fault_fails_only_that_session(
    loaded: LoadedDomain, monkeypatch: pytest.MonkeyPatch
) -> None:
    import engine.session.conversation

    def broken(self: object, name: str, arguments: object) -> None:
        raise KeyError("tool table bug")

    monkeypatch.setattr(engine.session.conversation.ToolRuntime, "call", broken)
    scenario = loaded.scenario("mock__cancel_order")
    replay = ReplayFactory({scenario.name: scenario})
    result = await session_between(scenario, replay, replay)
    assert result.stop_reason == "error"
    assert result.error == "engine error: KeyError: 'tool table bug'"
    assert result.transcript[-1]["content"]["stop_reason"] == "error"


async def test_an_agent_looping_on_tool_calls_is_stopped_by_the_engine(loaded: LoadedDomain) -> None:
    scenario = loaded.scenario("mock__cancel_order")
    lookup = ("get_order", '{"order_id": "O-100"}')
    loop = scripted_factory(lambda turn: say("", *[lookup] * 9))  # 9 calls in one turn
    limits = SessionLimits(max_duration_s=30, turn_timeout_s=5, max_tool_calls_per_turn=6)
    result = await session_between(scenario, loop, ReplayFactory({scenario.name: scenario}), limits)
    assert result.stop_reason == "timeout"
    assert result.error == "agent side made more than 6 tool calls in turn 0"
    assert len(result.tool_calls) == 6  # the 7th never ran


async def test_two_silent_sides_end_the_session_after_empty_turns() -> None:
    from engine.session.conversation import SessionLimits
    from tests.runtime_helpers import scripted_factory, session_between

    scenario = load_domain(MOCK_SPEC_DIR, MOCK_DATA_ROOT, plugins=plugins()).scenario("mock__cancel_order")
    agents: list = []
    users: list = []
    result = await session_between(
        scenario,
        scripted_factory(lambda turn: None, agents),  # content null, no tool calls, every turn
        scripted_factory(lambda turn: None, users),
        SessionLimits(max_duration_s=6, turn_timeout_s=5),
    )
    # before: the sides traded empty turns (each a model request) until max_duration (900 s in eva)
    assert result.stop_reason == "no_progress" and result.error_source is None  # the agent's, no error
    assert result.error is not None and result.error.startswith("the conversation went nowhere: 4 turns")
    assert len(agents[0].seen) + len(users[0].seen) == 4  # 4 model requests, not 900 s of them
