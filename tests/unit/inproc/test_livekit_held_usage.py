"""Tokens of the LiveKit steps held while ``on_enter`` runs: added to the next step's when every
step reported them, unknown (None, never an undercount) when any held step did not."""

from __future__ import annotations

from typing import Any

import pytest

from engine.session.backends import SessionInfo, Usage
from engine.session.backends.livekit_agent import LiveKitAgent

pytest.importorskip("livekit.agents")


def _agent() -> LiveKitAgent:
    info = SessionInfo(role="agent", scenario={}, system_prompt="", tools=[])
    return LiveKitAgent(lambda session: None, info, "livekit:test")


def _steps(agent: LiveKitAgent) -> list[Any]:
    queue = agent.bridge._steps
    return [queue.get_nowait() for _ in range(queue.qsize())]


def _held_then_next(held: list[Usage | None], nxt: Usage | None) -> Any:
    agent = _agent()
    agent._opening = True
    for i, usage in enumerate(held):
        agent._step(f"hello {i}", [], usage)
    agent._opening = False
    agent._step("how can I help?", [], nxt)
    [step] = _steps(agent)
    return step


def test_held_tokens_are_added_to_the_next_steps() -> None:
    step = _held_then_next([Usage(10, 2), Usage(5, 1)], Usage(100, 7))
    assert step.text == "hello 0\n\nhello 1\n\nhow can I help?"
    assert step.usage == Usage(115, 10)


def test_a_held_step_without_tokens_makes_the_next_steps_unknown() -> None:
    assert _held_then_next([Usage(10, 2), None], Usage(100, 7)).usage is None
    assert _held_then_next([None], Usage(100, 7)).usage is None


def test_the_next_step_without_tokens_stays_unknown() -> None:
    assert _held_then_next([Usage(10, 2)], None).usage is None


def test_nothing_held_carries_over_to_a_later_step() -> None:
    agent = _agent()
    agent._opening = True
    agent._step("hi", [], None)
    agent._opening = False
    agent._step("first", [], Usage(1, 1))
    agent._step("second", [], Usage(3, 4))
    first, second = _steps(agent)
    assert first.usage is None and second.usage == Usage(3, 4)
