"""``--agent rtvi+ws://``: the example pipecat RTVI bot (examples/rtvi_bot.py) on the 50 eva scenarios,
and the same mistakes over RTVI and over the plain protocol scored alike."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.domains.registry import plugins
from engine.session.backends import SessionInfo
from engine.session.backends.rtvi import tool_map
from engine.session.sides.server import server_uri, start_side_server
from engine.spec.loader import load_domain
from tests.conftest import SPEC_DIR
from tests.domains.eva_airline import rtvi_brains
from tests.rtvi_helpers import evalctl_run, results, rtvi_bot

pytest.importorskip("pipecat.frames.protobufs.frames_pb2")


def test_the_eva_tool_map_names_every_eva_tool(data_root: Path) -> None:
    loaded = load_domain(SPEC_DIR, data_root, plugins=plugins())
    names = tool_map(loaded.scenarios[0])
    assert names.tool_domain == "eva_airline"
    assert sorted(names.to_bot) == sorted({t.name for t in loaded.domain.tools.tools})
    assert names.bot_name("get_reservation") == "GetReservationTool"
    assert names.engine_name("GetReservationTool") == "get_reservation"


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
