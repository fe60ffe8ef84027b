"""What a run does around its sessions: jobs start longest first, built-in sides are served on a
private Unix socket with sessions back to back on a connection, the loaded specs are frozen out of
the collector's way for the run."""

from __future__ import annotations

import dataclasses
import gc
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from websockets.protocol import State

from engine.domains.registry import plugins
from engine.results.resume import Job, longest_first, plan_jobs
from engine.session.backends.replay import ReplayFactory
from engine.session.conversation import SessionLimits, run_session
from engine.session.setup import session_setup
from engine.session.sides import SideLink, SideServer, builtin_side, link
from engine.spec.loader import load_domain
from engine.util import heap
from tests.runtime_helpers import run_options
from tests.unit.scale.helpers import SHOP


@pytest.fixture(scope="module")
def shop():
    return load_domain(*SHOP, plugins=plugins())


def test_jobs_start_longest_conversation_first(shop, tmp_path: Path) -> None:
    scenarios = list(shop.scenarios)
    lengths = {s.name: len(s.gold_trace or ()) for s in scenarios}
    assert len(set(lengths.values())) > 1, lengths  # the mock shop's gold traces differ in length
    jobs = plan_jobs(scenarios, run_options(*SHOP, trials=2), tmp_path)
    got = [lengths[j.scenario.name] for j in jobs]
    assert got == sorted(got, reverse=True) and len(jobs) == 2 * len(scenarios)
    same = [j for j in jobs if lengths[j.scenario.name] == got[0]]
    assert [j.trial for j in same[:2]] == [1, 2]  # equal lengths keep the plan's order


def test_a_scenario_without_gold_counts_as_the_shortest(shop) -> None:
    first = shop.scenarios[0]
    bare = dataclasses.replace(first, name="bare", gold_trace=None)
    jobs = [Job(bare, 1, "run"), Job(first, 1, "run")]
    assert [j.scenario.name for j in longest_first(jobs)] == [first.name, "bare"]


async def test_a_local_builtin_side_is_a_private_unix_socket(shop) -> None:
    factory = ReplayFactory({s.name: s for s in shop.scenarios})
    async with builtin_side(factory, "agent", local=True) as uri:
        assert uri.startswith("ws+unix:")
        path = Path(uri.removeprefix("ws+unix:"))
        assert path.is_socket() and (path.parent.stat().st_mode & 0o777) == 0o700
        link = await SideLink.open("agent", uri, 5.0)
        await link.ws.close()
    assert not path.parent.exists()  # the folder goes with the server
    async with builtin_side(factory, "agent") as uri:  # not local: loopback TCP, as before
        assert uri.startswith("ws://127.0.0.1:")


