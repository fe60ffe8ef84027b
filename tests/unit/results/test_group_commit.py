"""Group commit (issue #31 item 2): the writer thread commits many result folders with one pair of
syncs, bounded in size and delay, flushes on close and on Ctrl-C, and a session is reported done
only once the sync covering its folder returned: a run killed at any commit loses nothing it
reported, and ``--resume`` completes the rest."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from engine.results import scorer as scorer_module
from engine.run import runner
from engine.util import group_commit
from engine.util.artifacts import FolderWrite
from engine.util.group_commit import GroupCommit
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR
from tests.runtime_helpers import run_options


def _stage(folder: Path, name: str) -> tuple[str, FolderWrite]:
    """A folder write as the run stages one: a file in place, a marker pending."""
    batch = FolderWrite(folder / name, incomplete=True)
    batch.put_json("final_db.json", {"name": name})
    batch.put_json("metrics.json", {"name": name}, marker=True)
    return name, batch


@pytest.fixture
def commits(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The folders of each group commit, in order (the real commit runs)."""
    seen: list[list[str]] = []
    real = group_commit.commit_folders

    def record(batches: Any, marked: Any = None) -> int:
        seen.append([b.folder.name for b in batches])
        return real(batches, marked)

    monkeypatch.setattr(group_commit, "commit_folders", record)
    return seen


def _blocked(writer: GroupCommit) -> threading.Event:
    """Hold the writer thread in a call until the event is set: what is submitted meanwhile
    queues up, as sessions finishing during a slow sync do."""
    go = threading.Event()
    writer.call(go.wait)
    return go


def test_queued_folders_are_committed_in_batches_of_at_most_max_batch(tmp_path, commits):
    writer = GroupCommit(max_batch=3, max_delay_s=60)
    go = _blocked(writer)
    futures = [writer.write(_stage, tmp_path, f"s{i}") for i in range(7)]
    assert not any(f.done() for f in futures)
    go.set()
    assert [f.result(timeout=10) for f in futures] == [f"s{i}" for i in range(7)]
    writer.close()
    assert commits == [["s0", "s1", "s2"], ["s3", "s4", "s5"], ["s6"]]
    assert all((tmp_path / f"s{i}" / "metrics.json").is_file() for i in range(7))
    stats = writer.stats
    assert (stats.folders, stats.batches, stats.syncs, stats.largest_batch) == (7, 3, 6, 3)
    assert 0 < stats.busy_s <= stats.span_s and 0 <= stats.idle_share < 1


def test_a_folder_waits_no_longer_than_the_delay_bound(tmp_path, commits):
    writer = GroupCommit(max_batch=64, max_delay_s=0)  # no wait at all: every folder alone
    go = _blocked(writer)
    futures = [writer.write(_stage, tmp_path, f"s{i}") for i in range(3)]
    go.set()
    for f in futures:
        f.result(timeout=10)
    writer.close()
    assert commits == [["s0"], ["s1"], ["s2"]]


def test_a_lone_folder_is_committed_at_once(tmp_path, commits):
    writer = GroupCommit(max_batch=64, max_delay_s=60)  # nothing else queued: no timer holds it
    assert writer.write(_stage, tmp_path, "alone").result(timeout=10) == "alone"
    assert commits == [["alone"]] and (tmp_path / "alone" / "metrics.json").is_file()
    writer.close()


def test_the_value_comes_only_after_the_commit_and_close_flushes(tmp_path, monkeypatch):
    order: list[str] = []
    real = group_commit.commit_folders
    futures: list[Any] = []

    def record(batches: Any, marked: Any = None) -> int:
        assert not any(f.done() for f in futures)  # nobody told done before the sync
        assert not (tmp_path / "a" / "metrics.json").exists()
        order.append("commit")
        return real(batches, marked)

    monkeypatch.setattr(group_commit, "commit_folders", record)
    writer = GroupCommit(max_batch=64, max_delay_s=60)
    go = _blocked(writer)
    futures += [writer.write(_stage, tmp_path, "a"), writer.add(*_stage(tmp_path, "b"))]
    go.set()
    writer.close()  # what was queued is committed before the thread stops
    assert order == ["commit"] and [f.result(timeout=0) for f in futures] == ["a", "b"]
    with pytest.raises(RuntimeError, match="closed"):
        writer.write(_stage, tmp_path, "late")


def test_a_failed_commit_reports_no_session_of_its_batch_done(tmp_path, monkeypatch):
    def broken(batches: Any, marked: Any = None) -> int:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(group_commit, "commit_folders", broken)
    writer = GroupCommit(max_batch=64, max_delay_s=60)
    go = _blocked(writer)
    futures = [writer.write(_stage, tmp_path, n) for n in ("a", "b")]
    go.set()
    for f in futures:
        with pytest.raises(OSError, match="Input/output"):
            f.result(timeout=10)
    writer.close()
    assert writer.stats.folders == 0


def test_ctrl_c_while_a_write_waits_still_commits_it(tmp_path):
    async def main() -> None:
        writer = scorer_module._writer()
        go = _blocked(writer)
        task = asyncio.create_task(scorer_module.committed(_stage, tmp_path, "late"))
        await asyncio.sleep(0)  # the write is queued behind the held call
        task.cancel()
        await asyncio.sleep(0)
        assert not task.done()  # it waits for its write
        go.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert (tmp_path / "late" / "metrics.json").is_file()  # committed before the cancellation went on

    asyncio.run(main())
    scorer_module.release_threads()


