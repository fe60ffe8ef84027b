"""Group commit on eva (issue #31 item 2): a real ``evalctl run`` killed at a commit loses nothing it
reported, and ``--resume`` completes the rest (the unit tests of the batching are in
tests/unit/results/test_group_commit.py)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys

import pytest

import cli
from engine.util import group_commit
from tests.conftest import REPO, SPEC_DIR

_LINE = re.compile(r"^\[\s*\d+/\d+\s+[\d.]+s\] \w+ (?P<name>\S+)#(?P<trial>\d+) ", re.M)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SIGKILL is Linux's here")
def test_a_run_killed_at_a_commit_loses_nothing_it_reported(tmp_path, capsys):
    """A real ``evalctl run`` killed by SIGKILL when its writer starts its 3rd commit, before any
    sync of it (``$EVALCTL_KILL_AT_COMMIT``). One session at a time holds at most two folders
    pending, so 12 sessions make at least 6 commits: the kill always comes, after sessions were
    reported. Then ``--resume`` (in this process) completes the rest."""
    out = tmp_path / "run"
    spec = ["run", str(SPEC_DIR), "--data-root", str(REPO / "data"), "--num-tasks", "3", "--trials", "4",
            "--concurrency", "1", "--workers", "1", "--no-progress"]  # fmt: skip
    env = {**os.environ, group_commit.KILL_ENV: "3"}
    argv = [sys.executable, str(REPO / "cli.py"), *spec, "--output-dir", str(out)]
    killed = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert killed.returncode == -signal.SIGKILL
    told = {(m["name"], int(m["trial"])) for m in _LINE.finditer(killed.stderr)}
    assert 1 <= len(told) < 12
    folders = [p for p in out.glob("*/trial_*") if p.is_dir()]
    complete = {(p.parent.name, int(p.name.split("_")[1])) for p in folders if (p / "metrics.json").is_file()}
    assert told <= complete  # every session reported done is on disk, whole
    # the batch the kill caught: its files written, no marker over them
    assert [p for p in folders if not (p / "metrics.json").exists() and (p / "transcript.jsonl").exists()]
    assert cli.main([*spec, "--resume", str(out)]) == 0
    again = {(m["name"], int(m["trial"])) for m in _LINE.finditer(capsys.readouterr().err)}
    assert not again & complete and len(again) == 12 - len(complete)  # the rest, nothing twice
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["results"] == 12 and summary["overall"]["passed"] == 12 and summary["missing"] == []
