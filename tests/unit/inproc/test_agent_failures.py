"""The hostile tester's findings on the ``python:`` backend: whatever the agent's code raises (even
``SystemExit``, ``KeyboardInterrupt`` or a ``CancelledError`` of its own), tool calls past the
turn's round cap, words that are not UTF-8 text and a ``say`` that is not a string are that
scenario's agent FAIL (``agent_error``, naming the cause) at once, and the other scenarios of
the run go on."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest

from engine.run.runner import run
from engine.session.backends.bridge import InprocSession
from engine.session.backends.python_agent import ToolCaller, register_agent
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR
from tests.runtime_helpers import run_options

BROKEN = "mock__cancel_order"
FINE = "mock__shipped_refusal"


def _results(agent: str, out: Path, *scenarios: str, **options: Any) -> dict[str, Any]:
    opts = run_options(
        MOCK_SPEC_DIR,
        MOCK_DATA_ROOT,
        agent=agent,
        scenarios=scenarios,
        output_dir=out,
        progress=False,
        turn_timeout_s=60.0,  # the failure must come at once, long before this
        **options,
    )
    return {result.scenario_name: result for result, _ in asyncio.run(run(opts)).results()}


def _raising(error: BaseException) -> Any:
    def make(session: InprocSession, tools: ToolCaller) -> Any:
        async def turn(line: str) -> str:
            if session.scenario.get("name") == BROKEN:
                raise error
            await tools.call("end_conversation", "{}", say="Goodbye.")
            return ""

        return turn

    return make


@pytest.mark.parametrize(
    ("error", "named"),
    [
        (SystemExit(3), "SystemExit: 3"),
        (KeyboardInterrupt(), "KeyboardInterrupt"),
        (asyncio.CancelledError("mine"), "CancelledError: mine"),
    ],
)
def test_a_base_exception_of_the_agent_is_its_fail_and_the_run_goes_on(
    error: BaseException, named: str, tmp_path: Path
) -> None:
    results = _results(register_agent(_raising(error)), tmp_path, BROKEN, FINE)
    assert results[BROKEN].stop_reason == "agent_error" and results[BROKEN].error_source is None
    assert named in (results[BROKEN].error or "")
    assert results[FINE].stop_reason == "exit"


def _looping(session: InprocSession, tools: ToolCaller) -> Any:
    async def turn(line: str) -> str:
        for _ in range(11):
            await tools.call("get_order", {"order_id": "O-100"})
        return "Done."

    return turn


def test_an_eleventh_tool_call_in_a_turn_is_a_stated_fail_not_dropped(tmp_path: Path) -> None:
    result = _results(register_agent(_looping), tmp_path, BROKEN)[BROKEN]
    assert result.stop_reason == "agent_error"
    assert "more than 10 model steps" in (result.error or "") and "'get_order' not run" in result.error
    agent_calls = [c for c in result.tool_calls if c.get("side", "agent") == "agent"]
    assert len(agent_calls) == 10


def test_the_round_cap_follows_max_tool_rounds(tmp_path: Path) -> None:
    result = _results(register_agent(_looping), tmp_path, BROKEN, max_tool_rounds=3)[BROKEN]
    assert result.stop_reason == "agent_error" and "more than 3 model steps" in (result.error or "")


def _surrogate(where: str) -> Any:
    def make(session: InprocSession, tools: ToolCaller) -> Any:
        async def turn(line: str) -> str:
            if where == "arguments":
                await tools.call("get_order", {"order_id": "O-\ud800"})
            return "Hello \udcff"

        return turn

    return make


@pytest.mark.parametrize("where", ["words", "arguments"])
def test_a_lone_surrogate_is_the_agents_fail_not_a_disconnect(
    where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = _results(register_agent(_surrogate(where)), tmp_path, BROKEN)[BROKEN]
    assert result.stop_reason == "agent_error" and "not valid UTF-8 text" in (result.error or "")
    assert where in result.error
    assert "Traceback" not in capsys.readouterr().err


def _say_not_text(session: InprocSession, tools: ToolCaller) -> Any:
    async def turn(line: str) -> str:
        with contextlib.suppress(TypeError):  # swallowing it does not hide it
            await tools.call("get_order", {"order_id": "O-100"}, say=123)  # type: ignore[arg-type]
        return "Hello."

    return turn


def test_say_that_is_not_a_string_is_a_clear_agent_error(tmp_path: Path) -> None:
    result = _results(register_agent(_say_not_text), tmp_path, BROKEN)[BROKEN]
    assert result.stop_reason == "agent_error"
    assert "say must be a string, not int" in (result.error or "")
