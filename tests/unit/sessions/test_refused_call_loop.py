"""Issue 30 item 8 (real-model run): a model repeating the same refused tool call and the same words
makes no progress (``engine.session.stuck``); any tool call used to reset the count, so such a
session ran to ``max_duration`` (900 s in eva)."""

from __future__ import annotations

from engine.domains.registry import plugins
from engine.session.conversation import SessionLimits
from engine.session.stuck import is_idle, refused_call
from engine.spec.loader import load_domain
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR
from tests.runtime_helpers import say, scripted_factory, session_between


def test_repeating_the_same_refused_call_and_words_is_no_progress_rule() -> None:
    same = (refused_call("get_order", {"order_id": "X", "n": 1}),)
    reordered = (refused_call("get_order", {"n": 1, "order_id": "X"}),)
    assert is_idle("Let me check.", 1, "let me check", same, reordered)  # key order aside
    assert not is_idle("Let me check.", 1, None, same, None)  # its first turn
    assert not is_idle("Let me check.", 1, "Let me check.", same, ())  # last turn refused nothing
    assert not is_idle("Let me check.", 2, "Let me check.", same, same)  # one call went through
    other = (refused_call("get_order", {"order_id": "Y", "n": 1}),)
    assert not is_idle("Let me check.", 1, "Let me check.", other, same)  # another call: progress
    assert not is_idle("Now the other one.", 1, "Let me check.", same, same)  # other words


async def test_repeating_the_same_refused_call_and_words_is_no_progress_session() -> None:
    scenario = load_domain(MOCK_SPEC_DIR, MOCK_DATA_ROOT, plugins=plugins()).scenario("mock__cancel_order")
    agents: list = []
    refused = ("get_order", '{"order_id": "O-999"}')  # no such order: the tool refuses it

    def agent(turn: object) -> object:
        return say("Let me look that up for you.", refused)

    result = await session_between(
        scenario,
        scripted_factory(agent, agents),
        scripted_factory(lambda turn: say("My order is O-999, please cancel it.")),
        SessionLimits(max_duration_s=20, turn_timeout_s=5, max_turns=40),
    )
    assert all(call["result"].get("status") == "error" for call in result.tool_calls)
    assert result.stop_reason == "no_progress", result.error
    assert result.error is not None and "the same refused tool calls and words again" in result.error
    assert result.agent_turns <= 3  # not 40 turns (or 900 s) of paid requests


async def test_refused_calls_that_change_are_progress() -> None:
    scenario = load_domain(MOCK_SPEC_DIR, MOCK_DATA_ROOT, plugins=plugins()).scenario("mock__cancel_order")

    def agent(turn: object) -> object:
        n = turn.index  # type: ignore[attr-defined]
        return say("Let me look that up for you.", ("get_order", f'{{"order_id": "O-9{n:02d}"}}'))

    result = await session_between(
        scenario,
        scripted_factory(agent),
        scripted_factory(lambda turn: say("My order is O-999, please cancel it.")),
        SessionLimits(max_duration_s=20, turn_timeout_s=5, max_turns=6),
    )
    assert result.stop_reason == "timeout" and result.agent_turns == 6
