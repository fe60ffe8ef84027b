"""Issue #9 §2: scoring is its own stage. Each session's conversation is stored when it ends, the
judge runs after it with the run's concurrency, a crash while judging loses no conversation, and
``evalctl rescore`` scores stored sessions again without running them. Real runs of the mock shop
domain with a scripted judge on loopback; waits are on events, never on the clock."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from cli import main
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR, REPO
from tests.mock_domain.judge_server import scripted_judge

SPEC, DATA = MOCK_SPEC_DIR, MOCK_DATA_ROOT
NAMES = ("mock__cancel_order", "mock__late_delivery_credit", "mock__shipped_refusal")
LATE = "mock__late_delivery_credit"
VERDICT = {
    "score": 1.0,
    "reason": "handled well",
    "nl_assertion_verdicts": [
        {"index": 1, "passed": True, "reason": ""},
        {"index": 2, "passed": True, "reason": ""},
    ],
}
#: Bound on waits for events that a working engine sets within a second or two; it only stops a
#: broken one from hanging the suite (the mock domain's three replay sessions take milliseconds).
PATIENCE_S = 60.0
RUN = [sys.executable, "-m", "cli", "run", str(SPEC), "--data-root", str(DATA), "--no-progress"]


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "local")


def _run(out: Path, *extra: str) -> int:
    return main(
        ["run", str(SPEC), "--data-root", str(DATA), "--output-dir", str(out), "--no-progress", *extra]
    )


def _files(run_dir: Path, name: str) -> dict[str, bytes]:
    return {n: (run_dir / s / n).read_bytes() for s in NAMES for n in (name,) if (run_dir / s / n).exists()}


def _stored(run_dir: Path) -> dict[str, bytes]:
    """The stored conversations: every session.json and transcript.jsonl, by path."""
    return {
        str(p.relative_to(run_dir)): p.read_bytes()
        for name in ("session.json", "transcript.jsonl", "tool_calls.json", "final_db.json")
        for p in run_dir.glob(f"*/{name}")
    }


def test_the_judge_runs_with_the_runs_concurrency(tmp_path: Path) -> None:
    everyone = threading.Barrier(3, timeout=PATIENCE_S)

    def judge(body: dict[str, Any]) -> Any:
        try:  # answers only once all three sessions' judge requests are in flight together
            everyone.wait()
        except threading.BrokenBarrierError:
            return 500
        return VERDICT

    with scripted_judge([judge]) as (url, server):
        # before: a pool of two workers judged at most two sessions at once, so this never answered
        code = _run(tmp_path / "run", "--concurrency", "3", "--judge-model", "j", "--judge-base-url", url)
    assert code == 0 and len(server.requests) == 3
    metrics = [json.loads((tmp_path / "run" / n / "metrics.json").read_text()) for n in NAMES]
    assert [m.get("judge_error") for m in metrics] == [None] * 3


def test_a_crash_while_judging_loses_no_conversation(tmp_path: Path) -> None:
    out = tmp_path / "run"
    arrived, release = threading.Event(), threading.Event()
    seen: list[int] = []

    def judge(body: dict[str, Any]) -> Any:
        seen.append(1)
        if len(seen) >= 3:
            arrived.set()
        release.wait(PATIENCE_S)  # hold every judge request until the run is killed
        return VERDICT

    env = {**os.environ, "OPENAI_API_KEY": "local"}
    with scripted_judge([judge]) as (url, server):
        proc = subprocess.Popen(
            [*RUN, "--output-dir", str(out), "--judge-model", "j", "--judge-base-url", url],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            assert arrived.wait(PATIENCE_S), "the judge was never asked about all three sessions"
            os.kill(proc.pid, signal.SIGKILL)
        finally:
            proc.wait(timeout=PATIENCE_S)
            release.set()
        # the conversations are there, scored by nobody
        assert not list(out.glob("*/metrics.json"))
        stored = _stored(out)
        assert len([k for k in stored if k.endswith("session.json")]) == 3
        assert len([k for k in stored if k.endswith("transcript.jsonl")]) == 3
        asked = len(server.requests)
        code = main(["run", str(SPEC), "--data-root", str(DATA), "--resume", str(out), "--no-progress"])
    assert code == 0 and len(server.requests) == asked + 3  # judged again, with the run's judge
    assert _stored(out) == stored  # scored from what was stored: no conversation ran again
    summary = json.loads((out / "summary.json").read_text())
    assert summary["results"] == 3 and summary["overall"]["passed"] == 3


def test_rescore_adds_a_judge_without_running_a_conversation(tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "run"
    assert _run(out) == 0
    stored = _stored(out)
    before = json.loads((out / LATE / "metrics.json").read_text())
    assert before["judge_passed"] is None and before["is_successful"] is True  # no judge: N/A
    low = {**VERDICT, "score": 0.2}
    with scripted_judge([low]) as (url, server):
        code = main(["rescore", str(out), "--judge-model", "j", "--judge-base-url", url])
    assert code == 0 and len(server.requests) == 3
    assert "rescored 3 result(s)" in capsys.readouterr().out
    assert _stored(out) == stored  # no session ran again
    late = json.loads((out / LATE / "metrics.json").read_text())
    assert late["judge_passed"] is False and late["judge_score"] == 0.2 and late["is_successful"] is False
    assert late["judge_model"] == "j" and (out / LATE / "judge_result.json").is_file()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["overall"]["passed"] == 2 and summary["invocations"] == 2
    run = json.loads((out / "run.json").read_text())
    assert [i["command"] for i in run["invocations"]] == ["run", "rescore"]
    assert run["invocations"][1]["args"]["scoring"]["judge_model"] == "j"
    assert run["settings"]["scoring"]["judge_model"] == "j"  # a later resume judges the same way
    assert run["settings"]["agent"] == "replay"


def test_rescore_with_nothing_changed_gives_the_same_verdicts(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert _run(out, "--min-agent-turns", "4") == 0
    first = {n: json.loads(b) for n, b in _files(out, "metrics.json").items()}
    assert main(["rescore", str(out)]) == 0  # the run's own settings: --min-agent-turns 4 kept
    again = {n: json.loads(b) for n, b in _files(out, "metrics.json").items()}
    assert again == first


def test_rescore_only_errors_judges_again_what_the_judge_failed(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with scripted_judge([503]) as (url, _):
        assert _run(out, "--judge-model", "j", "--judge-base-url", url) == 3
    others = {s: (out / s / "metrics.json").read_bytes() for s in NAMES if s != LATE}
    assert json.loads((out / LATE / "metrics.json").read_text())["is_successful"] == "error"
    with scripted_judge([VERDICT]) as (url, server):
        assert main(["rescore", str(out), "--only-errors", "--judge-base-url", url]) == 0
    assert len(server.requests) == 1  # only the result without a verdict was judged again
    assert {s: (out / s / "metrics.json").read_bytes() for s in NAMES if s != LATE} == others
    late = json.loads((out / LATE / "metrics.json").read_text())
    assert late["is_successful"] is True and late["error_cause"] is None
    assert json.loads((out / "summary.json").read_text())["errors"] == 0


def test_rescore_of_a_folder_that_is_not_a_run_is_one_line(tmp_path: Path, capsys: Any) -> None:
    assert main(["rescore", str(tmp_path)]) == 2
    assert (
        capsys.readouterr().err.strip()
        == f"evalctl: {tmp_path}: not an evalctl run directory (no readable run.json)"
    )
    assert list(tmp_path.iterdir()) == []


def test_rescore_with_a_session_it_cannot_read_or_a_missing_result_does_not_exit_0(
    tmp_path: Path, capsys: Any
) -> None:
    # before: both rescores exited 0: one kept a stale verdict it could not score again
    # ("scoring failed for ...: UnicodeDecodeError"), the other summed a run whose results were missing
    out = tmp_path / "run"
    assert _run(out) == 0
    (out / LATE / "transcript.jsonl").write_bytes(b'{"role": "user", "content": "\xff"}\n')
    capsys.readouterr()
    assert main(["rescore", str(out)]) == 3
    err = capsys.readouterr().err
    assert f"scoring failed for {LATE}#1: ValueError: transcript.jsonl: not UTF-8 text" in err
    assert "1 not scored" in err
    # a killed run: no summary, and a planned result that never got a folder
    (out / "summary.json").unlink()
    shutil.rmtree(out / LATE)
    assert main(["rescore", str(out)]) == 3
    assert "1 result(s) missing" in capsys.readouterr().err
    assert json.loads((out / "summary.json").read_text())["missing"] == [LATE]
