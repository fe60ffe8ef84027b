"""An in-process agent (``python:``) that writes passing result folders into the run folder and
then ends its process (found by a breaker pass): before, the run's summary counted what it had
written, its own crashed session and scenarios the run never selected as passes, and a planted
``session.json`` alone turned its crash into a left-out "missing" result. Now the run's process
takes nothing from a folder the dead worker left: the session is the agent's FAIL, written over
it; and a summary counts only the scenarios the run selected, naming the folders it left out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, SPEC_DIR

EVA = ("eva_airline__1_1_3", "eva_airline__1_1_4")

#: Copies a passing reference run's folders ($REF/<name>, for each name of $PLANT) into the run's
#: own output folder (read from the command line), or only their session.json ($ONLY_SESSION),
#: then ends its process.
FORGER = """
import os, shutil, sys
from pathlib import Path


def make(session, tools):
    async def turn(line):
        out = Path(sys.argv[sys.argv.index("--output-dir") + 1])
        ref = Path(os.environ["REF"])
        for name in os.environ["PLANT"].split(","):
            shutil.rmtree(out / name, ignore_errors=True)
            if os.environ.get("ONLY_SESSION"):
                (out / name).mkdir(parents=True)
                shutil.copy(ref / name / "session.json", out / name / "session.json")
            else:
                shutil.copytree(ref / name, out / name)
        os._exit(9)

    return turn
"""


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory, data_root: Path) -> Path:
    """A replay run of both scenarios: every result passes."""
    out = tmp_path_factory.mktemp("forgery") / "ref"
    done = subprocess.run(
        [sys.executable, str(REPO / "cli.py"), "run", str(SPEC_DIR), "--data-root", str(data_root),
         "--scenarios", ",".join(EVA), "--no-progress", "--output-dir", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return out


def _forged_run(tmp_path: Path, data_root: Path, reference: Path, **env: str) -> tuple[str, Path]:
    agent = tmp_path / "forger.py"
    agent.write_text(FORGER)
    out = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, str(REPO / "cli.py"), "run", str(SPEC_DIR), "--data-root", str(data_root),
         "--scenarios", EVA[0], "--agent", f"python:{agent}:make", "--no-progress", "--output-dir", str(out)],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO), "REF": str(reference), **env},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr  # a run of one FAIL
    return done.stderr, out


def test_planted_passing_folders_count_for_nothing(tmp_path: Path, data_root: Path, reference: Path) -> None:
    err, out = _forged_run(tmp_path, data_root, reference, PLANT=",".join(EVA))
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["results"], summary["overall"]["passed"], summary["missing"]) == (1, 0, []), summary
    metrics = json.loads((out / EVA[0] / "metrics.json").read_text())
    assert metrics["is_successful"] is False and metrics["stop_reason"] == "agent_error"
    assert "exited with code 9" in metrics["error"]
    assert "the agent's own code runs in that process" in metrics["error"]
    assert "Overall Success Rate: 0.0% (0/1 scenarios; 0 errors)" in (out / "all_summary.txt").read_text()
    assert (
        "evalctl: 1 result folder(s) of scenarios this run did not select are not counted "
        f"(made outside the run: copied in, or by an agent's code?): {EVA[1]}"
    ) in err
    assert f"PASS {EVA[0]}" not in err and f"FAIL {EVA[0]}" in err  # the progress line agrees


def test_a_planted_session_json_does_not_turn_the_crash_into_a_missing_result(
    tmp_path: Path, data_root: Path, reference: Path
) -> None:
    _, out = _forged_run(tmp_path, data_root, reference, PLANT=EVA[0], ONLY_SESSION="1")
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["results"], summary["overall"]["passed"], summary["missing"]) == (1, 0, []), summary
    metrics = json.loads((out / EVA[0] / "metrics.json").read_text())
    assert metrics["stop_reason"] == "agent_error"


#: Copies the passing reference run's metrics.json into every selected scenario's folder, then
#: stops the run as a Ctrl-C would (SIGINT to the run's process, its parent) and waits.
PLANT_AND_STOP = """
import asyncio, os, shutil, signal, sys
from pathlib import Path


def make(session, tools):
    async def turn(line):
        out = Path(sys.argv[sys.argv.index("--output-dir") + 1])
        for name in os.environ["PLANT"].split(","):
            (out / name).mkdir(parents=True, exist_ok=True)
            shutil.copy(Path(os.environ["REF"]) / name / "metrics.json", out / name / "metrics.json")
        os.kill(os.getppid(), signal.SIGINT)
        await asyncio.sleep(60)
        return "hello"

    return turn
"""


def test_passes_planted_before_a_stop_are_not_counted(
    tmp_path: Path, data_root: Path, reference: Path
) -> None:
    """Found by a second breaker pass: the agent wrote passing metrics.json files into the folders
    of the selected scenarios and stopped the run (a Ctrl-C, a CI timeout's SIGTERM do the same):
    the interrupted run printed 100 % (2/2) with no INCOMPLETE, and ``--resume`` then skipped them.
    A session this invocation did not see finish is missing, whatever its folder holds."""
    agent = tmp_path / "planter.py"
    agent.write_text(PLANT_AND_STOP)
    out = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, str(REPO / "cli.py"), "run", str(SPEC_DIR), "--data-root", str(data_root),
         "--scenarios", ",".join(EVA), "--agent", f"python:{agent}:make", "--concurrency", "1",
         "--no-progress", "--output-dir", str(out)],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO), "REF": str(reference), "PLANT": ",".join(EVA)},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 130, done.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] is True and summary["overall"]["passed"] == 0, summary
    assert sorted(summary["missing"]) == sorted(EVA), summary["missing"]
    assert not any((out / name / "metrics.json").exists() for name in EVA)
    assert "2 result folder(s) of sessions this run did not see finish held a metrics.json" in done.stderr
    assert "INCOMPLETE" in done.stdout
