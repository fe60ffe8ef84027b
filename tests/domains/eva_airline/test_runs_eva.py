"""`evalctl run` on eva's 50 scenarios: choosing scenarios by name and domain prefix, and the
stalled threshold of a gold conversation shorter than three agent turns (5.1.5). Moved from
tests/unit/commands/test_runner.py, which tests the same on the mock shop."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import cli
from engine.domains.registry import plugins
from engine.results.rundir import select_scenarios
from engine.spec.loader import load_domain
from engine.util.errors import UsageError
from tests.conftest import SPEC_DIR


def test_select_scenarios(data_root: Path) -> None:
    scenarios = load_domain(SPEC_DIR, data_root, plugins=plugins()).scenarios
    assert len(select_scenarios(scenarios, (), None)) == 50
    picked = select_scenarios(scenarios, ("eva_airline__7_2_8", "eva_airline__3_1_5"), None)
    assert [s.name for s in picked] == ["eva_airline__7_2_8", "eva_airline__3_1_5"]
    assert {s.name for s in select_scenarios(scenarios, (), "eva_airline__7_2")} == {
        f"eva_airline__7_2_{k}" for k in (2, 5, 6, 8, 9)
    }
    with pytest.raises(UsageError, match=r"no scenario named 'eva_airline__3_1_6' \(did you mean"):
        select_scenarios(scenarios, ("eva_airline__3_1_6",), None)
    with pytest.raises(UsageError, match="no scenario matches --domain 'tau2_'"):
        select_scenarios(scenarios, (), "tau2_")


def test_run_verb_prints_the_summary_and_honours_fail_under(
    data_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # piped with no $COLUMNS (a pytest-xdist worker has COLUMNS=80 in its environment)
    monkeypatch.delenv("COLUMNS", raising=False)
    base = ["run", str(SPEC_DIR), "--data-root", str(data_root), "--no-progress", "--fail-under", "1"]
    ok = cli.main([*base, "--scenarios", "eva_airline__3_1_5", "--output-dir", str(tmp_path / "a")])
    out = capsys.readouterr().out
    assert ok == 0
    assert (
        "Overall Success Rate: 100.0% (1/1 scenarios; 0 errors)" in out
        and f"results: {tmp_path / 'a'}" in out
    )
    # piped (as here), the table is wide enough for eva's longest row: rich's 80 columns wrapped it
    rows = [line.split("│")[1].strip() for line in out.splitlines() if line.startswith("│")]
    assert "internal_ids_spoken (clean; 0 found)" in rows and "" not in rows
    # 5.1.5's gold conversation has two agent turns: the stalled threshold is min(3, 2), so it passes
    assert cli.main([*base, "--scenarios", "eva_airline__5_1_5", "--output-dir", str(tmp_path / "b")]) == 0
    metrics = json.loads((tmp_path / "b" / "eva_airline__5_1_5" / "metrics.json").read_text())
    assert metrics["min_agent_turns"] == 2 and metrics["stalled"] is False and metrics["agent_turns"] == 2
