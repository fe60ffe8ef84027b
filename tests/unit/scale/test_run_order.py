"""What a run does around its sessions: jobs start longest first, built-in sides are served on a
private Unix socket, the loaded specs are frozen out of the collector's way for the run."""

from __future__ import annotations

import dataclasses
import gc
import os
import tempfile
from pathlib import Path

import pytest

from engine import heap
from engine.backends.replay import ReplayFactory
from engine.domains.registry import load_domain
from engine.resume import Job, longest_first, plan_jobs
from engine.sides import SideLink, builtin_side
from tests.runtime_helpers import run_options
from tests.unit.scale.helpers import SHOP


@pytest.fixture(scope="module")
def shop():
    return load_domain(*SHOP)


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
