"""evalctl run specs/eva_airline with an in-process agent (``python:``) that crashes its process in
one scenario: the run survives in its supervised worker (``engine.run.workers.isolated``), the
crashed session is the agent's ``agent_error``, the others are scored, the summary is written;
``--workers 1`` keeps the agent in the run's own process, as asked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, SPEC_DIR
from tests.unit.scale.isolation_child import CRASHER


def _metrics(run_dir: Path) -> dict[str, dict[str, Any]]:
    return {
        p.relative_to(run_dir).parts[0]: json.loads(p.read_text()) for p in run_dir.glob("**/metrics.json")
    }


EVA = ("eva_airline__1_1_3", "eva_airline__1_1_4", "eva_airline__7_2_2")


def test_the_cli_run_on_eva_survives_the_agents_crash_and_says_so(tmp_path: Path, data_root: Path) -> None:
    """``evalctl run specs/eva_airline`` (default --workers): the summary is written, the exit code
    is a run's own; ``--workers 1`` keeps the agent in the run's process, as asked."""
    path = tmp_path / "crasher.py"
    path.write_text(CRASHER)
    crasher = f"python:{path}:make"
    argv = [sys.executable, str(REPO / "cli.py"), "run", str(SPEC_DIR), "--data-root", str(data_root),
            "--scenarios", ",".join(EVA), "--agent", crasher, "--concurrency", "1"]  # fmt: skip
    env = {**os.environ, "CRASH_ON": EVA[1], "PYTHONPATH": str(REPO)}
    out = tmp_path / "run"
    done = subprocess.run(
        [*argv, "--output-dir", str(out)], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr  # a run of FAILs (exit 0), not the agent's exit code 9
    assert "exited with code 9 before reporting " in done.stderr
    assert "session(s) not yet started run in a new worker" in done.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["results"] == 3 and summary["errors"] == 0 and summary["missing"] == []
    found = _metrics(out)
    assert (
        found[EVA[1]]["stop_reason"] == "agent_error" and "while this session ran" in found[EVA[1]]["error"]
    )
    assert [found[n]["stop_reason"] for n in (EVA[0], EVA[2])] == ["exit", "exit"]  # its goodbye
    here = tmp_path / "here"
    kept = subprocess.run([*argv, "--workers", "1", "--output-dir", str(here)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert kept.returncode == 9 and not (here / "summary.json").exists()


def test_an_agent_that_ends_its_process_as_it_loads_is_one_line_exit_2(
    tmp_path: Path, data_root: Path
) -> None:
    """Found by a breaker pass: the module is loaded in the run's own process, so ``os._exit(0)``
    at import ended ``evalctl run`` with exit 0 having run nothing (a CI job's pass), and a
    segfault with 139 and no word. It is loaded once in a forked probe first."""
    for name, body, how in (
        ("exits", "import os\nos._exit(0)\n", "exited with code 0"),
        ("segfaults", "import ctypes\nctypes.string_at(0)\n", "was killed by signal 11"),
    ):
        (tmp_path / f"{name}.py").write_text(body)
        agent = f"python:{tmp_path / name}.py:make"
        done = subprocess.run(
            [sys.executable, str(REPO / "cli.py"), "run", str(SPEC_DIR), "--data-root", str(data_root),
             "--scenarios", EVA[0], "--agent", agent, "--output-dir", str(tmp_path / name)],
            cwd=REPO, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 2, done.stderr
        assert done.stderr.strip() == (
            f"evalctl: --agent {agent}: loading it ended its process ({how}) before it could run: "
            "its module does that at import, or its factory's set-up does"
        )


def _run_agent(
    tmp_path: Path, data_root: Path, source: str, *more: str, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """``evalctl run`` of the first eva scenario in a fresh process with the agent ``source``
    (its ``make`` factory) and the options ``more``; the finished process and its run folder."""
    path = tmp_path / f"agent{len(list(tmp_path.glob('agent*.py')))}.py"
    path.write_text(source)
    out = tmp_path / f"run{len(list(tmp_path.glob('run*')))}"
    done = subprocess.run(
        [sys.executable, str(REPO / "cli.py"), "run", str(SPEC_DIR), "--data-root", str(data_root),
         "--scenarios", EVA[0], "--agent", f"python:{path}:make", "--no-progress", *more,
         "--output-dir", str(out)],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    return done, out


def test_an_agent_task_that_ignores_cancellation_does_not_hold_the_run(
    tmp_path: Path, data_root: Path
) -> None:
    """Found by a breaker pass: with ``--workers 1`` the run wrote its summary and then waited for
    ever on the agent's task that catches its cancellation (asyncio.run waits for every task). The
    task is now named and left behind; the run ends with its own exit code, in both process modes."""
    from tests.unit.scale.test_isolation import STUBBORN

    for mode in (["--workers", "1"], []):
        done, out = _run_agent(tmp_path, data_root, STUBBORN, *mode)
        assert done.returncode == 0, done.stderr
        assert "and was left behind: _forever() at " in done.stderr, mode
        assert "Task was destroyed" not in done.stderr
        summary = json.loads((out / "summary.json").read_text())
        assert summary["results"] == 1 and summary["errors"] == 0 and summary["missing"] == []


#: An agent whose first turn starts a thread (not a daemon) that never ends, then plays the gold.
THREADED = """
import threading

from examples.python_agent import make_agent as gold_agent


def make(session, tools):
    turn = gold_agent(session, tools)
    started = []

    async def first(line):
        if not started:
            started.append(threading.Thread(target=threading.Event().wait, name="agents-forever"))
            started[0].start()
        return await turn(line)

    return first
"""


def test_an_agent_thread_that_never_ends_does_not_hold_the_run(tmp_path: Path, data_root: Path) -> None:
    """Found by a breaker pass: with ``--workers 1`` the interpreter joined the agent's thread at
    exit, for ever, without a word; in a worker the run waited 20 s and then killed it, saying
    nothing. The thread is now named and left behind after 5 s; the run ends with its own code."""
    for mode in (["--workers", "1"], []):
        done, out = _run_agent(tmp_path, data_root, THREADED, *mode)
        assert done.returncode == 0, done.stderr
        assert "1 thread still running 5 s after the end left behind: agents-forever" in done.stderr, mode
        assert "did not end within 20 s" not in done.stderr  # the worker ended by itself
        summary = json.loads((out / "summary.json").read_text())
        assert summary["results"] == 1 and summary["errors"] == 0 and summary["missing"] == []


#: An agent whose first turn schedules a callback that raises SystemExit(4) ($STRAY=exit) or
#: KeyboardInterrupt ($STRAY=interrupt) on the run's event loop, or a task that raises the latter
#: ($STRAY=task: before, its "Task exception was never retrieved" traceback followed the line).
STRAY = """
import asyncio, os


def make(session, tools):
    async def turn(line):
        exc = KeyboardInterrupt() if os.environ.get("STRAY") != "exit" else SystemExit(4)

        def boom():
            raise exc

        async def task():
            await asyncio.sleep(0.01)
            raise exc

        if os.environ.get("STRAY") == "task":
            asyncio.get_running_loop().create_task(task())
        else:
            asyncio.get_running_loop().call_soon(boom)
        await asyncio.sleep(30)
        return "hello"

    return turn
"""


@pytest.mark.parametrize(
    ("how", "named"),
    [("exit", "SystemExit(4)"), ("interrupt", "KeyboardInterrupt()"), ("task", "KeyboardInterrupt()")],
)
def test_an_exit_raised_by_the_agents_callback_is_not_the_runs_exit_code(
    tmp_path: Path, data_root: Path, how: str, named: str
) -> None:
    """Found by a breaker pass: with ``--workers 1`` the agent's callback raising SystemExit(4)
    ended ``evalctl run`` with exit 4 and no word (a KeyboardInterrupt: 130 "interrupted", no
    summary). Now one line names it, exit 3, and the summary is written."""
    done, out = _run_agent(tmp_path, data_root, STRAY, "--workers", "1", env={"STRAY": how})
    assert done.returncode == 3, done.stderr
    assert f"evalctl: {named} was raised outside evalctl's own work" in done.stderr
    assert "Traceback" not in done.stderr
    assert json.loads((out / "summary.json").read_text())["interrupted"] is True


#: An agent whose first turn leaves an async generator suspended whose ``finally`` swallows every
#: exception and waits again, for ever.
SWALLOWING = """
import asyncio

from examples.python_agent import make_agent as gold_agent

KEEP = []


async def forever():
    try:
        yield 1
        yield 2
    finally:
        while True:
            try:
                await asyncio.sleep(100)
            except BaseException:
                pass


def make(session, tools):
    turn = gold_agent(session, tools)

    async def first(line):
        if not KEEP:
            KEEP.append(forever())
            await KEEP[0].__anext__()
        return await turn(line)

    return first
"""


def test_an_async_generator_that_never_closes_does_not_hold_the_process(
    tmp_path: Path, data_root: Path
) -> None:
    """Found by a breaker pass: with ``--workers 1`` the run wrote its summary, said the generator
    was left behind, then hung in the interpreter's collection of it at exit (its ``finally``
    swallowed every exception). The process now ends at once once something was left behind."""
    done, out = _run_agent(tmp_path, data_root, SWALLOWING, "--workers", "1")
    assert done.returncode == 0, done.stderr
    assert "async generators still closing 5.0 s after the end" in done.stderr
    assert json.loads((out / "summary.json").read_text())["results"] == 1
