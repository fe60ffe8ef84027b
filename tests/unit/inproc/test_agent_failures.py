"""The hostile tester's findings on the ``python:`` backend: whatever the agent's code raises (even
``SystemExit``, ``KeyboardInterrupt`` or a ``CancelledError`` of its own), tool calls past the
turn's round cap, words that are not UTF-8 text and a ``say`` that is not a string are that
scenario's agent FAIL (``agent_error``, naming the cause) at once, and the other scenarios of
the run go on."""

from __future__ import annotations

import asyncio
import contextlib
import re
from pathlib import Path
from typing import Any

import pytest

from engine.run.runner import run
from engine.session.backends.bridge import InprocSession
from engine.session.backends.failure_text import MAX_EXCEPTION_CHARS
from engine.session.backends.python_agent import ToolCaller, register_agent
from engine.util.errors import Problem, SpecError, UsageError
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


def _cancelling_itself(after_a_tool_call: bool) -> Any:
    """Cancels its own turn's task (``asyncio.current_task().cancel()``), evalctl never asked."""

    def make(session: InprocSession, tools: ToolCaller) -> Any:
        async def turn(line: str) -> str:
            if session.scenario.get("name") != BROKEN:
                await tools.call("end_conversation", "{}", say="Goodbye.")
                return ""
            if after_a_tool_call:
                await tools.call("get_order", {"order_id": "O-100"})
            task = asyncio.current_task()
            assert task is not None
            task.cancel()
            await asyncio.Event().wait()  # the cancellation lands here
            return "never said"

        return turn

    return make


@pytest.mark.parametrize("isolate", [True, False], ids=["in-a-worker", "in-this-process"])
@pytest.mark.parametrize("after_a_tool_call", [False, True])
def test_an_agent_that_cancels_its_own_turn_fails_at_once_and_the_run_goes_on(
    after_a_tool_call: bool, isolate: bool, tmp_path: Path
) -> None:
    """Before: the cancelled turn looked like evalctl's own cancellation, the bridge was never
    told, and the session waited out --turn-timeout (``timeout``, charged to no one's code)."""
    agent = register_agent(_cancelling_itself(after_a_tool_call))
    results = _results(agent, tmp_path, BROKEN, FINE, isolate_agent_code=isolate)
    broken = results[BROKEN]
    assert broken.stop_reason == "agent_error" and broken.error_source is None, broken.error
    error = broken.error or ""
    assert "the agent's turn was cancelled by the agent's code (CancelledError)" in error
    assert re.search(r"\(raised at \S+test_agent_failures\.py:\d+ in turn\)$", error), error
    assert "\n" not in error
    assert results[FINE].stop_reason == "exit"


def test_evalctl_cancelling_a_running_turn_is_not_the_agents_failure(tmp_path: Path) -> None:
    """The run cancelled (as a Ctrl-C does) while the agent's turn awaits: the turn is cancelled
    by evalctl, the run ends interrupted, and no session is charged to the agent. In this process
    (``isolate_agent_code=False``, the CLI's ``--workers 1``): the test sees the turn start."""
    entered: list[asyncio.Event] = []
    stopped: list[BaseException] = []

    def make(session: InprocSession, tools: ToolCaller) -> Any:
        async def turn(line: str) -> str:
            entered[0].set()
            try:
                await asyncio.Event().wait()
            except BaseException as exc:
                stopped.append(exc)
                raise
            return ""

        return turn

    async def main() -> Any:
        entered.append(asyncio.Event())
        opts = run_options(
            MOCK_SPEC_DIR,
            MOCK_DATA_ROOT,
            agent=register_agent(make),
            scenarios=(BROKEN,),
            output_dir=tmp_path,
            progress=False,
            turn_timeout_s=60.0,
            isolate_agent_code=False,
        )
        running = asyncio.ensure_future(run(opts))
        async with asyncio.timeout(60):
            await entered[0].wait()
        running.cancel()  # what asyncio.run's SIGINT handler does to the main task
        return await running

    report = asyncio.run(main())
    assert report.interrupted is True
    assert [type(exc) for exc in stopped] == [asyncio.CancelledError]
    assert all(result.stop_reason != "agent_error" for result, _ in report.results())


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no words")


@pytest.mark.parametrize(
    ("error", "named"),
    [
        (ValueError("line one\nline two\n\n\t  line three\r\n"), "ValueError: line one line two line three"),
        (RuntimeError("x" * 5000), f"RuntimeError: {'x' * MAX_EXCEPTION_CHARS}... (5000 chars)"),
        (SpecError("the model gave up"), "SpecError: the model gave up"),
        (
            SpecError([Problem("a.yaml", 3, "$.model", "unknown"), Problem("b.yaml", 0, "$.key", "unset")]),
            "SpecError: a.yaml:3: $.model: unknown b.yaml: $.key: unset",
        ),
        (UsageError("bad\nargs"), "UsageError: bad args"),
        (_Unprintable(), "_Unprintable: <its message cannot be shown: str() raised RuntimeError>"),
    ],
)
def test_the_detail_of_a_raised_exception_is_one_clean_line(
    error: BaseException, named: str, tmp_path: Path
) -> None:
    """Before: a message of many lines kept its runs of blanks, a long one was cut after 2000
    characters with the line that raised it lost, a ``SpecError("words")`` read as one spec
    problem per character (``b a d ...``) and an unprintable one crashed the side
    (``internal_error``). Now: the type's name and its message on one line, clipped."""
    result = _results(register_agent(_raising(error)), tmp_path, BROKEN)[BROKEN]
    assert result.stop_reason == "agent_error" and result.error_source is None, result.error
    prefix = "agent side reported backend_error: the agent failed: "
    error_text = result.error or ""
    assert error_text.startswith(prefix + named + " (raised at "), error_text
    assert re.search(r" \(raised at \S+test_agent_failures\.py:\d+ in turn\)$", error_text), error_text
    assert "\n" not in error_text and "  " not in error_text and len(error_text) < 600
