"""Ctrl-C while a session runs, its agent (``python:``) blocked in a thread (``asyncio.to_thread``)
that never ends: the end of the stopped run waits briefly (``engine.util.end_wait``), names the
thread once, before the summary, and the run is marked interrupted with its summary written.

Before: the end waited 5 s for the executor's thread, then 5 s more for the same thread at the
exit (named twice, the second time after the run's last line ``interrupted; ...``), in this
process (``--workers 1``) as in the supervised worker. The test signals on a marker file the
agent's thread writes, never on a sleep."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.unit.scale.helpers import SHOP_RUN

#: The first turn blocks in a thread of asyncio's default executor for good, once it has marked
#: ``$MARK``: a session is in flight when the test presses Ctrl-C.
AGENT = """
import asyncio
import os
import threading


def _block():
    open(os.environ["MARK"], "w").close()
    threading.Event().wait()


def make(session, tools):
    async def turn(line):
        await asyncio.to_thread(_block)
        return ""

    return turn
"""

TIMEOUT_S = 120  # a safety net, not the sync


def _sigint_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _stopped_run(tmp_path: Path, workers: list[str]) -> tuple[int, list[str], Path]:
    agent, mark, out = tmp_path / "agent.py", tmp_path / "in-the-thread", tmp_path / "run"
    agent.write_text(AGENT)
    argv = [sys.executable, "-m", "cli", *SHOP_RUN, "--agent", f"python:{agent}:make", "--no-progress"]
    argv += [*workers, "--concurrency", "1", "--output-dir", str(out)]
    path = os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])
    env = {**os.environ, "PYTHONPATH": path, "MARK": str(mark)}
    proc = subprocess.Popen(
        argv, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        start_new_session=True, preexec_fn=_sigint_default,
    )  # fmt: skip
    try:
        for _ in range(TIMEOUT_S * 20):
            if mark.exists() or proc.poll() is not None:
                break
            threading.Event().wait(0.05)
        assert mark.exists(), f"the agent's thread never began (exit {proc.poll()})"
        os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C
        _, stderr = proc.communicate(timeout=TIMEOUT_S)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, [line for line in stderr.splitlines() if line.strip()], out


@pytest.mark.parametrize("workers", [["--workers", "1"], []], ids=["in-process", "supervised-worker"])
def test_a_stopped_run_waits_briefly_for_the_agents_thread_and_names_it_once(
    tmp_path: Path, workers: list[str]
) -> None:
    code, said, out = _stopped_run(tmp_path, workers)
    text = "\n".join(said)
    assert code == 130, text
    named = [line for line in said if "thread" in line and "still running" in line]
    assert len(named) == 1, text  # once (before: the executor's line, then the exit's for the same thread)
    assert "within 5 s" not in text and "5 s after the end" not in text, text
    assert said[-1] == f"evalctl: interrupted; finished results kept in {out}", text  # the last line
    assert "Traceback" not in text
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["interrupted"] is True and summary["missing"], summary
    assert "Run was interrupted" in (out / "all_summary.txt").read_text(encoding="utf-8")
