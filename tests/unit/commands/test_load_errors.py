"""``evalctl load`` with a model caller that holds its persona on the cancel scenario and breaks it
on the late-delivery one (it says order O-100 there: a caller-fidelity error), 3 callers over the
2 scenarios (each run twice: 4 sessions, 2 passed, 2 errors): the step's errors are classified by their source
as the run summary does (before: ``error:unknown``), and the table, ``load.json`` and load.html's
chart give the same denominators, errors never counted as failures (before: the chart said
``0 passed, 4 failed (0/4 sessions)`` where the table said ``0.0% (0/2)``). Real runs of the mock
shop against a scripted caller on loopback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli import main
from engine.core.records.load import LoadRecord
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR
from tests.unit.trust.test_caller_fidelity import CALLERS, CANCEL, _caller, api_key  # noqa: F401

LATE = "mock__late_delivery_credit"


def test_load_names_the_caller_and_counts_alike(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "load"
    with _caller(CALLERS["behaves"], []) as server:
        code = main(
            [
                "load",
                str(MOCK_SPEC_DIR),
                "--data-root",
                str(MOCK_DATA_ROOT),
                "--scenarios",
                f"{CANCEL},{LATE}",
                "--user",
                "openai:caller",
                "--base-url",
                server.base_url,
                "--ramp",
                "3",
                "--output-dir",
                str(out),
            ]
        )
    assert code == 0
    printed = capsys.readouterr().out
    (step,) = LoadRecord.from_json(json.loads((out / "load.json").read_text())).steps
    assert (step.sessions, step.passed, step.failed, step.errors) == (4, 2, 0, 2)
    assert step.errors_by_cause == {"error:user_simulator": 2}  # before: error:unknown
    assert step.rate == 1.0 and step.rate_scenarios == 1 and step.ci is not None
    row = printed.splitlines()[1]
    assert "100.0% (2/2 sessions)" in row and "(1 scenario)" in row
    assert "error:user_simulator (caller simulator) 2" in row and "unknown" not in row
    html = (out / "load.html").read_text()
    # the chart: the table's rate and denominator; the errors apart, never as failures
    assert "3 callers: 2 passed, 0 failed, 2 without a verdict (errors) (of 4 sessions)" in html
    assert "100.0%  (2/2 sessions)" in html


def test_load_help_says_a_step_runs_whole_rounds(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["load", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "4 callers over 3 scenarios run 6 sessions" in text and "errors left out, never failures" in text
    assert "every one of them runs equally often" in text and "says which it left out" in text
