"""`evalctl compare RUN_A RUN_B` (issue #16 §2): flipped verdicts both ways, per-signal rate
changes, and whether the runs are comparable — on real runs of the real data."""

from __future__ import annotations

import html
import json
import shutil
from pathlib import Path

import pytest

from cli import main
from engine.compare import compare_runs, render_text
from engine.runner import run_cli
from tests.conftest import SPEC_DIR
from tests.report_helpers import ALTERED, MODELLED, REPLAYED
from tests.runtime_helpers import run_options

FAILING = sorted([*ALTERED, *MODELLED])


def _replay_run(
    out: Path, data_root: Path, spec_dir: Path = SPEC_DIR, scenarios=(*REPLAYED, *MODELLED)
) -> Path:
    report = run_cli(
        run_options(
            spec_dir=spec_dir,
            data_root=data_root,
            scenarios=scenarios,
            output_dir=out,
            concurrency=4,
            quiet=True,
        )
    )
    assert not report.scoring_errors
    return out


@pytest.fixture(scope="module")
def clean_run(data_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample run's twelve scenarios with the gold replayed as is: every one passes."""
    return _replay_run(tmp_path_factory.mktemp("clean") / "run", data_root)


def test_flips_both_ways_and_rate_changes(clean_run: Path, sample_run_dir: Path) -> None:
    worse = compare_runs(clean_run, sample_run_dir)
    assert worse.comparable, worse.differences
    assert [c.scenario for c in worse.pass_to_fail] == FAILING
    assert all(c.failed_after == ("db_state_match",) for c in worse.pass_to_fail)
    assert worse.fail_to_pass == () and (worse.unchanged_pass, worse.unchanged_fail) == (8, 0)
    db = next(r for r in worse.signals if r.name == "db_state_match")
    assert (db.before.passed, db.before.total, db.after.passed, db.after.total) == (12, 12, 8, 12)
    assert db.delta == pytest.approx(8 / 12 - 1)
    better = compare_runs(sample_run_dir, clean_run)
    assert [c.scenario for c in better.fail_to_pass] == FAILING and better.pass_to_fail == ()
    text = render_text(worse)
    assert "comparable: yes (same spec, template and data hashes)" in text
    assert "  db_state_match: 100.0% (12/12 scenarios) -> 66.7% (8/12 scenarios)  -33.3 pt" in text
    assert "pass -> fail (4):\n  eva_airline__1_1_3  [db_state_match]\n" in text
    assert "fail -> pass: none" in text
    # the model agent and the judge of the sample run: tokens per role, A -> B
    assert "  judge: - -> 6000+300" in text


def test_a_changed_spec_makes_runs_incomparable_and_is_named(
    clean_run: Path, data_root: Path, tmp_path: Path
) -> None:
    spec = tmp_path / "eva_airline"
    shutil.copytree(SPEC_DIR, spec)
    scenario = spec / "scenarios" / "4.1.1.yaml"
    scenario.write_text(scenario.read_text(encoding="utf-8").replace("description:", "description: (edited)"))
    (spec / "scenarios" / "7.4.1.yaml").unlink()
    other = _replay_run(tmp_path / "run", data_root, spec, ("eva_airline__4_1_1", "eva_airline__2_2_2"))
    c = compare_runs(clean_run, other)
    assert not c.comparable
    assert [(d.kind, d.path, d.change) for d in c.differences] == [
        ("spec", "scenarios/4.1.1.yaml", "changed"),
        ("spec", "scenarios/7.4.1.yaml", "only in A"),
    ]
    assert len(c.only_in_a) == 10 and c.only_in_b == ()
    assert any("each rate is over its own run's results" in n for n in c.notes)
    assert "comparable: NO (2 input files differ)\n  spec scenarios/4.1.1.yaml: changed" in render_text(c)


def test_json_and_html_outputs(clean_run: Path, sample_run_dir: Path, tmp_path: Path, capsys) -> None:
    assert main(["compare", str(clean_run), str(sample_run_dir), "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["comparable"] is True
    assert [c["scenario"] for c in body["pass_to_fail"]] == FAILING
    assert body["usage_b"]["roles"]["judge"]["prompt_tokens"] == 6000
    out = tmp_path / "c.html"
    assert main(["compare", str(clean_run), str(sample_run_dir), "--html", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    assert "<script" not in page and "script-src 'none'" in html.unescape(page)
    assert all(name in page for name in FAILING)
    assert main(["compare", str(clean_run), str(tmp_path)]) == 2
    assert "no scored scenarios" in capsys.readouterr().err
