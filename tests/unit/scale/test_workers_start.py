"""How ``--workers`` starts its workers and what comes back over their pipes: forked workers use
the run's loaded specs (no loading again), spawned ones load their own; either way the run's
process gets every session's outcome and summary row from the pipe and reads no result folder
back for the summary."""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from engine.results import scoring_stage as results
from engine.run import worker_child, workers
from engine.run.runner import run
from engine.scoring import stats
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
            chosen.append(", ".join(t.name for t in threading.enumerate() if t not in before))
        return chosen[0]

    monkeypatch.setattr(workers, "start_method", recorded)
    # Count only the threads this test's runs start: a daemon thread an earlier test of the session
    # left behind (a loopback server's request thread on a kept-alive connection) is not the run's.
    before = {t for t in threading.enumerate() if t is not threading.main_thread()}
    live = threading.active_count
    monkeypatch.setattr(threading, "active_count", lambda: live() - sum(t.is_alive() for t in before))
    common = {"scenarios": NAMES, "trials": 2, "progress": False}
    one = await run(
        run_options(*SHOP, output_dir=tmp_path / "one", workers=1, **common)
    )  # uses the write threads
    monkeypatch.setattr(worker_child, "index_domain", no_loading)  # the forked workers inherit it
    two = await run(run_options(*SHOP, output_dir=tmp_path / "two", workers=2, **common))
    assert chosen == ["fork"]  # the run's idle write threads were stopped before forking
    assert two.summary is not None and two.summary.results == 6 and two.exit_code() == 0
    assert verdicts(tmp_path / "two") == verdicts(tmp_path / "one")
    assert hashes(tmp_path / "two") == hashes(tmp_path / "one")
    assert sorted((o.scenario_name, o.trial) for o in two.outcomes) == sorted(
        (o.scenario_name, o.trial) for o in one.outcomes
    )


async def test_the_summarys_statistics_load_once_every_worker_is_forked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # scipy's import (about 0.5 s) overlaps the workers' sessions instead of delaying the summary
    # after them, and its thread never runs while the run's process forks (a fork then is a spawn)
    events: list[str] = []
    real, start = stats.preload, multiprocessing.process.BaseProcess.start

    def preload() -> threading.Thread:
        events.append("preload")
        return real()

    def started(process: multiprocessing.process.BaseProcess) -> None:
        events.append("worker")
        start(process)

    monkeypatch.setattr(stats, "preload", preload)
    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", started)
    chosen: list[str] = []
    method = workers.start_method

    def recorded() -> str:
        chosen.append(method())
        return chosen[-1]

    monkeypatch.setattr(workers, "start_method", recorded)
    common = {"scenarios": NAMES, "trials": 2, "progress": False}
    for folder in ("one", "two"):  # the second run forks while the first one's import may still run
        report = await run(run_options(*SHOP, output_dir=tmp_path / folder, workers=2, **common))
        assert report.summary is not None and report.summary.results == 6
    assert events == ["worker", "worker", "preload"] * 2  # after both workers of each run started
    assert chosen[1] == chosen[0]  # the first run's import thread was done before the second fork


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


class _Dead:
    """A worker process that was killed (what ``_fail_unfinished`` reads of it)."""

    pid = 4242
    exitcode = -9


async def test_a_dead_workers_stored_conversations_are_kept(tmp_path: Path) -> None:
    """A worker killed during a resume: a folder holding a stored conversation (an earlier
    attempt's, or one not scored yet) is left as it is and counts as not scored; this run's own
    verdict counts as done; a folder holding nothing gets the verdict error."""
    import json as _json

    from engine.domains.registry import plugins
    from engine.results.resume import plan_jobs
    from engine.results.run_report import RunReport
    from engine.run.progress import Progress
    from engine.spec.loader import load_domain as load

    out = tmp_path / "run"
    await run(run_options(*SHOP, scenarios=NAMES, output_dir=out, workers=1, progress=False))
    kept, done, empty = NAMES
    (out / kept / "metrics.json").unlink()  # stored, not scored (another invocation's)
    before = (out / kept / "transcript.jsonl").read_bytes()
    invocation = _json.loads((out / done / "session.json").read_text())["invocation"]
    for name in (empty,):
        for path in sorted((out / name).rglob("*"), reverse=True):
            path.unlink() if path.is_file() else path.rmdir()
    loaded = load(*SHOP, plugins=plugins())
    opts = run_options(*SHOP, scenarios=NAMES, output_dir=out, progress=False)
    jobs = plan_jobs([s for s in loaded.scenarios if s.name in NAMES], opts, out)
    task = workers.WorkerTask(
        opts, out, invocation, None, tuple((j.scenario.name, 1, "run", ()) for j in jobs)
    )
    report = RunReport(out)
    by_key = {(j.scenario.name, 1): j for j in jobs}
    with Progress(3, enabled=False, quiet=True) as progress:
        await workers._fail_unfinished(
            workers._Worker(task, _Dead(), None),
            by_key,
            opts,
            out,
            invocation,
            progress,
            report,  # type: ignore[arg-type]
        )
    assert (out / kept / "transcript.jsonl").read_bytes() == before and not (
        out / kept / "metrics.json"
    ).exists()
    assert list(report.scoring_errors) == [f"{kept}#1"] and "is kept" in report.scoring_errors[f"{kept}#1"]
    verdicts = {o.scenario_name: o.is_successful for o in report.outcomes}
    assert verdicts == {done: True, empty: "error"}
    metrics = _json.loads((out / empty / "metrics.json").read_text())
    assert "killed by signal 9" in metrics["error"]


def test_the_concurrency_is_shared_not_multiplied() -> None:
    from engine.domains.registry import plugins
    from engine.results.resume import Job
    from engine.spec.loader import load_domain as load

    opts = run_options(*SHOP, workers=4, concurrency=3)
    assert workers.worker_count(opts, 10_000, None) == 3  # never more workers than sessions at once
    jobs = [Job(s, k, "run") for s in load(*SHOP, plugins=plugins()).scenarios for k in (1, 2)]
    for c, n in ((3, 2), (8, 3), (2, 2), (200, 2)):
        tasks = workers._tasks(jobs, n, run_options(*SHOP, concurrency=c), Path("r"), "i", None)
        shares = [t.opts.concurrency for t in tasks]
        assert sum(shares) == c and max(shares) - min(shares) <= 1 and min(shares) >= 1


def test_a_session_not_scored_shows_as_error_not_fail() -> None:
    from engine.core.model import SessionResult
    from engine.run.progress import Finished

    fin = Finished.of(SessionResult("s", 1, "exit"), None)
    assert fin.verdict == "ERROR" and not fin.ok and "not scored" in fin.note


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
@pytest.mark.parametrize("parent_alive", [True, False])
def test_a_worker_whose_run_died_before_it_started_ends_at_once(parent_alive: bool) -> None:
    """The run's process may be killed between forking a worker and the worker's request to be
    told: the worker then finds its parent gone and ends before doing anything."""
    import os

    from engine.util.parent import stop_with_parent

    pid = os.fork()
    if pid == 0:  # the "worker": its parent is this test's process
        parent = os.getppid() if parent_alive else os.getppid() + 1_000_000
        try:
            stop_with_parent(parent)
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == (0 if parent_alive else 1)