async def test_a_temporary_folder_too_long_for_a_socket_falls_back_to_tcp(
    shop, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    factory = ReplayFactory({s.name: s for s in shop.scenarios})
    async with builtin_side(factory, "user", local=True) as uri:
        assert uri.startswith("ws://127.0.0.1:")
    assert os.listdir(deep) == []  # no socket folder left behind


def test_the_loaded_data_is_frozen_for_the_run_only() -> None:
    before = gc.get_freeze_count()
    with heap.settled():
        assert gc.get_freeze_count() > before
    assert gc.get_freeze_count() == 0


async def test_sessions_back_to_back_share_a_local_sides_connection(
    shop, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[str] = []
    real = SideServer.handle

    async def counted(self: SideServer, ws: Any) -> None:
        opened.append(str(self.role))
        await real(self, ws)

    monkeypatch.setattr(SideServer, "handle", counted)
    factory = ReplayFactory({s.name: s for s in shop.scenarios})
    limits = SessionLimits(max_duration_s=30, turn_timeout_s=10)
    async with (
        builtin_side(factory, "agent", local=True) as agent,
        builtin_side(factory, "user", local=True) as user,
    ):
        results = [
            await run_session(sc, session_setup(sc), agent, user, limits, trial=1)
            for sc in [*shop.scenarios, *shop.scenarios]
        ]
        assert len(link._IDLE[agent]) == 1 and len(link._IDLE[user]) == 1
    assert sorted(opened) == ["agent", "user"]  # one connection per side for all the sessions
    assert agent not in link._IDLE and user not in link._IDLE  # closed with their side
    assert [r.stop_reason for r in results] == ["exit", "exit", "exit"] * 2
    async with builtin_side(factory, "agent") as agent, builtin_side(factory, "user") as user:
        again = [await run_session(sc, session_setup(sc), agent, user, limits) for sc in shop.scenarios]
    assert [(r.stop_reason, r.final_db) for r in again] == [(r.stop_reason, r.final_db) for r in results[:3]]


@pytest.mark.parametrize("left", ["a turn unanswered", "a failure of the side"])
async def test_a_connection_not_left_clean_is_closed_not_kept(shop, left: str) -> None:
    factory = ReplayFactory({s.name: s for s in shop.scenarios})
    async with builtin_side(factory, "agent", local=True) as uri:
        one = await SideLink.open("agent", uri, 5.0)
        if left == "a turn unanswered":
            one.turns_open = 1
        else:
            one.failure("timeout", "agent side sent nothing for 1 s", "silent")
        await one.close("error", "x")
        assert uri not in link._IDLE and one.ws.state is State.CLOSED
        two = await SideLink.open("agent", uri, 5.0)
        assert two.ws is not one.ws
        await _start(two, shop.scenarios[0].name)
        await two.close("exit", None)  # clean: kept for the next session
        assert link._IDLE[uri] == [two.ws]


async def _start(side: SideLink, scenario: str, ready: bool = True) -> None:
    """Start a session of ``scenario`` on ``side``: session.start, then (``ready``) its answer."""
    start = await side.send(
        "session.start",
        session_id=f"{scenario}#1",
        role=side.role,
        system_prompt="",
        tools=[],
        scenario={"name": scenario, "trial": 1},
        limits={"max_duration_s": 30, "turn_timeout_s": 10, "max_tool_rounds": 10, "max_turns": None},
    )
    if ready:
        answer = await side.receive(5.0)
        assert (answer["type"], answer["reply_to"]) == ("session.ready", start)


@pytest.mark.parametrize("stopped", ["before session.start", "before session.ready"])
async def test_a_connection_whose_session_never_started_is_closed_not_kept(shop, stopped: str) -> None:
    # the other side could not be reached (nothing sent here), or time ran out while this side was
    # getting ready: kept, the next session would get the side's complaint or the late session.ready
    factory = ReplayFactory({s.name: s for s in shop.scenarios})
    async with builtin_side(factory, "agent", local=True) as uri:
        one = await SideLink.open("agent", uri, 5.0)
        if stopped == "before session.ready":
            await _start(one, shop.scenarios[0].name, ready=False)
        await one.close("error", "cannot connect to the user side")
        assert uri not in link._IDLE and one.ws.state is State.CLOSED


async def test_a_session_whose_other_side_is_unreachable_leaves_the_next_one_a_fresh_connection(
    shop,
) -> None:
    factory = ReplayFactory({s.name: s for s in shop.scenarios})
    limits = SessionLimits(max_duration_s=30, turn_timeout_s=10)
    sc = shop.scenarios[0]
    async with (
        builtin_side(factory, "agent", local=True) as agent,
        builtin_side(factory, "user", local=True) as user,
    ):
        lost = await run_session(sc, session_setup(sc), agent, "ws+unix:/nonexistent/user.sock", limits)
        assert lost.stop_reason == "error" and lost.error_source == "transport"
        assert not link._IDLE.get(agent)  # the agent side never got a session.start: not kept
        after = await run_session(sc, session_setup(sc), agent, user, limits)
    assert (after.stop_reason, after.error) == ("exit", None)


async def test_socket_folders_of_killed_processes_are_swept(shop, monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess
    import sys

    short = Path(tempfile.mkdtemp(dir="/tmp" if Path("/tmp").is_dir() else None))  # room for a socket
    monkeypatch.setattr(tempfile, "tempdir", str(short))
    code = "import os; print(os.getpid())"
    gone = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    stale = short / f"evalctl-sockets-{gone.stdout.strip()}-abc"  # its process was killed
    alive = short / f"evalctl-sockets-{os.getpid()}-def"  # a live run's
    try:
        for folder in (stale, alive):
            folder.mkdir()
            (folder / "agent.sock").touch()
        factory = ReplayFactory({s.name: s for s in shop.scenarios})
        async with builtin_side(factory, "agent", local=True) as uri:
            assert uri.startswith("ws+unix:")
        assert not stale.exists() and alive.exists()
    finally:
        shutil.rmtree(short)
