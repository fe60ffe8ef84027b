"""`make smoke-real`'s checks (tests/smoke_real.py) on run folders made here, and its pins."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests import smoke_real

REPO = Path(__file__).resolve().parents[2]


def _run(tmp: Path, verdicts: dict[str, object], usage: dict[str, object]) -> Path:
    for name, verdict in verdicts.items():
        (tmp / name).mkdir(parents=True)
        metrics = {"scenario_name": name, "is_successful": verdict, "stop_reason": "timeout", "db_hash": "ab"}
        (tmp / name / "metrics.json").write_text(json.dumps(metrics))
    (tmp / "summary.json").write_text(json.dumps({"usage": usage}))
    return tmp


COUNTED = {role: {"prompt_tokens": 10, "completion_tokens": 2} for role in ("agent", "user")}


def test_a_complete_first_run_passes_the_checks(tmp_path: Path) -> None:
    names = smoke_real.SCENARIOS.split(",")
    run = _run(tmp_path, {names[0]: False, names[1]: True}, COUNTED)
    assert smoke_real.check_first(run, requests=4) == []
    assert smoke_real.outcomes(run) == {names[0]: (False, "timeout", "ab"), names[1]: (True, "timeout", "ab")}


def test_errors_missing_tokens_and_no_requests_are_reported(tmp_path: Path) -> None:
    names = smoke_real.SCENARIOS.split(",")
    run = _run(tmp_path, {names[0]: "error"}, {"agent": COUNTED["agent"], "user": {"prompt_tokens": 0}})
    problems = smoke_real.check_first(run, requests=0)
    assert any("sessions stored" in p for p in problems)
    assert any(f"{names[0]}: verdict 'error'" in p for p in problems)
    assert any("usage.user" in p for p in problems)
    assert "the model server answered no request" in problems


def test_the_runtime_pins_agree() -> None:
    folder = REPO / "scripts" / "smoke_real"
    assert json.loads((folder / "package.json").read_text())["dependencies"] == {
        "node-llama-cpp": smoke_real.RUNTIME_VERSION
    }
    lock = json.loads((folder / "package-lock.json").read_text())
    assert lock["packages"]["node_modules/node-llama-cpp"]["version"] == smoke_real.RUNTIME_VERSION


def test_the_cache_folder_follows_the_environment(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("EVALCTL_SMOKE_CACHE", str(tmp_path / "c"))
    assert smoke_real.cache_root() == tmp_path / "c"
    monkeypatch.delenv("EVALCTL_SMOKE_CACHE")
    assert smoke_real.cache_root() == Path.home() / ".cache" / "evalctl-smoke"


def test_a_failed_install_step_is_one_line_and_exit_2(monkeypatch, capsys) -> None:
    def fail() -> int:
        raise subprocess.CalledProcessError(1, ["npm", "ci"])

    monkeypatch.setattr(smoke_real, "main", fail)
    assert smoke_real.cli() == 2
    assert capsys.readouterr().err == "smoke-real: `npm ci` failed (exit 1)\n"
