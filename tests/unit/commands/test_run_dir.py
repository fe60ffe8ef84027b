"""Run directories that would mix or lose results: a second run into the same folder, resumes of
what is not a run or with other trials, folders that cannot be written, a full disk, and runs
started in the same second. Each case pins the behaviour after a fix."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

import cli
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR

ONE = "mock__cancel_order"


def _run(*args: str) -> int:
    spec = ["run", str(MOCK_SPEC_DIR), "--data-root", str(MOCK_DATA_ROOT)]
    return cli.main([*spec, "--scenarios", ONE, *args])


def test_second_run_into_the_same_output_dir_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    assert _run("--output-dir", str(out), "--no-progress") == 0
    metrics = (out / ONE / "metrics.json").read_bytes()
    capsys.readouterr()
    assert _run("--output-dir", str(out), "--agent", "ws://127.0.0.1:1", "--no-progress") == 2
    assert capsys.readouterr().err.strip() == (
        f"evalctl: {out} already holds a run; complete it with --resume {out}, or give another --output-dir"
    )
    assert (out / ONE / "metrics.json").read_bytes() == metrics  # the first run's result is intact


def test_resume_of_a_directory_that_is_not_a_run_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "notes.txt").write_text("mine\n", encoding="utf-8")
    assert _run("--resume", str(tmp_path), "--no-progress") == 2
    assert "is not an evalctl run directory" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_resume_with_other_trials_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    assert _run("--output-dir", str(out), "--trials", "2", "--no-progress") == 0
    capsys.readouterr()
    assert _run("--resume", str(out), "--trials", "1", "--no-progress") == 2
    assert capsys.readouterr().err.strip() == (
        f"evalctl: --resume: the run in {out} was made with --trials 2; this resume says --trials 1 "
        "(a resumed run keeps its settings: leave the option out, or start a new run)"
    )
    assert not (out / ONE / "metrics.json").exists()  # no single-trial result beside the trial ones
    assert _run("--resume", str(out), "--no-progress") == 0  # the run's own --trials 2
    assert "2 already complete (skipped)" in capsys.readouterr().out


def test_a_run_marks_its_directory_before_the_first_result(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert _run("--output-dir", str(out), "--no-progress") == 0
    invocations = json.loads((out / "run.json").read_text(encoding="utf-8"))["invocations"]
    assert len(invocations) == 1 and invocations[0]["finished_at"] and not invocations[0]["interrupted"]


def test_output_dir_that_cannot_be_created_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("", encoding="utf-8")
    # before: exit 1, the code docs/scoring.md keeps for --fail-under; now 2 (bad input, IO)
    assert _run("--output-dir", str(blocker / "run"), "--no-progress") == 2
    assert capsys.readouterr().err.strip() == (
        f"evalctl: cannot write the run directory {blocker / 'run'}: Not a directory"
    )
    capsys.readouterr()
    # before: `report --html` to a path that cannot be written was a FileExistsError traceback
    html = blocker / "report.html"
    assert _run("--output-dir", str(tmp_path / "run"), "--no-progress") == 0
    capsys.readouterr()
    assert cli.main(["report", str(tmp_path / "run"), "--html", str(html)]) == 2
    assert capsys.readouterr().err.strip().startswith(f"evalctl: cannot write {html}: ")


def test_disk_full_at_the_summary_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(run_dir: Path, info: dict[str, Any], *known: Any) -> dict[str, Any]:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("engine.results.scoring_stage.finish_run", full)
    out = tmp_path / "run"
    assert _run("--output-dir", str(out), "--no-progress") == 2  # before: 1, --fail-under's code
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"evalctl: cannot write the run summary in {out}: No space left on device;")
    assert "Traceback" not in "\n".join(err)
    assert (out / ONE / "metrics.json").is_file()  # the session's own result was kept


def test_resume_keeps_the_original_selection(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    assert _run("--output-dir", str(out), "--no-progress") == 0
    capsys.readouterr()
    resume = ["run", str(MOCK_SPEC_DIR), "--data-root", str(MOCK_DATA_ROOT), "--resume", str(out)]
    assert cli.main([*resume, "--no-progress"]) == 0  # no --scenarios: the run's own selection, not all 3
    assert "1 already complete (skipped)" in capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["results"] == 1 and not summary["missing"]
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == [ONE]


def test_runs_started_in_the_same_second_get_their_own_default_dirs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    stamp = "20260101-000000"

    class Frozen(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> datetime:
            return datetime(2026, 1, 1, tzinfo=tz)

    monkeypatch.setattr("engine.results.rundir.datetime", Frozen)
    assert _run("--no-progress") == 0
    assert _run("--no-progress") == 0
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == [stamp, f"{stamp}-2"]
    for name in (stamp, f"{stamp}-2"):
        assert (tmp_path / "runs" / name / ONE / "metrics.json").is_file()


def test_resume_with_another_output_dir_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # before: --output-dir was silently ignored and the resume wrote into the --resume folder
    out, other = tmp_path / "run", tmp_path / "other"
    assert _run("--output-dir", str(out), "--no-progress") == 0
    capsys.readouterr()
    assert _run("--resume", str(out), "--output-dir", str(other), "--no-progress") == 2
    assert capsys.readouterr().err.strip() == (
        f"evalctl: --resume {out} writes into {out}; --output-dir {other} is another folder "
        "(leave --output-dir out)"
    )
    assert not other.exists()
    assert _run("--resume", str(out), "--output-dir", f"{out}/", "--no-progress") == 0  # the same folder


@pytest.mark.parametrize("flag", ["--junit", "--trace-file"])
def test_unwritable_junit_or_trace_file_is_one_line_exit_2(
    flag: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("", encoding="utf-8")
    bad = blocker / "out.xml"
    out = tmp_path / "run"
    # before: a NotADirectoryError traceback and exit 1
    assert _run("--output-dir", str(out), "--no-progress", flag, str(bad)) == 2
    captured = capsys.readouterr()
    assert captured.err.strip().splitlines()[-1].startswith(f"evalctl: cannot write {bad}: ")
    assert "Traceback" not in captured.err
    assert (out / "summary.json").is_file() and f"results: {out}" in captured.out  # written first
    if flag == "--junit":
        assert cli.main(["report", str(out), "--junit", str(bad)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"evalctl: cannot write {bad}: ") and "\n" not in err
