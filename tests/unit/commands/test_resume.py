"""Acceptance: a real `evalctl run` killed with SIGKILL mid-way and resumed with --resume scores
every session exactly once and ends with the same summary as an uninterrupted run (the mock shop's
three scenarios, 17 trials each: 51 sessions)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.run.runner import run_cli
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR, REPO
from tests.runtime_helpers import run_options

TIMING_KEYS = {"run_dir", "wall_time_s", "session_time_s", "interrupted", "invocations"}
TRIALS = 17
SESSIONS = 3 * TRIALS


def _evalctl(*args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "cli",
        "run",
        str(MOCK_SPEC_DIR),
        "--data-root",
        str(MOCK_DATA_ROOT),
        "--no-progress",
        *args,
    ]


def _complete(run_dir: Path) -> dict[str, tuple[int, str]]:
    """scenario or scenario/trial_k -> (mtime_ns, content) of every metrics.json that parses."""
    out = {}
    for p in [*run_dir.glob("*/metrics.json"), *run_dir.glob("*/trial_*/metrics.json")]:
        try:
            text = p.read_text()
            json.loads(text)
        except (OSError, ValueError):
            continue
        out[p.parent.relative_to(run_dir).as_posix()] = (p.stat().st_mtime_ns, text)
    return out


def _comparable(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if k not in TIMING_KEYS}


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    out = tmp_path_factory.mktemp("resume") / "baseline"
    report = run_cli(
        run_options(
            spec_dir=MOCK_SPEC_DIR,
            data_root=MOCK_DATA_ROOT,
            output_dir=out,
            concurrency=2,
            trials=TRIALS,
            progress=False,
        )
    )
    assert not report.interrupted and report.summary is not None and report.summary.results == SESSIONS
    return report.summary.to_json()


def test_sigkill_then_resume_matches_uninterrupted_run(baseline, tmp_path):
    run_dir = tmp_path / "killed"
    proc = subprocess.Popen(
        _evalctl(
            "--output-dir",
            str(run_dir),
            "--concurrency",
            "2",
            "--trials",
            str(TRIALS),
            "--replay-latency",
            "0.05",  # ~0.5 s a session: ~10 s between the 10th result and the 51st, for the kill below
        ),
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        # waits for the child's 10th result; 60 s only bounds a broken run (10 results take ~3 s)
        deadline = time.monotonic() + 60
        while len(_complete(run_dir)) < 10:
            assert proc.poll() is None, "the run finished before it could be killed"
            assert time.monotonic() < deadline, "the run made no progress"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    before = _complete(run_dir)
    assert 10 <= len(before) < SESSIONS, len(before)
    assert not (run_dir / "summary.json").exists()  # killed: no summary was written

    done = subprocess.run(
        _evalctl("--resume", str(run_dir)),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert f"{len(before)} already complete (skipped)" in done.stdout

    after = _complete(run_dir)
    assert len(after) == SESSIONS and len(list(run_dir.glob("*/trial_*/metrics.json"))) == SESSIONS
    for name, stamp in before.items():
        assert after[name] == stamp, f"{name} was scored again"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["results"] == SESSIONS and not summary["missing"]
    assert _comparable(summary) == _comparable(json.loads(json.dumps(baseline)))
    run = json.loads((run_dir / "run.json").read_text())  # the killed run marked itself at its start
    killed, resumed = run["invocations"]  # told apart by id, even when both started in one second
    assert killed["interrupted"] and killed["finished_at"] is None and not resumed["interrupted"]
    assert killed["id"] != resumed["id"] and (killed["command"], resumed["command"]) == ("run", "resume")
    # the wall time covers both invocations: the killed one up to the last session it stored
    assert summary["invocations"] == 2 and summary["wall_time_s"] > resumed["wall_time_s"]
    assert run["spec_files"]["domain.yaml"] and run["data_root_files"]


def test_resume_of_a_complete_run_runs_nothing(tmp_path):
    run_dir = tmp_path / "small"
    names = "mock__cancel_order,mock__shipped_refusal"
    first = run_cli(
        run_options(
            spec_dir=MOCK_SPEC_DIR,
            data_root=MOCK_DATA_ROOT,
            output_dir=run_dir,
            scenarios=tuple(names.split(",")),
            progress=False,
        )
    )
    stamps = _complete(run_dir)
    assert sorted(stamps) == sorted(names.split(","))
    again = run_cli(
        run_options(
            spec_dir=MOCK_SPEC_DIR,
            data_root=MOCK_DATA_ROOT,
            resume=run_dir,
            scenarios=tuple(names.split(",")),
            progress=False,
        )
    )
    assert again.skipped == 2 and not again.outcomes and _complete(run_dir) == stamps
    assert again.summary is not None and first.summary is not None
    assert _comparable(again.summary.to_json()) == _comparable(first.summary.to_json())


#: Stored artifacts that cannot be read back: file name -> bytes written over it.
UNREADABLE = {
    "transcript_not_utf8": ("transcript.jsonl", b'{"role": "user", "content": "\xff\xfe"}\n'),
    "transcript_cut_mid_line": ("transcript.jsonl", b'{"role": "user", "type": "utter'),
    "tool_calls_torn": ("tool_calls.json", b"{"),
}


@pytest.mark.parametrize("damage", sorted(UNREADABLE))
def test_resume_runs_again_a_stored_session_that_cannot_be_read_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: str
) -> None:
    # before: --resume planned "score" for it, scoring failed ("UnicodeDecodeError ..."), the run
    # printed "INCOMPLETE: 1 result missing" and exited 0, on every resume; never run again
    import cli

    run_dir = tmp_path / "run"
    spec = ["run", str(MOCK_SPEC_DIR), "--data-root", str(MOCK_DATA_ROOT), "--no-progress"]
    assert cli.main([*spec, "--scenarios", "mock__cancel_order", "--output-dir", str(run_dir)]) == 0
    sdir = run_dir / "mock__cancel_order"
    name, content = UNREADABLE[damage]
    (sdir / "metrics.json").unlink()
    (sdir / name).write_bytes(content)
    capsys.readouterr()
    assert cli.main([*spec, "--resume", str(run_dir)]) == 0, capsys.readouterr().err
    assert "scoring failed" not in capsys.readouterr().err
    assert json.loads((sdir / "metrics.json").read_text())["is_successful"] is True
    assert json.loads((run_dir / "summary.json").read_text())["missing"] == []


@pytest.mark.parametrize("damage", [b"{", b"\xff\xfe", b"[]"])
def test_resume_refuses_a_run_whose_run_json_cannot_be_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: bytes
) -> None:
    """run.json is written whole or not at all, so one that cannot be read was damaged. Before, a
    resume went ahead with the command line's options and the whole spec: a 2-scenario run quietly
    became a run of every scenario, with whatever sides the command line named."""
    import cli

    run_dir = tmp_path / "small"
    spec = ["run", str(MOCK_SPEC_DIR), "--data-root", str(MOCK_DATA_ROOT), "--no-progress"]
    assert cli.main([*spec, "--scenarios", "mock__cancel_order", "--output-dir", str(run_dir)]) == 0
    (run_dir / "run.json").write_bytes(damage)
    capsys.readouterr()
    assert cli.main([*spec, "--resume", str(run_dir)]) == 2
    said = capsys.readouterr().err.strip()
    assert said.startswith(f"evalctl: --resume: {run_dir / 'run.json'} cannot be read (") and "\n" not in said
    assert sorted(p.name for p in run_dir.iterdir() if p.is_dir()) == ["mock__cancel_order"]  # nothing ran
