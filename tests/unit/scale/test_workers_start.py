"""How ``--workers`` starts its workers and what comes back over their pipes: forked workers use
the run's loaded specs (no loading again), spawned ones load their own; either way the run's
process gets every session's outcome and summary row from the pipe and reads no result folder
back for the summary."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from engine import results, worker_child, workers
from engine.runner import run
from tests.conftest import REPO
from tests.runtime_helpers import run_options
from tests.unit.scale.helpers import NAMES, SHOP, SHOP_RUN, hashes, verdicts


@pytest.fixture(autouse=True)
def _small_runs_use_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workers, "MIN_JOBS_PER_WORKER", 1)


def test_fork_only_on_linux_while_no_other_thread_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workers.sys, "platform", "linux")
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    assert workers.start_method() == "fork"
    monkeypatch.setattr(threading, "active_count", lambda: 2)  # e.g. a thread pool already started
    assert workers.start_method() == "spawn"
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    monkeypatch.setattr(workers.sys, "platform", "darwin")
    assert workers.start_method() == "spawn"


async def test_forked_workers_use_the_runs_loaded_specs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_loading(*args: Any, **kw: Any) -> Any:
        raise AssertionError("a forked worker loaded the specs again")

    chosen: list[str] = []
    real = workers.start_method

    def recorded() -> str:
        chosen.append(real())
        if chosen[-1] != "fork":  # a thread left running would make every --workers run spawn
            chosen.append(", ".join(t.name for t in threading.enumerate()))
        return chosen[0]

    monkeypatch.setattr(workers, "start_method", recorded)
    common = {"scenarios": NAMES, "trials": 2, "progress": False}
    one = await run(
        run_options(*SHOP, output_dir=tmp_path / "one", workers=1, **common)
    )  # uses the write threads
    monkeypatch.setattr(worker_child, "load_domain", no_loading)  # the forked workers inherit it
    two = await run(run_options(*SHOP, output_dir=tmp_path / "two", workers=2, **common))
    assert chosen == ["fork"]  # the run's idle write threads were stopped before forking
    assert two.summary is not None and two.summary.results == 6 and two.exit_code() == 0
    assert verdicts(tmp_path / "two") == verdicts(tmp_path / "one")
    assert hashes(tmp_path / "two") == hashes(tmp_path / "one")
    assert sorted((o.scenario_name, o.trial) for o in two.outcomes) == sorted(
        (o.scenario_name, o.trial) for o in one.outcomes
    )


async def test_spawned_workers_load_their_own_specs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workers, "start_method", lambda: "spawn")
    common = {"scenarios": NAMES, "trials": 2, "progress": False}
    await run(run_options(*SHOP, output_dir=tmp_path / "one", workers=1, **common))
    two = await run(run_options(*SHOP, output_dir=tmp_path / "two", workers=2, **common))
    assert two.summary is not None and two.summary.results == 6 and two.exit_code() == 0
    assert hashes(tmp_path / "two") == hashes(tmp_path / "one") and len(two.outcomes) == 6


async def test_the_runs_process_reads_no_result_folder_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    read: list[Path] = []
    real = results.read_metrics

    def counted(path: Path) -> Any:
        read.append(Path(path))
        return real(path)

    common = {"scenarios": NAMES, "trials": 2, "progress": False}
    await run(run_options(*SHOP, output_dir=tmp_path / "one", workers=1, **common))
    monkeypatch.setattr(results, "read_metrics", counted)
    two = await run(run_options(*SHOP, output_dir=tmp_path / "two", workers=2, **common))
    assert read == []  # the summary came from the rows the workers sent
    assert two.summary is not None and verdicts(tmp_path / "two") == verdicts(tmp_path / "one")
    assert len(two.outcomes) == 6 and all(o.scored for o in two.outcomes)


def _children(pid: int) -> list[int]:
    """The pids whose parent is ``pid`` (Linux /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z"  # ended, not yet reaped


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_workers_stop_when_the_runs_process_is_killed(tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, str(REPO / "cli.py"), *SHOP_RUN, "--workers", "2", "--trials", "40",
         "--replay-latency", "120", "--no-progress", "--output-dir", str(out)],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        for _ in range(600):  # until both workers run (at most 60 s)
            kids = _children(proc.pid)
            if len(kids) == 2:
                break
            time.sleep(0.1)
        assert len(kids) == 2, kids
    finally:
        proc.kill()
        proc.wait(timeout=30)
    # every model step takes 120 s: a worker left alone would not notice before its first session
    # ends; told by the kernel, it stops at once (its sessions in flight cancelled)
    for _ in range(600):
        if all(_gone(k) for k in kids):
            break
        time.sleep(0.1)
    assert all(_gone(k) for k in kids), "workers outlived the run's process by 60 s"
