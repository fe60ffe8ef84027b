"""The mock shop domain end to end: `evalctl run` with replay sides and a scripted judge on
loopback (real openai client), exercising db_state_assertion, is_action_match, nl_assertion and
judge_passed through the real runner, scoring and artifacts."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

import engine.run.runner as runner
from cli import main
from engine.domains.registry import plugins
from engine.spec.index import whole_index
from engine.spec.loader import LoadedDomain, load_domain
from tests.mock_domain.judge_server import scripted_judge
from tests.runtime_helpers import alter_gold_call

MOCK = Path(__file__).resolve().parents[2] / "mock_domain"
SPEC, DATA = MOCK / "spec", MOCK / "dataroot"
JUDGE_OK = {
    "score": 1.0,
    "reason": "handled well",
    "nl_assertion_verdicts": [
        {"index": 1, "passed": True, "reason": ""},
        {"index": 2, "passed": True, "reason": ""},
    ],
}


@pytest.fixture(scope="module", autouse=True)
def judge_key():
    """The scripted judge needs no key, but a configured judge must name a set key variable."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPENAI_API_KEY", "local-judge")
        yield


def _run(out: Path, url: str, *extra: str) -> int:
    return main(
        [
            "run",
            str(SPEC),
            "--data-root",
            str(DATA),
            "--output-dir",
            str(out),
            "--no-progress",
            "--judge-model",
            "judge-1",
            "--judge-base-url",
            url,
            *extra,
        ]
    )


def _metrics(run_dir: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in run_dir.glob("*/metrics.json")}


@pytest.fixture(scope="module")
def gold_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("mock") / "gold"
    with scripted_judge([JUDGE_OK]) as (url, server):
        assert _run(out, url) == 0
    assert len(server.requests) == 3  # one judge call per scenario
    return out


def test_gold_run_passes_every_signal(gold_run):
    m = _metrics(gold_run)
    assert {n: x["is_successful"] for n, x in m.items()} == {
        "mock__cancel_order": True,
        "mock__late_delivery_credit": True,
        "mock__shipped_refusal": True,
    }
    cancel, late, shipped = (
        m["mock__cancel_order"],
        m["mock__late_delivery_credit"],
        m["mock__shipped_refusal"],
    )
    assert cancel["db_state_assertion_pass_rate"] == 1.0 and cancel["is_action_match"] is True
    assert [v["actual"] for v in cancel["db_state_assertion_verdicts"]] == ["cancelled", 0.0]
    assert cancel["success_breakdown"]["passed"] == ["db_state_assertion", "is_action_match", "clean_exit"]
    # "late delivery." matches "Late delivery" under the scenario's text options; 15 == 15.0
    assert late["is_action_match"] is True and late["db_state_match"] is True
    assert (
        late["judge_passed"] is True and late["judge_score"] == 1.0 and late["nl_assertion_pass_rate"] == 1.0
    )
    assert late["usage"]["judge"]["model"] == "judge-1"
    assert (
        shipped["is_action_match"] is True and "is_action_match" in shipped["success_breakdown"]["excluded"]
    )
    judge = json.loads((gold_run / "mock__late_delivery_credit" / "judge_result.json").read_text())
    assert "2. The agent told the caller how much credit was added." in judge["judge_input"]


def test_gold_run_summary_units(gold_run):
    text = (gold_run / "all_summary.txt").read_text()
    assert "Overall Success Rate: 100.0% (3/3 scenarios; 0 errors)" in text
    assert "db_state_assertion: 100.0% (2/2 predicates) [95% CI" in text
    assert "nl_assertion: 100.0% (2/2 assertions) [95% CI" in text
    assert "judge (judge-1): 300 prompt + 60 completion tokens, 3 calls" in text


def _alter(scenario, tool, params):
    trace = alter_gold_call(scenario.gold_trace, tool, lambda step: replace(step, arguments=params))
    return replace(scenario, gold_trace=trace)


@pytest.fixture(scope="module")
def wrong_run(tmp_path_factory):
    loaded = load_domain(SPEC, DATA, plugins=plugins())
    by = {s.name: s for s in loaded.scenarios}
    altered = (
        _alter(by["mock__cancel_order"], "cancel_order", {"order_id": "O-101"}),
        _alter(
            by["mock__late_delivery_credit"],
            "issue_credit",
            {"customer_id": "C-2", "credit_amount": 15, "reason": "goodwill"},
        ),
        by["mock__shipped_refusal"],
    )
    out = tmp_path_factory.mktemp("mock") / "wrong"
    low = {
        **JUDGE_OK,
        "score": 0.5,
        "nl_assertion_verdicts": [{"index": 1, "passed": True}, {"index": 2, "passed": False}],
    }
    mp = pytest.MonkeyPatch()
    mp.setattr(runner, "index_domain", lambda *a, **k: whole_index(LoadedDomain(loaded.domain, altered)))
    try:
        with scripted_judge([low]) as (url, _):
            assert _run(out, url, "--allow-gold-mismatch") == 0  # exits 0 whatever the scores
    finally:
        mp.undo()
    return out


