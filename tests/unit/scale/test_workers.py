"""``--workers N``: the same verdicts and hashes as one process; a killed worker fails its own
sessions only; a cancelled run stops its workers and still writes the summary."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from engine.run import workers
from engine.run.runner import run
from engine.run.shard import split
from engine.util.errors import UsageError
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR, REPO
from tests.runtime_helpers import run_options
from tests.unit.scale.helpers import NAMES, SHOP, hashes, verdicts


@pytest.fixture(autouse=True)
def _small_runs_use_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workers, "MIN_JOBS_PER_WORKER", 1)


def _workers() -> list[multiprocessing.process.BaseProcess]:
    return [p for p in multiprocessing.active_children() if p.name.startswith("evalctl-worker-")]


async def test_two_workers_give_the_verdicts_and_hashes_of_one_process(tmp_path: Path) -> None:
    common = {"scenarios": NAMES, "trials": 4, "progress": False}
    await run(run_options(*SHOP, output_dir=tmp_path / "one", workers=1, **common))
    two = await run(run_options(*SHOP, output_dir=tmp_path / "two", workers=2, **common))
    assert verdicts(tmp_path / "two") == verdicts(tmp_path / "one")
    assert hashes(tmp_path / "two") == hashes(tmp_path / "one") and len(hashes(tmp_path / "one")) == 12
    assert two.summary is not None and two.summary.results == 12 and two.exit_code() == 0
    sessions = [json.loads(p.read_text()) for p in (tmp_path / "two").glob("*/trial_*/session.json")]
    assert len({s["invocation"] for s in sessions}) == 1  # one run, one invocation, two processes
    assert not _workers()


def test_worker_count_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workers, "MIN_JOBS_PER_WORKER", 40)
    opts = run_options(MOCK_SPEC_DIR, workers=4)
    assert [workers.worker_count(opts, n, None) for n in (1, 79, 80, 119, 120, 2000)] == [1, 1, 2, 2, 3, 4]
    unpicklable = run_options(MOCK_SPEC_DIR, workers=4, plugins={"x": lambda: None})  # type: ignore[dict-item]
    assert workers.worker_count(unpicklable, 2000, None) == 1  # the default falls back to one process
    explicit = run_options(MOCK_SPEC_DIR, workers=4, plugins={"x": lambda: None},  # type: ignore[dict-item]
                           explicit=frozenset({"workers"}))  # fmt: skip
    with pytest.raises(UsageError, match=r"--workers 4: the run's domain plugins cannot be sent"):
        workers.worker_count(explicit, 2000, None)


async def _wait_for_results(run_dir: Path, task: asyncio.Task[object]) -> None:
    for _ in range(600):
        if list(run_dir.glob("*/trial_*/metrics.json")) or task.done():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("no result within 30 s")


async def test_a_killed_worker_fails_its_own_sessions_only(tmp_path: Path) -> None:
    opts = run_options(*SHOP, scenarios=NAMES, trials=4, workers=2, concurrency=2,
                       replay_latency_s=0.2, output_dir=tmp_path, progress=False)  # fmt: skip
    task = asyncio.create_task(run(opts))
    await _wait_for_results(tmp_path, task)
    [victim] = [p for p in _workers() if p.name == "evalctl-worker-1"]
    os.kill(victim.pid, signal.SIGKILL)  # type: ignore[arg-type]
    report = await asyncio.wait_for(task, 120)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["results"] == 12 and summary["missing"] == [] and not report.interrupted
    jobs = [(n, k) for n in NAMES for k in (1, 2, 3, 4)]
    first, second = split(jobs, 2)  # the jobs are dealt round-robin in plan order
    found = hashes(tmp_path)
    errors = {key for key, row in found.items() if row[0] == "error"}
    assert errors and summary["errors"] == len(errors) and report.exit_code() == 3
    assert errors <= {f"{n}/trial_{k}" for n, k in first}  # only worker 1's sessions
    for key in errors:
        metrics = json.loads((tmp_path / key / "metrics.json").read_text())
        assert metrics["error_cause"]["source"] == "engine"
        assert "worker process 1" in metrics["error"] and "killed by signal 9" in metrics["error"]
    assert all(found[f"{n}/trial_{k}"][0] is True for n, k in second)
    assert not _workers()


async def test_cancelling_the_run_stops_the_workers_and_writes_the_summary(tmp_path: Path) -> None:
    opts = run_options(*SHOP, scenarios=NAMES, trials=4, workers=2, concurrency=2,
                       replay_latency_s=0.2, output_dir=tmp_path, progress=False)  # fmt: skip
    task = asyncio.create_task(run(opts))
    await _wait_for_results(tmp_path, task)
    task.cancel()
    report = await asyncio.wait_for(task, 60)
    assert report.interrupted and report.exit_code() == 130
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["interrupted"] is True and 1 <= summary["results"] < 12 and summary["errors"] == 0
    assert len(summary["missing"]) == 12 - summary["results"]
    assert not _workers()


async def test_workers_with_an_external_agent_and_a_resume(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, str(REPO / "cli.py"), "serve", "agent", "--port", "0", "--spec-dir",
         str(MOCK_SPEC_DIR), "--data-root", str(MOCK_DATA_ROOT)],
        cwd=REPO, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        match = re.search(r"on (ws://127\.0\.0\.1:\d+)", proc.stderr.readline())
        assert match
        common = {"scenarios": NAMES, "trials": 2, "workers": 2, "progress": False}
        out = tmp_path / "run"
        first = await run(run_options(*SHOP, agent=match.group(1), output_dir=out, **common))
        assert first.summary is not None and first.summary.results == 6 and first.exit_code() == 0
        before = hashes(out)
        for key in list(before)[:2]:
            (out / key / "metrics.json").unlink()
        again = await run(run_options(*SHOP, resume=out, **common))
        assert again.skipped == 4 and again.summary is not None and again.summary.results == 6
        assert hashes(out) == before and again.exit_code() == 0
        record = json.loads((out / "run.json").read_text())
        assert [i["command"] for i in record["invocations"]] == ["run", "resume"]
        assert record["settings"]["agent"] == match.group(1)  # the resume kept the external agent
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=10)
    assert not _workers()


AGENT_THAT_KILLS_ITS_PROCESS = """
import os


