"""An agent running the user's own code (``python:``) in a run small enough for one process runs
in one supervised worker (``engine.run.workers.isolated``): its crash (``os._exit``, a segfault)
fails the sessions it had in flight as the agent's ``agent_error``, the sessions it had not started
run in a new worker, and the run writes its summary; a worker whose event loop stays blocked is
killed and handled the same way. ``isolate_agent_code=False`` (the CLI's ``--workers 1``) keeps
everything in this process. Each run is made in a fresh interpreter (``isolation_child``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from engine.session.voice.tts import missing_tts
from tests.conftest import REPO
from tests.unit.scale.helpers import NAMES
from tests.unit.scale.isolation_child import CRASHER


def _metrics(run_dir: Path) -> dict[str, dict[str, Any]]:
    """Per scenario (one trial), its ``metrics.json``."""
    return {
        p.relative_to(run_dir).parts[0]: json.loads(p.read_text()) for p in run_dir.glob("**/metrics.json")
    }


def _all_metrics(run_dir: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """Per (scenario, trial folder), its ``metrics.json``."""
    return {
        (p.parent.parent.name, p.parent.name): json.loads(p.read_text())
        for p in run_dir.glob("*/trial_*/metrics.json")
    }


def _run(tmp_path: Path, env: dict[str, str] | None = None, **args: Any) -> dict[str, Any]:
    """The mock shop run in a fresh interpreter with ``args`` (``isolation_child``); its JSON line."""
    args = {"scenarios": list(NAMES), "output_dir": str(tmp_path / "run"), "quiet": True, **args}
    done = subprocess.run(
        [sys.executable, "-m", "tests.unit.scale.isolation_child", json.dumps(args)],
        cwd=REPO, env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, f"exit {done.returncode}: {done.stderr[-2000:]}"
    return json.loads(done.stdout.splitlines()[-1])


@pytest.fixture
def crasher(tmp_path: Path) -> str:
    path = tmp_path / "crasher.py"
    path.write_text(CRASHER)
    return f"python:{path}:make"


def test_a_crash_fails_the_session_it_ran_and_the_others_still_run(tmp_path: Path, crasher: str) -> None:
    """Before: the run's process died with the agent's, and no summary was written."""
    out = _run(tmp_path, {"CRASH_ON": NAMES[1]}, agent=crasher, trials=2, concurrency=1)
    assert out == {"exit_code": 0, "isolated": True, "seen": 0}
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["results"] == 6 and summary["errors"] == 0 and summary["missing"] == []
    found = _all_metrics(tmp_path / "run")
    assert len(found) == 6
    for (name, _), metrics in found.items():
        if name == NAMES[1]:  # one at a time: each crash was in this scenario's session alone
            assert metrics["stop_reason"] == "agent_error" and metrics["is_successful"] is False
            assert "while this session ran" in metrics["error"] and "exited with code 9" in metrics["error"]
        else:  # ended before a crash (scored by the run's process if need be), or run by the next worker
            assert metrics["stop_reason"] == "exit" and metrics["error"] is None


def test_an_agent_that_crashes_every_session_ends_with_every_session_its_failure(
    tmp_path: Path, crasher: str
) -> None:
    """Each worker round fails at least one session, so the rounds end; nothing is an ``error``."""
    out = _run(tmp_path, agent=crasher, trials=3, concurrency=2)
    assert out["exit_code"] == 0 and out["isolated"] is True
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["results"] == 9 and summary["errors"] == 0 and summary["overall"]["passed"] == 0
    assert [m["stop_reason"] for m in _all_metrics(tmp_path / "run").values()] == ["agent_error"] * 9


def test_without_isolation_the_agent_runs_in_this_process(tmp_path: Path) -> None:
    """``isolate_agent_code=False``: the agent's factory runs in the run's process (a debugger's
    breakpoint works); by default it runs in the supervised worker."""
    here = _run(tmp_path / "a", agent="recording", scenarios=[NAMES[0]], isolate=False)
    assert here == {"exit_code": 0, "isolated": False, "seen": 1}
    there = _run(tmp_path / "b", agent="recording", scenarios=[NAMES[0]])
    assert there == {"exit_code": 0, "isolated": True, "seen": 0}
    assert _metrics(tmp_path / "b" / "run")[NAMES[0]]["stop_reason"] == "exit"  # it ran, over there


#: Blocks its worker's event loop (a synchronous sleep in async code) in every session.
BLOCKER = """
import time


