"""`evalctl compare` on eva_airline (issue #25 part 2): two replay runs of the 50 scenarios show
no detectable difference; a copy of one with 10 scenarios' verdicts flipped (their metrics.json
edited, the summary rebuilt) shows the difference, its interval and an exact McNemar p below 0.01,
all equal to scipy's for the same counts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import scipy.stats

import cli
from engine.results.scoring_stage import finish_run
from tests.conftest import SPEC_DIR
from tests.stats_helpers import newcombe_by_hand


@pytest.fixture(scope="module")
def two_runs(data_root: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("eva_compare")
    runs = (base / "a", base / "b")
    for out in runs:
        code = cli.main(
            ["run", str(SPEC_DIR), "--data-root", str(data_root), "--no-progress", "--output-dir", str(out)]
        )
        assert code == 0
    return runs


def _compare_json(a: Path, b: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    capsys.readouterr()
    assert cli.main(["compare", str(a), str(b), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_two_replay_runs_show_no_detectable_difference(two_runs, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = two_runs
    capsys.readouterr()
    assert cli.main(["compare", str(a), str(b)]) == 0
    text = capsys.readouterr().out
    low, high = newcombe_by_hand(50, 0, 0, 0)  # before: "+0.0 to +0.0 pt", as if certain
    assert (
        f"  overall: +0.0 pt [95% CI {100 * low:+.1f} to {100 * high:+.1f} pt], exact McNemar p = 1 "
        "(0 vs 0 discordant): " in text
    )
    assert "no detectable difference at n = 50; a difference below ~12 pt cannot be seen" in text
    body = _compare_json(a, b, capsys)
    overall = body["paired"][0]
    assert overall["name"] == "overall" and overall["scenarios"] == 50 and overall["p_value"] == 1.0
    assert overall["verdict"].startswith("no detectable difference at n = 50")


def test_ten_flipped_verdicts_are_a_real_difference(
    two_runs, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = two_runs
    flipped = tmp_path / "flipped"
    shutil.copytree(b, flipped)
    names = sorted(p.name for p in flipped.iterdir() if (p / "metrics.json").is_file())[:10]
    for name in names:
        path = flipped / name / "metrics.json"
        m = json.loads(path.read_text(encoding="utf-8"))
        m["is_successful"] = m["is_task_successful"] = False
        path.write_text(json.dumps(m, indent=2), encoding="utf-8")
    summary = finish_run(flipped, {"trials": 1})
    assert (summary.overall.passed, summary.overall.total) == (40, 50)
    wilson = scipy.stats.binomtest(40, 50).proportion_ci(0.95, method="wilson")
    written = json.loads((flipped / "summary.json").read_text(encoding="utf-8"))["overall"]["ci"]
    assert (written["low"], written["high"]) == pytest.approx((wilson.low, wilson.high), abs=1e-12)

    body = _compare_json(a, flipped, capsys)
    overall = body["paired"][0]
    p = scipy.stats.binomtest(10, 10, 0.5).pvalue
    assert overall["discordant"] == [10, 0] and overall["p_value"] == pytest.approx(p) and p < 0.01
    assert overall["difference"] == pytest.approx(-0.2) and overall["verdict"] == "worse"
    assert overall["ci"]["method"] == "newcombe"  # 40 pass in both runs, 10 only in A
    assert (overall["ci"]["low"], overall["ci"]["high"]) == pytest.approx(newcombe_by_hand(40, 10, 0, 0))
    assert overall["ci"]["high"] < 0  # the interval leaves 0 out
    capsys.readouterr()
    assert cli.main(["compare", str(a), str(flipped)]) == 0
    text = capsys.readouterr().out
    assert (
        "  overall: -20.0 pt [95% CI " in text
        and "exact McNemar p = 0.00195 (10 vs 0 discordant): worse" in text
    )
    assert "pass -> fail (10):" in text
