"""Helpers of the ``--agent rtvi+ws://`` tests and bench: the example pipecat RTVI bot in a process
of its own, a command-line run, and a run folder's results per scenario."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.conftest import REPO, SPEC_DIR

BOT = REPO / "examples" / "rtvi_bot.py"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def rtvi_bot(data_root: Path, brain: str = "gold") -> Iterator[str]:
    """examples/rtvi_bot.py in a process of its own; yields its rtvi+ws:// URL once it listens."""
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    args = [sys.executable, str(BOT), "--port", str(port), "--spec-dir", str(SPEC_DIR)]
    args += ["--data-root", str(data_root), "--brain", brain]
    proc = subprocess.Popen(args, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while True:  # the bot is up when its port takes a connection
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:] if proc.stderr else ""
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            assert time.monotonic() < deadline, "the bot did not listen within 60 s"
            time.sleep(0.1)
        yield f"rtvi+ws://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


def evalctl_run(data_root: Path, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "cli", "run", str(SPEC_DIR), "--data-root", str(data_root)]
    cmd += ["--output-dir", str(out), "--workers", "1", *args]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done


def results(out: Path) -> dict[str, dict[str, Any]]:
    """Per scenario: metrics, tool calls and the final hash lines."""
    found: dict[str, dict[str, Any]] = {}
    for metrics in out.glob("*/metrics.json"):
        sdir = metrics.parent
        hashes = dict(
            line.split(": ", 1) for line in (sdir / "final_scenario_db_hash.txt").read_text().splitlines()
        )
        calls = json.loads((sdir / "tool_calls.json").read_text())
        found[sdir.name] = {"metrics": json.loads(metrics.read_text()), "calls": calls, "hashes": hashes}
    return found
