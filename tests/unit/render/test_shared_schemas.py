"""Per-scenario artefacts are built once and shared read-only: a tool's schema entry is made once
(it was deep-copied twice per scenario) and no session changes it; the caller-fidelity checks build
a persona's facts once per scenario and give the same findings every trial."""

from __future__ import annotations

import copy

from engine.core.model import Scenario
from engine.domains.registry import plugins
from engine.run.runner import session_setup
from engine.scoring import fidelity
from engine.session.backends.replay import ReplayFactory
from engine.session.conversation import SessionLimits, run_session
from engine.session.sides import builtin_side
from engine.spec.loader import load_domain
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR


def _shop() -> Scenario:
    return load_domain(MOCK_SPEC_DIR, MOCK_DATA_ROOT, plugins=plugins()).scenario("mock__cancel_order")


async def test_tool_schemas_are_built_once_and_left_unchanged_by_sessions() -> None:
    shop = _shop()
    one, two = session_setup(shop), session_setup(shop)
    assert one.agent_tools and all(a is b for a, b in zip(one.agent_tools, two.agent_tools, strict=True))
    before = copy.deepcopy(one.agent_tools)
    tool = shop.tools.tools[0]
    assert before[0] == {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": dict(tool.parameters)},
    }
    assert (
        before[0]["function"]["parameters"] is not tool.parameters
    )  # the spec's own mapping is not handed out
    factory = ReplayFactory({shop.name: shop})
    limits = SessionLimits(max_duration_s=30, turn_timeout_s=5)
    async with (
        builtin_side(factory, "agent", in_process=True) as agent,
        builtin_side(factory, "user", in_process=True) as user,
    ):
        result = await run_session(shop, one, agent, user, limits, builtin=frozenset({"agent", "user"}))
    assert result.stop_reason == "exit"
    assert one.agent_tools == before and session_setup(shop).agent_tools == before


def test_persona_facts_are_built_once_per_scenario_and_never_grow() -> None:
    shop = _shop()
    texts = fidelity._persona_texts(shop)
    base = fidelity._persona_base(texts)
    assert fidelity._persona_base(fidelity._persona_texts(shop)) is base
    words, codes = set(base.words), set(base.codes)
    grown = base.copy()
    grown.add(["an agent line about ZX99QQ and zebras"])
    assert "zebras" in grown.words and "ZX99QQ" in grown.codes
    assert (base.words, base.codes) == (words, codes)  # the shared facts are untouched
