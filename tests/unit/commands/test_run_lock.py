"""Issue #9 §8: one run per output folder. ``evalctl run``, a resume and ``evalctl rescore`` hold
an OS-level lock on the folder for their whole life; a second process is refused with one line.
Real CLI runs of the mock shop (a scripted judge on loopback holds the first run inside its life;
waits are on events, never on the clock)."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from cli import main
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR, REPO
from tests.mock_domain.judge_server import scripted_judge

SPEC, DATA = MOCK_SPEC_DIR, MOCK_DATA_ROOT
CANCEL = "mock__cancel_order"
#: Bound on waits for events a working engine sets within seconds; it only stops a broken engine
#: from hanging the suite.
PATIENCE_S = 60.0


def test_a_run_folder_held_by_another_process_is_refused(tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "run"
    out.mkdir()
    with open(out / ".evalctl.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        held.write("4242\n")
        held.flush()
        code = main(["run", str(SPEC), "--data-root", str(DATA), "--output-dir", str(out), "--no-progress"])
    # before: the second run went ahead into the folder
    assert code == 2
    assert capsys.readouterr().err.strip() == (
        f"evalctl: {out} is in use by another evalctl process (pid 4242): one run per output folder; "
        "wait for it to end or choose another --output-dir"
    )
    assert sorted(p.name for p in out.iterdir()) == [".evalctl.lock"]


def test_a_resume_or_rescore_of_a_running_run_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "run"
    judging, release = threading.Event(), threading.Event()

    def judge(body: dict[str, Any]) -> Any:
        judging.set()
        release.wait(PATIENCE_S)  # the first run stays inside its life while the others try
        return {"score": 1.0, "reason": "", "nl_assertion_verdicts": []}

    cli = [sys.executable, "-m", "cli"]
    env = {**os.environ, "OPENAI_API_KEY": "local"}
    with scripted_judge([judge]) as (url, _):
        judged = ["--scenarios", CANCEL, "--judge-model", "j", "--judge-base-url", url]
        first = subprocess.Popen(
            [
                *cli,
                "run",
                str(SPEC),
                "--data-root",
                str(DATA),
                "--output-dir",
                str(out),
                "--no-progress",
                *judged,
            ],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            assert judging.wait(PATIENCE_S), "the first run never reached its judge"
            others = [
                [*cli, "run", str(SPEC), "--data-root", str(DATA), "--resume", str(out), "--no-progress"],
                [*cli, "rescore", str(out)],
            ]
            done = [
                subprocess.run(a, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
                for a in others
            ]
        finally:
            release.set()
            first.wait(PATIENCE_S)
    # before: the resume ran the same scenario again into the folder the first run was writing
    for other in done:
        assert other.returncode == 2, other.stderr
        assert other.stderr.strip() == (
            f"evalctl: {out} is in use by another evalctl process (pid {first.pid}): one run per output "
            "folder; wait for it to end"  # a resume or a rescore has no other folder to choose
        )
    assert first.returncode == 0
    assert json.loads((out / "summary.json").read_text())["results"] == 1