def make(session, tools):
    async def turn(line):
        os._exit(9)  # takes the worker with it: no Python exception to catch

    return turn
"""


async def test_an_in_process_agent_that_kills_its_worker_fails_instead_of_erroring(tmp_path: Path) -> None:
    """Before: its sessions were ``error`` (source ``engine``), left out of the rates: an agent
    could crash on its hard scenarios to take them out of its score."""
    agent = tmp_path / "crasher.py"
    agent.write_text(AGENT_THAT_KILLS_ITS_PROCESS)
    opts = run_options(*SHOP, scenarios=NAMES, trials=2, workers=2, concurrency=2,
                       agent=f"python:{agent}:make", output_dir=tmp_path / "run", progress=False)  # fmt: skip
    report = await asyncio.wait_for(run(opts), 120)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["results"] == 6 and summary["errors"] == 0 and summary["missing"] == []
    assert summary["overall"]["passed"] == 0 and report.exit_code() == 0  # the agent's FAILs, no errors
    for path in (tmp_path / "run").glob("*/trial_*/metrics.json"):
        metrics = json.loads(path.read_text())
        assert metrics["is_successful"] is False and metrics["stop_reason"] == "agent_error"
        assert "the agent's own code runs in that process" in metrics["error"]
    assert not _workers()


async def test_a_folder_a_worker_cannot_write_is_reported_as_not_written_not_as_a_stray_stop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # a disk full in a worker: its sessions' folders cannot be written. Before, the run's process
    # took the worker's normal end for a stop "by a SIGTERM from elsewhere" and failed them again.
    import errno

    from engine.results import scorer

    real = scorer.stage_store_and_score

    def full(run_dir: Path, scenario: object, result: object, *rest: object) -> object:
        if getattr(result, "trial", 0) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(run_dir, scenario, result, *rest)

    monkeypatch.setattr(scorer, "stage_store_and_score", full)  # the forked workers inherit it
    # forked, so they do: a worker is spawned instead while this process runs another thread (a
    # writer or a preload thread an earlier test of this process left); none of them runs now
    scorer.release_threads()
    for thread in threading.enumerate():  # a scipy import in flight must not be forked mid-way
        if thread.name == "evalctl-scipy-preload":
            thread.join()
    monkeypatch.setattr(workers, "start_method", lambda: "fork")
    opts = run_options(*SHOP, scenarios=NAMES, trials=2, workers=2, concurrency=2,
                       output_dir=tmp_path, progress=False)  # fmt: skip
    report = await run(opts)
    err = capsys.readouterr().err
    assert "SIGTERM from elsewhere" not in err and "stopped before its sessions finished" not in err
    unwritten = {k for k, v in report.scoring_errors.items() if "No space left on device" in v}
    assert unwritten == {f"{n}#2" for n in NAMES}
    assert report.summary is not None and report.summary.results == len(NAMES)  # the trial-1 ones
    assert not list(tmp_path.glob("*/trial_2/metrics.json")) and not _workers()
