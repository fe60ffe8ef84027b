"""The RTVI adapter's cost (issue #27, point 5): the 50 eva scenarios with a gold-replaying LLM through
``--agent rtvi+ws://`` (examples/rtvi_bot.py, a pipecat pipeline in a process of its own) next to
``--agent replay`` and the plain protocol (``evalctl serve agent``: the replay agent as an external
``ws://`` side), one session at a time (the bot takes one client).

Each agent runs ``ROUNDS`` times after a warm-up; the median wall and CPU are kept. Definitions
(wall, CPU, overhead per turn, ratio): tests/bench/cost.py. The wall time holds the bot's own
pipeline (pipecat's frame processing: the agent's time, as a model's would be); evalctl's CPU is
the adapter's own cost (the bot's and the external agent's CPU are in their processes).
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from tests.bench.cost import report, rounds
from tests.conftest import REPO, SPEC_DIR
from tests.rtvi_helpers import rtvi_bot

ROUNDS = 3


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


def run() -> None:
    data_root = _data_root()
    with _plain_agent() as uri, rtvi_bot(data_root) as url:
        agents = {"replay": "replay", "plain ws://": uri, "rtvi+ws://": url}
        runs = rounds(agents, data_root, ROUNDS, concurrency=1)
    report(runs, "plain ws://", ["rtvi+ws://"], external=True)
