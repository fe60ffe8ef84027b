"""``--junit`` and ``report --markdown`` on the mock shop's sample run, with one result turned into
an ``error`` verdict and one planned result removed (missing): the JUnit file read back by a real
JUnit consumer (junitparser) and checked against the layout pytest's own ``--junitxml`` writes
(its junit-10 schema: suite and case attributes, one result element per case)."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from junitparser import Error, Failure, JUnitXml, Skipped

import cli
from engine.results.diff import diff_run
from engine.results.junit import first_cause, write_junit
from engine.results.markdown import markdown_summary
from engine.results.provenance import read_run_record
from engine.results.scoring_stage import finish_run

ERRORED = "mock__shipped_refusal"
MISSING = "mock__late_by_model"


@pytest.fixture(scope="module")
def ci_run(mock_sample_run_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("ci") / "run"
    shutil.copytree(mock_sample_run_dir, run)
    for path in run.rglob("metrics.json"):
        body = json.loads(path.read_text(encoding="utf-8"))
        if body["scenario_name"] == ERRORED:
            body["is_successful"] = body["is_task_successful"] = "error"
            body["error_cause"] = {"source": "user_simulator", "message": "simulator model: HTTP 503"}
            path.write_text(json.dumps(body), encoding="utf-8")
        elif body["scenario_name"] == MISSING:
            path.unlink()
    record = read_run_record(run)
    assert record is not None
    info = {"spec_dir": record.spec_dir, "data_root": record.data_root, "scenarios": list(record.scenarios)}
    finish_run(run, info)  # the summary of the results as they now are
    return run


def test_junit_round_trip(ci_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "junit.xml"
    assert cli.main(["report", str(ci_run), "--junit", str(out)]) == 0
    xml = JUnitXml.fromfile(str(out))
    (suite,) = list(xml)
    cases = {case.name: case for case in suite}
    assert len(cases) == suite.tests == xml.tests == 6
    kinds = {name: [type(r) for r in case.result] for name, case in cases.items()}
    assert kinds[ERRORED] == [Error]
    assert kinds[MISSING] == [Skipped]
    failed = {d.scenario: d for d in diff_run(ci_run) if not d.error_cause}
    assert failed and {n for n, k in kinds.items() if k == [Failure]} == set(failed)
    assert {n for n, k in kinds.items() if not k} == set(cases) - set(failed) - {ERRORED, MISSING}
    for name, d in failed.items():
        (result,) = cases[name].result
        assert result.message == first_cause(d)
        assert f"== {name}: FAIL" in result.text
    altered = cases["mock__cancel_order"].result[0].message
    cause = "orders.O-100.status: expected 'cancelled', got 'placed'"
    assert altered == f"db_state_assertion, is_action_match: {cause}"
    assert cases[ERRORED].result[0].message == (
        "no verdict, the caller simulator failed: user_simulator: simulator model: HTTP 503"
    )
    assert (suite.failures, suite.errors, suite.skipped) == (len(failed), 1, 1)
    assert all(case.classname == "mock" for n, case in cases.items() if n != MISSING)


def test_junit_has_pytests_layout(ci_run: Path, tmp_path: Path) -> None:
    """What pytest's junit-10.xsd requires of what pytest writes: <testsuites> holding <testsuite>
    with name, integer tests/failures/errors/skipped and a float time; each <testcase> with
    classname, name, time, and at most one of failure/error/skipped, each with a message."""
    counts = write_junit(ci_run, tmp_path / "j.xml")
    root = ET.parse(tmp_path / "j.xml").getroot()
    assert root.tag == "testsuites"
    (suite,) = root
    record = read_run_record(ci_run)
    assert record is not None and record.spec_dir
    assert suite.tag == "testsuite" and suite.get("name") == Path(record.spec_dir).name
    for attr in ("tests", "failures", "errors", "skipped"):
        assert int(suite.get(attr, "x")) == getattr(counts, attr)
    float(suite.get("time", "x"))
    tally = {"failure": 0, "error": 0, "skipped": 0}
    for case in suite:
        assert case.tag == "testcase"
        assert case.get("classname") and case.get("name")
        float(case.get("time", "x"))
        assert len(case) <= 1
        for child in case:
            assert child.tag in tally and child.get("message")
            tally[child.tag] += 1
    assert (tally["failure"], tally["error"], tally["skipped"]) == (
        counts.failures,
        counts.errors,
        counts.skipped,
    )
    assert len(suite) == counts.tests


def test_markdown_summary(ci_run: Path, mock_sample_run_dir: Path) -> None:
    text = markdown_summary(ci_run, baseline=mock_sample_run_dir)
    assert text.startswith("### evalctl: ")
    assert "| Strict success (errors count as failures) | " in text
    assert "[95% CI " in text and "errors" in text
    assert "**Against the baseline**" in text and f"`{ERRORED}`" in text
    assert "**Top failure causes**" in text and "- `db_state_match`: " in text
    assert "- `error: user_simulator`: 1" in text
    plain = markdown_summary(ci_run)
    assert "baseline" not in plain


def test_report_markdown_cli(ci_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["report", str(ci_run), "--markdown"]) == 0
    assert capsys.readouterr().out.startswith("### evalctl: ")
    assert cli.main(["report", str(ci_run), "--baseline", str(ci_run)]) == 2
    assert "--baseline goes with --markdown" in capsys.readouterr().err


def test_markdown_baseline_with_another_agent_says_so_and_lists_no_old_failures(
    mock_sample_run_dir: Path, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    shutil.copytree(mock_sample_run_dir, run)
    body = json.loads((run / "run.json").read_text(encoding="utf-8"))
    before_agent = body["settings"]["agent"]
    body["settings"]["agent"] = "openai:another-model"
    (run / "run.json").write_text(json.dumps(body), encoding="utf-8")
    fixed = None
    for path in sorted(run.rglob("metrics.json")):
        m = json.loads(path.read_text(encoding="utf-8"))
        if m["is_successful"] is False and m["success_breakdown"]["failed"]:
            fixed = m["scenario_name"], list(m["success_breakdown"]["failed"])
            m["is_successful"] = m["is_task_successful"] = True
            m["success_breakdown"]["failed"] = []
            path.write_text(json.dumps(m), encoding="utf-8")
            break
    assert fixed is not None
    record = read_run_record(run)
    assert record is not None
    finish_run(
        run, {"spec_dir": record.spec_dir, "data_root": record.data_root, "scenarios": list(record.scenarios)}
    )
    text = markdown_summary(run, baseline=mock_sample_run_dir)
    assert f"agent: A {before_agent}, B openai:another-model" in text  # compare's own note
    (row,) = [line for line in text.splitlines() if line.startswith(f"| `{fixed[0]}`")]
    assert row == f"| `{fixed[0]}` | fail → pass | - |"  # before: the signals it failed in the baseline
