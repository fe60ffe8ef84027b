"""The RTVI adapter's cost (issue #27, point 5): the 50 eva scenarios with a gold-replaying LLM through
``--agent rtvi+ws://`` (examples/rtvi_bot.py, a pipecat pipeline) next to ``--agent replay`` and the
plain protocol (``evalctl serve agent``: the replay agent as an external ``ws://`` side).

Prints each run's wall time (``summary.json``'s ``wall_time_s``) and the CPU time of the evalctl
process, per agent turn, and the overhead per turn over ``replay`` of the adapter against the plain
protocol's, in both (target: <= 2x). The wall time holds the bot's own pipeline (pipecat's frame
processing: the agent's time, as a model's would be); evalctl's CPU is the adapter's own cost.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from tests.conftest import REPO, SPEC_DIR
from tests.rtvi_helpers import rtvi_bot

TARGET = 2.0


def _data_root() -> Path:
    return Path(os.environ.get("EVAL_DATA_ROOT", REPO / "data"))


@contextlib.contextmanager
def _plain_agent() -> Iterator[str]:
    """``evalctl serve agent`` (the replay agent) in a process of its own; yields its ws:// URL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    cmd = [sys.executable, "-m", "cli", "serve", "agent", "--port", str(port), "--spec-dir", str(SPEC_DIR)]
    cmd += ["--data-root", str(_data_root())]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("evalctl serve agent did not start")
            time.sleep(0.1)
        yield f"ws://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


def _measure(out: Path, *args: str) -> tuple[float, float, int]:
    """(wall seconds of the run's sessions, CPU seconds of the evalctl process, agent turns) of one
    run of the 50 scenarios, one session at a time."""
    cmd = [sys.executable, "-m", "cli", "run", str(SPEC_DIR), "--data-root", str(_data_root())]
    cmd += ["--output-dir", str(out), "--workers", "1", "--concurrency", "1", *args]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"evalctl run {' '.join(args)} exited {proc.returncode}")
    wall = float(json.loads((out / "summary.json").read_text())["wall_time_s"])
    turns = sum(json.loads(m.read_text())["agent_turns"] for m in out.glob("*/metrics.json"))
    return wall, usage.ru_utime + usage.ru_stime, turns


def run() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        replay = _measure(base / "replay")
        with _plain_agent() as uri:
            plain = _measure(base / "plain", "--agent", uri)
        with rtvi_bot(_data_root()) as url:
            rtvi = _measure(base / "rtvi", "--agent", url)
    runs = {"replay": replay, "plain ws://": plain, "rtvi+ws://": rtvi}
    for label, (wall, cpu, turns) in runs.items():
        print(
            f"  {label:12} {wall:6.2f} s wall, {1000 * wall / turns:6.2f} ms per agent turn; "
            f"evalctl's CPU {1000 * cpu / turns:6.2f} ms per agent turn"
        )
    for what, at in (("wall time", 0), ("evalctl's CPU", 1)):
        plain_over = (plain[at] - replay[at]) / plain[2]
        rtvi_over = (rtvi[at] - replay[at]) / rtvi[2]
        ratio = rtvi_over / plain_over if plain_over > 0 else float("inf")
        verdict = "ok" if ratio <= TARGET else "over the target"
        print(
            f"  {what} per turn over replay: plain {1000 * plain_over:.2f} ms, "
            f"rtvi {1000 * rtvi_over:.2f} ms: "
            f"{ratio:.1f}x the plain protocol's (target <= {TARGET:.0f}x: {verdict})"
        )