def test_a_run_reports_a_session_only_after_its_folder_is_committed(tmp_path, monkeypatch):
    reported: set[Path] = set()
    checked: list[int] = []
    real = group_commit.commit_folders
    out = tmp_path / "run"

    lock = threading.Lock()  # check runs on the writer thread, done on the event loop's

    def check(batches: Any, marked: Any = None) -> int:
        folders = {b.folder for b in batches}
        with lock:
            told = set(reported)
        assert not folders & told  # none of this batch told done yet
        assert all((f / "metrics.json").is_file() for f in told)  # all told done are complete
        checked.append(len(folders))
        return real(batches, marked)

    real_done = runner.Progress.done

    def done(self: Any, result: Any, metrics: Any) -> None:
        with lock:
            reported.add(out / result.scenario_name / f"trial_{result.trial}")
        real_done(self, result, metrics)

    monkeypatch.setattr(group_commit, "commit_folders", check)
    monkeypatch.setattr(runner.Progress, "done", done)
    opts = run_options(MOCK_SPEC_DIR, MOCK_DATA_ROOT, output_dir=out, trials=2, progress=False)
    report = asyncio.run(runner.run(replace(opts, concurrency=4)))
    assert report.summary is not None and report.summary.results == 6
    assert sum(checked) == 6 and len(reported) == 6


def test_a_finished_session_is_stored_and_scored_on_the_writer_thread(tmp_path, monkeypatch):
    # the stage's CPU work (scoring, JSON, the files) runs off the event loop: there it delayed
    # every session's next step (docs/performance.md, "Writes")
    threads: list[str] = []
    real = scorer_module.stage_store_and_score

    def stage(*args: Any) -> Any:
        threads.append(threading.current_thread().name)
        return real(*args)

    monkeypatch.setattr(scorer_module, "stage_store_and_score", stage)
    out = tmp_path / "run"
    opts = run_options(MOCK_SPEC_DIR, MOCK_DATA_ROOT, output_dir=out, trials=2, progress=False)
    report = asyncio.run(runner.run(replace(opts, concurrency=4)))
    assert report.summary is not None and report.summary.results == 6
    assert threads == ["evalctl-write"] * 6
    assert len(list(out.glob("*/trial_*/metrics.json"))) == 6


def test_a_stop_while_a_folder_is_written_reports_that_session_done(tmp_path, monkeypatch):
    # Ctrl-C while a finished session's folder was on the writer thread: the write finishes (the
    # folder is complete) and the session counts as done. Before, the run never counted it and
    # its end set the complete folder aside as "written outside the run's process".
    entered, go = threading.Event(), threading.Event()
    real = scorer_module.stage_store_and_score

    def stage(*args: Any) -> Any:
        if not entered.is_set():
            entered.set()
            go.wait(60)  # the writer held: the stop comes while this folder is being written
        return real(*args)

    monkeypatch.setattr(scorer_module, "stage_store_and_score", stage)
    out = tmp_path / "run"
    opts = replace(run_options(MOCK_SPEC_DIR, MOCK_DATA_ROOT, output_dir=out, trials=2, progress=False),
                   concurrency=4)  # fmt: skip

    async def stopped() -> Any:
        task = asyncio.create_task(runner.run(opts))
        await asyncio.to_thread(entered.wait, 60)
        task.cancel()
        await asyncio.sleep(0)  # the cancellation reaches the sessions
        go.set()
        return await task

    report = asyncio.run(stopped())
    assert report.interrupted
    complete = {
        (p.parent.parent.name, int(p.parent.name.split("_")[1])) for p in out.glob("*/trial_*/metrics.json")
    }
    reported = {(o.scenario_name, o.trial) for o in report.outcomes}
    assert complete and complete == reported  # every complete folder counted, none set aside
    assert report.summary is not None and report.summary.results == len(reported)


def test_past_the_backlog_bound_a_folder_is_staged_on_the_callers_thread(tmp_path, monkeypatch):
    # a stop lets every queued write finish: the queue of stages is bounded (scorer.STAGE_BACKLOG)
    monkeypatch.setattr(scorer_module, "STAGE_BACKLOG", 2)
    scorer_module.release_threads()  # a writer of this test's own
    writer = scorer_module._writer()
    running, go = threading.Event(), threading.Event()

    def hold() -> None:
        running.set()
        go.wait(60)

    writer.call(hold)
    assert running.wait(60)  # the held call is running: nothing is queued
    threads: dict[str, str] = {}

    def stage(name: str) -> tuple[str, FolderWrite]:
        threads[name] = threading.current_thread().name
        return _stage(tmp_path, name)

    async def four() -> list[str]:
        waits = [asyncio.ensure_future(scorer_module.committed(stage, f"s{i}", here=None)) for i in range(4)]
        await asyncio.sleep(0)  # each has submitted its work (or staged it here)
        go.set()
        return await asyncio.gather(*waits)

    try:
        assert asyncio.run(four()) == ["s0", "s1", "s2", "s3"]
    finally:
        go.set()
        scorer_module.release_threads()
    assert threads == {"s0": "evalctl-write", "s1": "evalctl-write", "s2": "MainThread", "s3": "MainThread"}
    assert all((tmp_path / f"s{i}" / "metrics.json").is_file() for i in range(4))
