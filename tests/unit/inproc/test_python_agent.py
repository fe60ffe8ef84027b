"""The ``python:`` backend on the mock shop: the documented callable interface drives a session,
a factory registered from Python is named by the spec string it returns, and what the agent under
test does wrong (it raises, it answers what is not a string) is its FAIL, never an ``error``;
a target that does not load is bad input (one line, exit 2)."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from cli import main
from engine.run.runner import run
from engine.session.backends.bridge import InprocSession
from engine.session.backends.python_agent import ToolCaller, register_agent
from engine.session.backends.registry import evalctl_own, parse_backend_spec
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR, REPO
from tests.runtime_helpers import run_options

SCENARIO = "mock__cancel_order"


def _cancelling(session: InprocSession, tools: ToolCaller) -> Any:
    """Looks the order up, cancels it, then hangs up on its third turn."""
    turns = iter(range(100))

    async def turn(line: str) -> str:
        k = next(turns)
        if k == 0:
            order = await tools.call("get_order", {"order_id": "O-100"})
            assert json.loads(order)["order"]["status"] == "placed"
            await tools.call("cancel_order", '{"order_id": "O-100"}')
            return "Your order O-100 is cancelled."
        if k == 1:
            return "Anything else?"
        await tools.call("end_conversation", "{}", say="Goodbye.")
        return ""

    return turn


def _session(agent: str, out: Path) -> tuple[Any, Any]:
    opts = run_options(
        MOCK_SPEC_DIR, MOCK_DATA_ROOT, agent=agent, scenarios=(SCENARIO,), output_dir=out, progress=False
    )
    [(result, metrics)] = list(asyncio.run(run(opts)).results())
    return result, metrics


def test_a_registered_callable_runs_against_the_engine_db(tmp_path: Path) -> None:
    spec = register_agent(_cancelling, "cancelling")
    assert spec == "python:@cancelling"
    assert parse_backend_spec(spec).scheme == "python" and not evalctl_own(parse_backend_spec(spec))
    result, metrics = _session(spec, tmp_path)
    assert [c["name"] for c in result.tool_calls if c.get("side", "agent") == "agent"] == [
        "get_order",
        "cancel_order",
        "end_conversation",
    ]
    assert result.final_db["orders"]["O-100"]["status"] == "cancelled"
    assert result.stop_reason == "exit" and metrics.is_successful


def _raising(session: InprocSession, tools: ToolCaller) -> Any:
    async def turn(line: str) -> str:
        raise RuntimeError("the agent broke")

    return turn


def _not_text(session: InprocSession, tools: ToolCaller) -> Any:
    async def turn(line: str) -> Any:
        return {"text": "hello"}

    return turn


def _library_error(session: InprocSession, tools: ToolCaller) -> Any:
    async def turn(line: str) -> str:
        return str(json.loads("{not json"))  # raises inside the standard library

    return turn


def _plain_def(session: InprocSession, tools: ToolCaller) -> Any:
    def turn(line: str) -> str:  # not async: its value cannot be awaited
        return "hello"

    return turn


@pytest.mark.parametrize(
    ("factory", "said"),
    [
        (_raising, "the agent broke"),
        (_not_text, "not a string"),
        (_plain_def, "returned str instead of an awaitable: define it with `async def turn(line)`"),
    ],
)
def test_the_agents_failure_is_its_fail_not_an_error(factory: Any, said: str, tmp_path: Path) -> None:
    result, metrics = _session(register_agent(factory), tmp_path)
    assert result.stop_reason == "agent_error" and result.error_source is None
    assert said in (result.error or "")
    assert metrics is not None and metrics.is_successful is False


@pytest.mark.parametrize("factory", [_raising, _library_error])
def test_the_agents_failure_names_the_line_of_its_own_code(factory: Any, tmp_path: Path) -> None:
    """Before: only the exception's name and words; a library's error gave no clue where the
    agent called it. Now the innermost frame of the agent's own code, never a library's."""
    result, _ = _session(register_agent(factory), tmp_path)
    where = re.search(r"\(raised at (\S+):(\d+) in turn\)$", result.error or "")
    assert where is not None, result.error
    path, line = Path(where.group(1)), int(where.group(2))
    assert path.name == "test_python_agent.py"
    assert "raise" in (REPO / "tests/unit/inproc/test_python_agent.py").read_text().splitlines()[
        line - 1
    ] or (
        "json.loads" in (REPO / "tests/unit/inproc/test_python_agent.py").read_text().splitlines()[line - 1]
    )


def test_a_target_that_does_not_load_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "bot.py"
    broken.write_text("raise ImportError('no such model')\n")
    for target, message in [
        (f"python:{tmp_path}/missing.py:make", "no file"),
        (f"python:{broken}:make", "does not load (ImportError: no such model)"),
        ("python:@nobody", "no agent registered as 'nobody'"),
        ("python:json:nothing", "has no callable 'nothing'"),
    ]:
        code = main(
            [
                *("run", str(MOCK_SPEC_DIR), "--data-root", str(MOCK_DATA_ROOT), "--agent", target),
                *("--output-dir", str(tmp_path / "out"), "--scenarios", SCENARIO),
            ]
        )
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(err) == 1 and message in err[0], (target, err)