def make(session, tools):
    async def turn(line):
        time.sleep(600)
        return "too late"

    return turn
"""


def test_an_agent_that_blocks_its_event_loop_is_stopped_and_fails(tmp_path: Path) -> None:
    """Before: no timeout fires in a blocked loop, and the run hung for as long as the agent slept."""
    path = tmp_path / "blocker.py"
    path.write_text(BLOCKER)
    out = _run(tmp_path, agent=f"python:{path}:make", concurrency=2, turn_timeout_s=0.5,
               beat_s=0.1, hang_grace_s=0.5)  # fmt: skip
    assert out["exit_code"] == 0 and out["isolated"] is True
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["results"] == 3 and summary["errors"] == 0 and summary["overall"]["passed"] == 0
    for metrics in _metrics(tmp_path / "run").values():
        assert metrics["stop_reason"] == "agent_error"
        assert "without a sign of life (its event loop was blocked" in metrics["error"]


def test_a_caller_simulator_of_ones_own_code_that_crashes_is_the_callers_error(
    tmp_path: Path, crasher: str
) -> None:
    """``--user python:...``: its crash is the simulator's (``error``, source ``user_simulator``),
    never the agent's failure; the run writes its summary."""
    out = _run(tmp_path, user=crasher, concurrency=1)
    assert out["isolated"] is True and out["exit_code"] == 3  # results without a verdict
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["results"] == 3 and summary["errors"] == 3 and summary["missing"] == []
    for metrics in _metrics(tmp_path / "run").values():
        assert metrics["is_successful"] == "error" and metrics["error_cause"]["source"] == "user_simulator"
        assert "the caller simulator's own code runs there" in metrics["error"]


@pytest.mark.skipif(missing_tts() is not None, reason=f"local TTS: {missing_tts()}")
def test_a_voice_run_of_an_in_process_agent_runs_in_its_worker(tmp_path: Path) -> None:
    """Found by a breaker pass: the worker was a daemonic process, and a voice run's speech pool
    (worker processes) could not start in it: every session was an ``error`` ("daemonic processes
    are not allowed to have children")."""
    out = _run(tmp_path, agent="recording", scenarios=[NAMES[0]], voice=True)
    assert out == {"exit_code": 0, "isolated": True, "seen": 0}
    [metrics] = _metrics(tmp_path / "run").values()
    assert metrics["error"] is None and metrics["stop_reason"] == "exit"


#: Forks a helper that would live a minute (its pid in $HELPER_PID_FILE), then ends the call.
FORKER = """
import os
import time


def make(session, tools):
    async def turn(line):
        pid = os.fork()
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        with open(os.environ["HELPER_PID_FILE"], "a") as out:
            out.write(f"{pid}\\n")
        await tools.call("end_conversation", "{}", say="Goodbye.")
        return ""

    return turn
"""


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    with open(f"/proc/{pid}/stat") as stat:  # a zombie waiting for its reaper is gone too
        return stat.read().split()[2] == "Z"


def test_a_process_the_agent_forks_neither_holds_the_run_nor_outlives_it(tmp_path: Path) -> None:
    """Found by a breaker pass: the helper held the worker's pipe open, so the run waited for it
    (a minute here; for ever for a server), and it outlived the run."""
    path, pids = tmp_path / "forker.py", tmp_path / "pids.txt"
    path.write_text(FORKER)
    out = _run(tmp_path, {"HELPER_PID_FILE": str(pids)}, agent=f"python:{path}:make", concurrency=1)
    assert out["exit_code"] == 0 and out["isolated"] is True
    helpers = [int(x) for x in pids.read_text().split()]
    assert len(helpers) == 3 and all(_gone(pid) for pid in helpers)  # killed with the worker's group
    assert {m["stop_reason"] for m in _metrics(tmp_path / "run").values()} == {"exit"}


