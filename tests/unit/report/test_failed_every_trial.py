"""Issue 30 item 5: ``report --failed-every-trial`` (text and HTML) shows only the scenarios that
failed in every trial with a verdict, as pass^k counts them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import cli
from engine.scoring.passk import failed_every_trial
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR

ALWAYS, ONCE, NEVER = "mock__cancel_order", "mock__late_delivery_credit", "mock__shipped_refusal"


def test_failed_every_trial_leaves_out_trials_without_a_verdict() -> None:
    outcomes: dict[str, list[bool | str]] = {
        "always": [False, False],
        "once": [False, True],
        "err_then_fail": ["error", False],
        "only_errors": ["error", "error"],
        "na": ["N/A"],
        "passes": [True, True],
    }
    assert failed_every_trial(outcomes) == ("always", "err_then_fail")


def _break_db(trial_dir: Path) -> None:
    """A final DB with one customer fewer: db_state_match (or its assertions) fail on rescore."""
    path = trial_dir / "final_db.json"
    db = json.loads(path.read_text(encoding="utf-8"))
    db["customers"].pop("C-1")
    db["orders"] = {}
    path.write_text(json.dumps(db), encoding="utf-8")


@pytest.fixture(scope="module")
def mixed_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-trial mock run: ALWAYS fails both trials, ONCE one of two, NEVER passes both."""
    out = tmp_path_factory.mktemp("fet") / "run"
    spec = ["run", str(MOCK_SPEC_DIR), "--data-root", str(MOCK_DATA_ROOT), "--output-dir", str(out)]
    assert cli.main([*spec, "--no-progress", "--trials", "2", "--workers", "1"]) == 0
    for trial_dir in (out / ALWAYS / "trial_1", out / ALWAYS / "trial_2", out / ONCE / "trial_1"):
        _break_db(trial_dir)
    assert cli.main(["rescore", str(out)]) in (0, 1)
    return out


def test_failed_every_trial_report_lists_only_those(
    mixed_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert cli.main(["report", str(mixed_run)]) == 0
    full = capsys.readouterr().out
    assert f"{ONCE} trial 1" in full and f"{ALWAYS} trial 2" in full  # the usual list: every failure
    assert cli.main(["report", str(mixed_run), "--failed-every-trial"]) == 0
    text = capsys.readouterr().out
    listed = text[text.index("Failed in every trial") :]
    assert listed.startswith("Failed in every trial (all 2 trials): 1 of 3 scenarios\n")
    assert f"  {ALWAYS}: db_state_assertion" in listed
    assert ONCE not in listed and NEVER not in listed and "Not successful" not in text


def test_failed_every_trial_html_shows_only_those(
    mixed_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "r.html"
    assert cli.main(["report", str(mixed_run), "--html", str(page), "--failed-every-trial"]) == 0
    assert "(2 results," in capsys.readouterr().out
    html = page.read_text(encoding="utf-8")
    assert "only the 1 of 3 scenarios that failed in every trial" in html
    assert ALWAYS in html and ONCE not in html and NEVER not in html
