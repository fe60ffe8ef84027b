"""A run at scale (issue #18): result folders group-committed (no sync per file), a crash never
leaves a folder that reads as complete over a torn or missing file, no finished session kept in
memory, and the summary from running totals equal to the summary read back from the folder."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import sys
import weakref
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from engine.core.options import ScoringOptions
from engine.core.records.summary import SummaryRecord
from engine.results.scoring_stage import load_run_metrics, run_totals, store_and_score
from engine.results.session_files import load_session, scenario_dir, slot
from engine.run import runner
from engine.scoring.summary import build_summary
from engine.util import artifacts
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR
from tests.mock_domain.eva_fixtures import expected_copy, session
from tests.runtime_helpers import run_options

LINUX = sys.platform.startswith("linux")
SHOP = ("mock__cancel_order", "mock__late_delivery_credit", "mock__shipped_refusal")
ONE = "mock__cancel_order"


def _fd_path(fd: int) -> Path:
    return Path(os.readlink(f"/proc/self/fd/{fd}"))


@pytest.mark.skipif(not LINUX, reason="syncfs and /proc/self/fd are Linux's")
def test_a_replay_run_syncs_each_result_folder_once(tmp_path, monkeypatch):
    synced: list[Path] = []
    real_syncfs, real_fsync = artifacts._syncfs, os.fsync

    def count_syncfs(fd: int) -> bool:
        synced.append(_fd_path(fd))
        return real_syncfs(fd)

    def count_fsync(fd: int) -> None:
        synced.append(_fd_path(fd))
        real_fsync(fd)

    monkeypatch.setattr(artifacts, "_syncfs", count_syncfs)
    monkeypatch.setattr(os, "fsync", count_fsync)
    out = tmp_path / "run"
    opts = run_options(MOCK_SPEC_DIR, MOCK_DATA_ROOT, output_dir=out, trials=3)
    report = asyncio.run(runner.run(replace(opts, progress=False)))
    assert report.summary is not None and report.summary.results == 9
    folders = {scenario_dir(out, n, k, 3) for n in SHOP for k in (1, 2, 3)}
    assert all((f / "metrics.json").is_file() for f in folders)
    in_folders = [p for p in synced if any(p == f or f in p.parents for f in folders)]
    # group commit: each batch of folders is one syncfs of its files and one of its markers, so
    # the syncs come in pairs naming a folder of the batch, and nothing is synced file by file
    assert in_folders and all(p in folders for p in in_folders)
    assert len(in_folders) % 2 == 0 and len(in_folders) <= 2 * len(folders)


def test_without_syncfs_each_file_and_folder_is_synced_once(loaded, tmp_path, monkeypatch):
    synced: list[int] = []
    monkeypatch.setattr(artifacts, "_SYNCFS", None)
    real_fsync = os.fsync

    def count_fsync(fd: int) -> None:
        synced.append(os.fstat(fd).st_ino)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", count_fsync)
    sc = loaded.scenario(ONE)
    store_and_score(tmp_path, sc, session(sc, expected_copy(sc)), 1, ScoringOptions(), "inv")
    sdir = tmp_path / sc.name
    files = [p for p in sdir.rglob("*") if p.is_file()]
    inodes = {p.stat().st_ino for p in files}
    assert len(files) >= 10 and inodes <= set(synced)
    assert all(synced.count(i) == 1 for i in inodes)  # no file synced twice
    # the folders: once for their new entries, and the result folder once more for its markers
    assert synced.count(sdir.stat().st_ino) == 2
    assert synced.count((sdir / "scenario_config").stat().st_ino) == 1


def test_markers_land_only_after_the_sync(tmp_path, monkeypatch):
    seen: list[list[str]] = []

    def sync(folder: Path, files: Any, dirs: Any) -> None:
        seen.append(sorted(p.name for p in Path(folder).iterdir() if not p.name.startswith(".")))

    monkeypatch.setattr(artifacts, "durable_sync", sync)
    with artifacts.FolderWrite(tmp_path / "f") as batch:
        batch.put_json("a.json", {"a": 1})
        batch.put_json("session.json", {"s": 1}, marker=True)
        batch.put_json("metrics.json", {"m": 1}, marker=True)
        assert not (tmp_path / "f" / "session.json").exists()
        batch.commit()
    assert seen == [["a.json"], ["a.json", "metrics.json", "session.json"]]  # files, then markers
    assert sorted(p.name for p in (tmp_path / "f").iterdir()) == ["a.json", "metrics.json", "session.json"]


def test_a_folder_write_left_without_commit_leaves_no_marker(tmp_path):
    with pytest.raises(RuntimeError), artifacts.FolderWrite(tmp_path / "f") as batch:
        batch.put_json("a.json", {"a": 1})
        batch.put_json("metrics.json", {"m": 1}, marker=True)
        raise RuntimeError("killed")
    assert [p.name for p in (tmp_path / "f").iterdir()] == ["a.json"]  # no marker, no temp file


def _die_at_step(kill_at: int) -> None:
    """From now on, this process dies (no clean-up runs) at its ``kill_at``-th write step: a file
    written in place (killed half-way through it: a torn file) or an ``os.replace``."""
    count = [0]
    real_replace, real_write = os.replace, artifacts._write_new

    def step() -> bool:
        count[0] += 1
        return count[0] == kill_at

    def dying_replace(src: Any, dst: Any) -> None:
        if step():
            os._exit(9)
        real_replace(src, dst)

    def dying_write(path: Path, data: bytes) -> None:
        if step():
            real_write(path, data[: len(data) // 2])
            os._exit(9)
        real_write(path, data)

    os.replace = dying_replace  # type: ignore[assignment]
    artifacts._write_new = dying_write  # type: ignore[assignment]


def _whole(sdir: Path) -> None:
    """Every JSON file of the folder (temp files aside) parses: none is torn."""
    for path in sdir.rglob("*.json"):
        if not path.name.startswith("."):
            json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the crash is simulated in a forked child")
def test_a_crash_between_files_never_leaves_a_folder_that_reads_as_complete(loaded, tmp_path):
    """A kill at any write step of a new attempt over a complete folder: the folder reads as
    incomplete (redone by a resume), or as stored with every file of the new attempt whole; never
    as scored until the last step."""
    sc = loaded.scenario(ONE)
    opts = ScoringOptions()
    good = session(sc, expected_copy(sc))
    steps, written = 0, 0
    for kill_at in range(1, 60):
        run_dir = tmp_path / f"k{kill_at}"
        store_and_score(run_dir, sc, good, 1, opts, "first")  # a complete earlier attempt
        sdir = run_dir / sc.name
        assert slot(run_dir, sc.name, 1, 1).state == "scored"
        pid = os.fork()
        if pid == 0:  # the child dies at its kill_at-th write step
            _die_at_step(kill_at)
            try:
                store_and_score(run_dir, sc, session(sc, None, stop_reason="error"), 1, opts, "second")
            finally:
                os._exit(0)
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        found = slot(run_dir, sc.name, 1, 1)
        if code == 0:  # the write finished before the kill_at-th step: the new attempt, whole
            steps = kill_at - 1
            written = sum(1 for p in sdir.rglob("*") if p.is_file() and not p.name.startswith("."))
            _whole(sdir)
            assert found.state == "scored" and found.metrics is not None
            assert found.metrics.stop_reason == "error" and found.session.invocation == "second"
            break
        assert found.state != "scored", kill_at  # killed mid-write: never complete
        if found.state == "stored":  # session.json landed: every artifact of the new attempt is whole
            _whole(sdir)
            assert found.session is not None and found.session.invocation == "second"
            _, stored = load_session(sdir)
            assert stored.stop_reason == "error" and stored.final_db is None
        else:
            assert found.state == "missing", (kill_at, found.state)
    # every file of the new attempt was a kill point, and each of its 2 markers twice (write, rename)
    assert steps == written + 2 and written >= 10


def test_a_run_keeps_no_finished_session(tmp_path, monkeypatch):
    made: list[weakref.ref] = []
    alive: list[int] = []
    real = runner._session

    async def tracked(*args: Any, **kw: Any) -> Any:
        alive.append(sum(1 for r in made if r() is not None))
        result = await real(*args, **kw)
        made.append(weakref.ref(result))
        return result

    monkeypatch.setattr(runner, "_session", tracked)
    opts = run_options(MOCK_SPEC_DIR, MOCK_DATA_ROOT, output_dir=tmp_path / "run", concurrency=2, trials=10)
    report = asyncio.run(runner.run(replace(opts, progress=False)))
    assert len(made) == 30 and len(report.outcomes) == 30
    assert max(alive) <= 2 * 2  # running or waiting for their folder: at most twice the concurrency
    gc.collect()
    assert [r for r in made if r() is not None] == []  # every session (DB, transcript) let go
    assert not any(hasattr(o, "final_db") or hasattr(o, "transcript") for o in report.outcomes)
    # what the report keeps still says what each session did, and the whole session is on disk
    first = report.outcomes[0]
    result, metrics = next(report.results())
    assert (result.scenario_name, result.stop_reason, result.agent_turns) == (
        first.scenario_name,
        first.stop_reason,
        first.agent_turns,
    )
    assert result.final_db is not None and metrics is not None
    assert metrics.is_successful == first.is_successful


def test_summary_from_running_totals_equals_reading_the_folder(tmp_path):
    out = tmp_path / "run"
    # the noop agent fails (and stalls) where the gold writes; trials 2 adds pass^k
    opts = run_options(MOCK_SPEC_DIR, MOCK_DATA_ROOT, output_dir=out, agent="noop", trials=2, progress=False)
    report = asyncio.run(runner.run(opts))
    assert report.summary is not None and report.summary.results == 6 and report.summary.failed
    written = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert report.summary.to_json() == written
    info = {
        "trials": 2,
        "min_agent_turns": written["stalled"]["min_agent_turns"],
        "scenarios": list(SHOP),
        "wall_time_s": written["wall_time_s"],
        "invocations": written["invocations"],
    }
    running = report.totals.summary(info, str(out))
    assert len(report.totals) == 6
    assert running == run_totals(out).summary(info, str(out))
    assert running == build_summary(load_run_metrics(out), info, str(out))
    assert running.to_json() == written
    assert SummaryRecord.from_json(written) == running