#: Sends its own process SIGTERM in the session of $CRASH_ON (as if the run had been stopped).
SELF_TERMINATING = """
import asyncio
import os
import signal


def make(session, tools):
    async def turn(line):
        if session.scenario["name"] == os.environ["CRASH_ON"]:
            os.kill(os.getpid(), signal.SIGTERM)
            await asyncio.sleep(0.5)
            return "still here"
        await tools.call("end_conversation", "{}", say="Goodbye.")
        return ""

    return turn
"""


def test_an_agent_that_stops_its_worker_fails_instead_of_leaving_its_sessions_out(tmp_path: Path) -> None:
    """Found by a breaker pass: the worker stopped as if the run had stopped it, and every
    unfinished session was missing (the agent's hard scenario left out, results 0, exit 3)."""
    path = tmp_path / "term.py"
    path.write_text(SELF_TERMINATING)
    out = _run(tmp_path, {"CRASH_ON": NAMES[1]}, agent=f"python:{path}:make", concurrency=1)
    assert out["exit_code"] == 0 and out["isolated"] is True
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["results"] == 3 and summary["missing"] == [] and summary["errors"] == 0
    found = _metrics(tmp_path / "run")
    assert found[NAMES[1]]["stop_reason"] == "agent_error"
    assert "not asked to by the run" in found[NAMES[1]]["error"]
    assert {found[n]["stop_reason"] for n in (NAMES[0], NAMES[2])} == {"exit"}


#: Leaves a task behind that ignores cancellation: the worker's event loop never finishes.
STUBBORN = """
import asyncio

KEEP = []


async def _forever():
    while True:
        try:
            await asyncio.sleep(1)
        except asyncio.CancelledError:
            pass


def make(session, tools):
    async def turn(line):
        KEEP.append(asyncio.ensure_future(_forever()))
        await tools.call("end_conversation", "{}", say="Goodbye.")
        return ""

    return turn
"""


def test_a_worker_that_does_not_end_after_its_last_session_is_killed(tmp_path: Path) -> None:
    """Found by a breaker pass: every result was written, and the run hung for ever."""
    path = tmp_path / "stubborn.py"
    path.write_text(STUBBORN)
    out = _run(tmp_path, agent=f"python:{path}:make", concurrency=1, stop_grace_s=1.0, beat_s=0.2)
    assert out["exit_code"] == 0 and out["isolated"] is True
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["results"] == 3 and summary["missing"] == [] and summary["errors"] == 0


#: Blocks its worker's event loop for good, after writing the worker's pid to $WORKER_PID_FILE.
BLOCKED_FOR_GOOD = """
import os
import time


def make(session, tools):
    async def turn(line):
        with open(os.environ["WORKER_PID_FILE"], "w") as out:
            out.write(str(os.getpid()))
        time.sleep(600)
        return ""

    return turn
"""


def test_a_blocked_worker_ends_when_the_runs_process_is_killed(tmp_path: Path) -> None:
    """Found by a breaker pass: a worker whose loop the agent blocked could not act on the SIGTERM
    its parent's death sends, ran on under PID 1 and kept the run folder locked."""
    import time

    path, pid_file = tmp_path / "blocked.py", tmp_path / "worker.pid"
    path.write_text(BLOCKED_FOR_GOOD)
    args = {"scenarios": [NAMES[0]], "output_dir": str(tmp_path / "run"), "quiet": True,
            "agent": f"python:{path}:make", "stop_grace_s": 1.0}  # fmt: skip
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.unit.scale.isolation_child", json.dumps(args)],
        cwd=REPO, env={**os.environ, "WORKER_PID_FILE": str(pid_file)},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        for _ in range(600):  # the agent says when it is blocked (its file: no timing)
            if pid_file.exists() and pid_file.read_text():
                break
            time.sleep(0.1)
        worker = int(pid_file.read_text())
        assert worker != child.pid
    finally:
        child.kill()
        child.wait(timeout=10)
    for _ in range(300):  # its parent watch ends it after the 1 s grace
        if _gone(worker):
            break
        time.sleep(0.1)
    assert _gone(worker)
