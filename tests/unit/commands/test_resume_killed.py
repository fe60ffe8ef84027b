"""Issue 30 item 8 (the breaker): a resume killed by SIGKILL left results whose session.json named
an invocation id missing from run.json (the resume recorded itself only at its end). Now each
invocation is in run.json before its first session; here the resume dies (an exception no handler
takes, as SIGKILL would) after its sessions and before its end."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import cli
import engine.results.scoring_stage
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR


class _Killed(BaseException):
    pass


def test_resume_killed_by_sigkill_leaves_no_result_naming_a_missing_invocation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    spec = ["run", str(MOCK_SPEC_DIR), "--data-root", str(MOCK_DATA_ROOT), "--no-progress", "--workers", "1"]
    assert cli.main([*spec, "--output-dir", str(out)]) == 0
    shutil.rmtree(out / "mock__late_delivery_credit")  # one result to run again

    def killed(*args: object, **kwargs: object) -> None:
        raise _Killed

    monkeypatch.setattr(engine.results.scoring_stage, "finish_run", killed)
    with pytest.raises(_Killed):
        cli.main([*spec, "--resume", str(out)])
    capsys.readouterr()
    record = json.loads((out / "run.json").read_text(encoding="utf-8"))
    known = {inv["id"] for inv in record["invocations"]}
    named = {json.loads(p.read_text(encoding="utf-8"))["invocation"] for p in out.glob("*/session.json")}
    assert len(named) == 2 and named <= known  # the first run's and the killed resume's
    resume = [inv for inv in record["invocations"] if inv["command"] == "resume"]
    assert len(resume) == 1 and resume[0]["finished_at"] is None and resume[0]["interrupted"] is True
