"""The headline rate needs a verdict-bearing result (engine/scoring/summary.py): a run in which no
result measured a gating signal other than ``clean_exit`` (qa scored without a judge) shows the
overall rate as not applicable, with the reason, in ``summary.json``, ``all_summary.txt``, the
report table and the HTML headline; a run with one such result keeps its rate."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from rich.console import Console

from engine.commands.report import report
from engine.core.records.metrics import Breakdown, Usage
from engine.scoring.summary import build_summary, headline_not_applicable, render_summary_text
from tests.record_helpers import metrics_row

NO_JUDGE = {"judge_passed": None, "db_state_match": None}


def _clean_exit_only(name: str, trial: int = 1, clean: bool = True):
    """A qa-like result without a judge: judge_passed not applicable, clean_exit alone measured."""
    row = metrics_row(name, trial, clean, signals={**NO_JUDGE, "clean_exit": clean})
    breakdown = Breakdown(
        ("clean_exit",) if clean else (), () if clean else ("clean_exit",), ("judge_passed",), ()
    )
    return replace(
        row,
        is_task_successful="N/A",
        success_signals=("judge_passed", "clean_exit"),
        success_breakdown=breakdown,
    )


def test_no_verdict_bearing_result_makes_the_headline_not_applicable(tmp_path: Path) -> None:
    rows = [_clean_exit_only("qa__a"), _clean_exit_only("qa__b"), _clean_exit_only("qa__c", clean=False)]
    summary = build_summary(rows, {})
    assert summary.overall.to_json() == {
        "passed": 0, "failed": 0, "not_applicable": 3, "errors": 0, "total": 0, "rate": None, "ci": None
    }  # fmt: skip
    why = headline_not_applicable(summary)
    assert why == (
        "no verdict-bearing signal was measured (judge_passed needs a judge: --judge-model); "
        "clean_exit alone is no verdict"
    )
    text = render_summary_text(summary)
    assert f"Overall Success Rate: n/a (0/0 scenarios; 3 N/A; 0 errors): {why}\n" in text, text
    assert [f.scenario for f in summary.failed] == ["qa__c"]  # the per-result verdicts stay
    (tmp_path / "summary.json").write_text(json.dumps(summary.to_json()), encoding="utf-8")
    console = Console(record=True, width=100, soft_wrap=True)
    assert report(tmp_path, console) == 0
    assert f"\noverall success not applicable: {why}\n" in console.export_text()


def test_trials_without_a_verdict_bearing_result_have_no_pass_hat_k() -> None:
    rows = [_clean_exit_only("qa__a", t) for t in (1, 2)]
    summary = build_summary(rows, {"trials": 2})
    assert summary.pass_hat_k is not None and dict(summary.pass_hat_k.overall) == {}
    assert "pass^k over 2 trials: n/a (no trial had a verdict)" in render_summary_text(summary)


def test_a_judged_run_names_the_signals_not_applicable_without_asking_for_a_judge() -> None:
    row = replace(_clean_exit_only("qa__a"), usage={"judge": Usage("j", 10, 1, 1)})
    why = headline_not_applicable(build_summary([row], {}))
    assert why == (
        "no verdict-bearing signal was measured (judge_passed not applicable); clean_exit alone is no verdict"
    )


def test_one_verdict_bearing_result_keeps_the_rate() -> None:
    judged = replace(
        _clean_exit_only("qa__b"), is_task_successful=True, signals=_clean_exit_only("qa__b").signals
    )
    judged = replace(judged, signals=replace(judged.signals, judge_passed=True, judge_score=1.0))
    summary = build_summary([_clean_exit_only("qa__a"), judged], {})
    assert (summary.overall.passed, summary.overall.total, summary.overall.rate) == (2, 2, 1.0)
    assert headline_not_applicable(summary) is None
    headline = "Overall Success Rate: 100.0% (2/2 scenarios; 0 errors) [95% CI 34.2-100.0%]\n"
    assert headline in render_summary_text(summary)


def test_a_db_gated_run_is_unchanged() -> None:
    rows = [metrics_row("eva_1"), metrics_row("eva_2", is_successful=False, failed=("db_state_match",))]
    summary = build_summary(rows, {})
    assert (summary.overall.passed, summary.overall.total, summary.overall.rate) == (1, 2, 0.5)
    assert headline_not_applicable(summary) is None
