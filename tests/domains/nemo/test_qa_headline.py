"""qa scored without a judge on the real data (`evalctl run specs/qa`, built-in replay sides, no
``--judge-model``): ``judge_passed`` is not applicable, ``clean_exit`` is all that is measured, so
the headline rate is not applicable, with the reason, instead of 100%; the per-result verdicts
are unchanged (engine/scoring/summary.py, ``headline_not_applicable``)."""

from __future__ import annotations

import json
from pathlib import Path

from cli import main
from engine.results.scoring_stage import load_run_metrics, load_summary
from tests.domains.nemo.helpers import REPO, data_root, release_records

WHY = (
    "no verdict-bearing signal was measured (judge_passed needs a judge: --judge-model); "
    "clean_exit alone is no verdict"
)


def test_qa_without_a_judge_has_no_headline_rate(tmp_path: Path, capsys) -> None:
    out = tmp_path / "qa"
    spec = str(REPO / "specs" / "qa")
    code = main(["run", spec, "--data-root", str(data_root()), "--output-dir", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    qa = [r for r in release_records().values() if r["module"] in ("qa", "simple_qa")]
    line = f"Overall Success Rate: n/a (0/0 scenarios; {len(qa)} N/A; 0 errors): {WHY}"
    assert line in printed.splitlines(), printed
    assert line in (out / "all_summary.txt").read_text(encoding="utf-8").splitlines()
    summary = load_summary(out)
    assert (summary.overall.rate, summary.overall.not_applicable, summary.task.total) == (None, len(qa), 0)
    assert summary.signals["judge_passed"].total == 0 and summary.signals["clean_exit"].passed == len(qa)
    rows = load_run_metrics(out)
    assert len(rows) == len(qa) and all(m.is_successful is True for m in rows)  # verdicts unchanged
    assert all(m.signals.judge_passed is None and m.signals.clean_exit is True for m in rows)
    assert main(["report", str(out), "--html", str(tmp_path / "r.html")]) == 0
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert f"Overall success is not applicable: {WHY}." in page
    assert json.loads((out / "summary.json").read_text(encoding="utf-8"))["overall"]["rate"] is None