def test_wrong_actions_fail_their_signals(wrong_run):
    m = _metrics(wrong_run)
    cancel, late = m["mock__cancel_order"], m["mock__late_delivery_credit"]
    assert cancel["is_action_match"] is False and cancel["db_state_assertion_pass_rate"] == 0.5
    (bad,) = [v for v in cancel["db_state_assertion_verdicts"] if not v["passed"]]
    assert bad["func_name"] == "order_status" and bad["actual"] == "placed"
    assert late["is_action_match"] is False  # reason "goodwill" is not "Late delivery"
    assert (
        late["db_state_match"] is False
        and late["judge_passed"] is False
        and late["nl_assertion_pass_rate"] == 0.5
    )
    assert late["success_breakdown"]["failed"] == [
        "db_state_match",
        "is_action_match",
        "judge_passed",
        "nl_assertion",
    ]
    assert m["mock__shipped_refusal"]["is_successful"] is True


def test_fail_under_gates_the_exit_code(wrong_run, tmp_path, capsys):
    loaded = load_domain(SPEC, DATA, plugins=plugins())
    with scripted_judge([JUDGE_OK]) as (url, _):
        assert _run(tmp_path / "a", url, "--scenarios", "mock__shipped_refusal", "--fail-under", "1.0") == 0
    capsys.readouterr()
    with scripted_judge([{**JUDGE_OK, "score": 0.1}]) as (url, _):
        assert (
            _run(tmp_path / "b", url, "--scenarios", "mock__late_delivery_credit", "--fail-under", "0.5") == 1
        )
    assert "evalctl: strict success rate 0.0% is below --fail-under 50.0%" in capsys.readouterr().err
    with scripted_judge([{**JUDGE_OK, "score": 0.1}]) as (url, _):
        assert (
            _run(
                tmp_path / "c",
                url,
                "--scenarios",
                "mock__late_delivery_credit",
                "--fail-under",
                "0.5",
                "--judge-threshold",
                "0.1",
            )
            == 0
        )
    late = json.loads((tmp_path / "c" / "mock__late_delivery_credit" / "metrics.json").read_text())
    assert late["judge_passed"] is True and late["judge_score"] == 0.1
    assert loaded.names  # the spec still loads after the runs


def test_diff_explains_mock_failures(wrong_run, capsys):
    assert main(["diff", str(wrong_run)]) == 0
    out = capsys.readouterr().out
    assert "== mock__cancel_order: FAIL" in out
    assert "failing signals: db_state_assertion, is_action_match" in out
    assert "assertion order_status({'order_id': 'O-100'}) [agent]: expected 'cancelled', got 'placed'" in out
    assert "credits[0].reason: expected 'late delivery.', got 'goodwill'" in out
    assert "judge: score 0.5, passed False" in out
    # which reference item no action satisfies (before: only the actions were listed)
    assert 'is_action_match: no action matches\n  reference item 1: cancel_order(order_id="O-100")' in out


def test_unknown_predicate_is_a_validation_error_before_any_run(tmp_path, capsys):
    import shutil

    spec = tmp_path / "spec"
    shutil.copytree(SPEC, spec)
    path = spec / "scenarios" / "cancel.yaml"
    path.write_text(path.read_text().replace("func_name: order_status", "func_name: order_state"))
    out = tmp_path / "never"
    assert main(["run", str(spec), "--data-root", str(DATA), "--output-dir", str(out), "--no-progress"]) != 0
    err = capsys.readouterr().err
    assert "order_state" in err and "cancel.yaml" in err and "Traceback" not in err
    assert not out.exists() or not any(out.iterdir())


def test_html_report_explains_mock_failures_as_diff_does(wrong_run, tmp_path):
    from engine.report_html import write_report
    from tests.report_helpers import blocks

    data = blocks(write_report(wrong_run, tmp_path / "r.html").path.read_text(encoding="utf-8"))
    row = next(r for r in data["report-index"]["rows"] if r["name"] == "mock__cancel_order")
    detail = data[f"d-{row['i']}"]
    assert detail["unmatched"] == ['reference item 1: cancel_order(order_id="O-100")']
    said = "assertion order_status({'order_id': 'O-100'}) [agent]: expected 'cancelled', got 'placed'"
    assert said in detail["db"]
    assert row["group"] == "mock" and set(row["failed"]) == {"db_state_assertion", "is_action_match"}
