"""What an in-process agent (``python:``) prints never reaches evalctl's stdout: in its supervised
worker (``engine.run.workers.stdout_to_stderr``: forked or spawned) descriptor 1 and
``sys.stdout`` go to stderr, and so does what it prints as the run's process loads it
(``engine.run.workers.loading_user_code``). stdout carries only the run's own output.

Before: an agent printing ``Overall Success Rate: 100.0%`` (or ``\\x1b[2J``) put that line on
evalctl's stdout, before the run's own summary: ``evalctl run ... | grep 'Overall Success Rate'``
in CI read the agent's line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.run import workers
from engine.run.runner import run
from tests.conftest import REPO
from tests.runtime_helpers import run_options
from tests.unit.scale.helpers import SHOP, SHOP_RUN

#: An agent printing a fake summary line everywhere it can: as its module loads, in its factory
#: (with a clear-screen escape), in its turn (``print``, a write to descriptor 1, a child process).
AGENT = """
import os
import subprocess
import sys

print("Overall Success Rate: 100.0% (FAKE import)")


def make(session, tools):
    print("Overall Success Rate: 100.0% (FAKE factory)\\x1b[2J")

    async def turn(line):
        print("Overall Success Rate: 100.0% (FAKE turn)", flush=True)
        os.write(1, b"Overall Success Rate: 100.0% (FAKE fd 1)\\n")
        subprocess.run([sys.executable, "-c", "print('Overall Success Rate: 100.0% (FAKE child)')"])
        await tools.call("end_conversation", "{}", say="Goodbye.")
        return ""

    return turn
"""

FAKES = ("FAKE import", "FAKE factory", "FAKE turn", "FAKE fd 1", "FAKE child")
TIMEOUT_S = 120  # a safety net


def _agent(tmp_path: Path) -> Path:
    path = tmp_path / "agent.py"
    path.write_text(AGENT)
    return path


def test_an_agents_prints_go_to_stderr_not_to_the_runs_stdout(tmp_path: Path) -> None:
    """The default run: the agent in its forked supervised worker (``workers.isolated``)."""
    agent, out = _agent(tmp_path), tmp_path / "run"
    argv = [sys.executable, "-m", "cli", *SHOP_RUN, "--agent", f"python:{agent}:make", "--no-progress"]
    argv += ["--output-dir", str(out)]
    path = os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])
    done = subprocess.run(
        argv, cwd=REPO, env={**os.environ, "PYTHONPATH": path}, capture_output=True, text=True,
        timeout=TIMEOUT_S,
    )  # fmt: skip
    assert done.returncode in (0, 1, 3), done.stderr
    rates = [line for line in done.stdout.splitlines() if line.startswith("Overall Success Rate:")]
    assert len(rates) == 1 and "FAKE" not in rates[0], done.stdout  # the run's own line only
    assert "FAKE" not in done.stdout and "\x1b[2J" not in done.stdout, done.stdout
    assert f"results: {out}" in done.stdout
    for fake in FAKES:
        assert f"Overall Success Rate: 100.0% ({fake})" in done.stderr, (fake, done.stderr)


async def test_a_spawned_workers_agent_prints_to_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """``--workers 2`` where workers are spawned (``workers.start_method``: not Linux, or threads
    run): each worker, a fresh interpreter, loads the agent itself."""
    chosen: list[str] = []

    def spawn() -> str:
        chosen.append("spawn")
        return "spawn"

    monkeypatch.setattr(workers, "start_method", spawn)
    monkeypatch.setattr(workers, "MIN_JOBS_PER_WORKER", 1)
    agent = _agent(tmp_path)
    opts = run_options(
        *SHOP, agent=f"python:{agent}:make", workers=2, concurrency=2, progress=False,
        output_dir=tmp_path / "run",
    )  # fmt: skip
    report = await run(opts)
    assert report.summary is not None and report.summary.results == 3 and chosen
    captured = capfd.readouterr()
    assert "FAKE" not in captured.out and "\x1b[2J" not in captured.out, captured.out
    for fake in FAKES:
        assert f"Overall Success Rate: 100.0% ({fake})" in captured.err, (fake, captured.err)
