"""``--agent rtvi+ws://``: the example pipecat RTVI bot (examples/rtvi_bot.py) on the 50 eva scenarios,
and the same mistakes over RTVI and over the plain protocol scored alike."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.domains.registry import plugins
from engine.session.backends import SessionInfo
from engine.session.sides.server import server_uri, start_side_server
from engine.spec.loader import load_domain
from tests.conftest import SPEC_DIR
from tests.domains.eva_airline import rtvi_brains

pytest.importorskip("pipecat.frames.protobufs.frames_pb2")

ROOT = Path(__file__).resolve().parents[3]
BOT = ROOT / "examples" / "rtvi_bot.py"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def rtvi_bot(data_root: Path, brain: str = "gold") -> Iterator[str]:
    """examples/rtvi_bot.py in a process of its own; yields its rtvi+ws:// URL once it listens."""
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = [sys.executable, str(BOT), "--port", str(port), "--spec-dir", str(SPEC_DIR)]
    args += ["--data-root", str(data_root), "--brain", brain]
    proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
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
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
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


def test_the_pipecat_rtvi_bot_passes_all_50_with_its_hash_equal_to_the_engines(
    data_root: Path, tmp_path: Path
) -> None:
    with rtvi_bot(data_root) as url:
        evalctl_run(data_root, tmp_path / "rtvi", "--agent", url)
    evalctl_run(data_root, tmp_path / "replay")
    rtvi, replay = results(tmp_path / "rtvi"), results(tmp_path / "replay")
    assert len(rtvi) == 50 and set(rtvi) == set(replay)
    for name, got in rtvi.items():
        assert got["metrics"]["is_successful"] is True, name
        assert got["metrics"]["agent_backend"] == url
        hashes = got["hashes"]
        assert hashes["db_hash"] == hashes["expected_db_hash"] == replay[name]["hashes"]["db_hash"], name
        assert hashes["agent_db_hash"] == f"{hashes['db_hash']} (matches db_hash)", name
        # the calls the bot ran itself, re-run by the engine: those of replay, arguments and results
        assert [(c["name"], json.loads(c["arguments"]), c["result"]) for c in got["calls"]] == [
            (c["name"], json.loads(c["arguments"]), c["result"]) for c in replay[name]["calls"]
        ], name


@contextlib.contextmanager
def plain_agent(data_root: Path) -> Iterator[str]:
    """The same mistakes as a plain-protocol ws:// agent (evalctl's side server, in a thread)."""
    loaded = load_domain(SPEC_DIR, data_root, plugins=plugins())
    scenarios = {s.name: s for s in loaded.scenarios}
    loop = asyncio.new_event_loop()
    ready: list[Any] = []

    def make(info: SessionInfo) -> rtvi_brains.MistakenAgent:
        return rtvi_brains.MistakenAgent(scenarios, info)

    async def serve() -> None:
        server = await start_side_server(make, role="agent")
        ready.append(server)

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(serve(), loop).result(10)
    try:
        yield server_uri(ready[0])
    finally:
        ready[0].close()
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)


def test_malformed_unknown_parallel_and_empty_are_scored_as_over_the_plain_protocol(
    data_root: Path, tmp_path: Path
) -> None:
    one = ("--scenarios", rtvi_brains.SCENARIO)
    with rtvi_bot(data_root, "tests.domains.eva_airline.rtvi_brains:mistakes") as url:
        evalctl_run(data_root, tmp_path / "rtvi", "--agent", url, *one)
    with plain_agent(data_root) as uri:
        evalctl_run(data_root, tmp_path / "plain", "--agent", uri, *one)
    rtvi = results(tmp_path / "rtvi")[rtvi_brains.SCENARIO]
    plain = results(tmp_path / "plain")[rtvi_brains.SCENARIO]
    calls = [(c["name"], c["arguments"]) for c in rtvi["calls"]]
    # each mistake reached the engine: the raw text that is not JSON, the unknown tool, in one step
    assert calls[:3] == [
        ("get_reservation", rtvi_brains.BROKEN.arguments),
        ("lookup_everything", rtvi_brains.UNKNOWN.arguments),
        ("get_reservation", calls[2][1]),
    ]
    assert rtvi["calls"][0]["result"]["status"] == rtvi["calls"][1]["result"]["status"] == "error"
    assert [c["turn"] for c in rtvi["calls"][:3]] == [1, 1, 1]
    # ... and was scored as the same mistake over the plain protocol
    assert rtvi["calls"] == plain["calls"]
    keep = ("is_successful", "success_breakdown", "stop_reason", "db_hash", "agent_turns", "num_tool_calls")
    assert {k: rtvi["metrics"][k] for k in keep} == {k: plain["metrics"][k] for k in keep}
    assert rtvi["metrics"]["is_successful"] is False  # the empty turn skipped the gold's rebooking
    assert rtvi["hashes"]["agent_db_hash"].endswith("(matches db_hash)")
