"""The HTML report of the eva sample run (tests/report_helpers.py, the run behind `make screenshot`):
DB differences as `evalctl diff` prints them, eva's flow-family groups, judge verdicts and cost.
The report itself is tested on the mock shop's sample run in tests/unit/report/."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli import main
from engine.report_html import write_report
from engine.report_html.collect import GroupRate, collect
from engine.results.costs import load_prices
from tests.report_helpers import ALTERED, JUDGE_REASON, MODELLED, PRICES_YAML, blocks


def _details(page: str) -> dict[str, dict]:
    data = blocks(page)
    return {row["name"]: data[f"d-{row['i']}"] for row in data["report-index"]["rows"]}


@pytest.fixture(scope="module")
def report_file(sample_run_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample run's report with prices, written outside the run (links go back to it)."""
    prices = tmp_path_factory.mktemp("prices") / "prices.yaml"
    prices.write_text(PRICES_YAML, encoding="utf-8")
    out = tmp_path_factory.mktemp("report") / "report.html"
    write_report(sample_run_dir, out, load_prices(prices))
    return out


@pytest.fixture(scope="module")
def page(report_file: Path) -> str:
    return report_file.read_text(encoding="utf-8")


def test_db_differences_are_exactly_what_evalctl_diff_prints(page: str, sample_run_dir: Path, capsys) -> None:
    details = _details(page)
    for name, (_, _, expected_line) in ALTERED.items():
        assert main(["diff", str(sample_run_dir), name]) == 0
        printed = capsys.readouterr().out.splitlines()
        start = next(i for i, line in enumerate(printed) if line.startswith("DB differences"))
        end = next(i for i in range(start + 1, len(printed)) if not printed[i].startswith("  "))
        assert details[name]["db"] == printed[start:end]
        assert any(expected_line in line for line in details[name]["db"])
        assert details[name]["db_failed"] is True
    assert details["eva_airline__4_1_1"]["db"] == ["DB: final DB matches the expected DB"]


def test_results_are_grouped_by_eva_flow_family(sample_run_dir: Path, tmp_path: Path) -> None:
    model = collect(sample_run_dir, tmp_path / "r.html")
    assert model.grouped
    assert model.groups == [
        GroupRate("flow 1.x", 0, 3, 0),  # 1.1.3, 1.1.2 (voluntary_date_change), 1.2.1
        GroupRate("flow 2.x", 1, 0, 0),
        GroupRate("flow 3.x", 1, 0, 0),
        GroupRate("flow 4.x", 1, 0, 0),
        GroupRate("flow 5.x", 1, 1, 0),
        GroupRate("flow 6.x", 1, 0, 0),
        GroupRate("flow 7.x", 3, 0, 0),  # 7.2.8, 7.4.1, 7.2.1 (escalation_edge_case)
    ]


def test_judge_verdicts_tokens_and_cost_per_scenario(page: str) -> None:
    index = blocks(page)["report-index"]
    details = _details(page)
    assert index["priced"] is True
    for name in MODELLED:
        d = details[name]
        assert d["judge"]["model"] == "demo-judge" and d["judge"]["score"] == 0.25
        assert d["judge"]["reason"] == JUDGE_REASON and d["judge"]["passed"] is False
        assert set(d["usage"]["roles"]) == {"agent", "user", "judge"}
        assert d["usage"]["cost"] == pytest.approx(
            (4 * (1200 * 2.0 + 80 * 8.0) + 3000 * 0.4 + 150 * 1.6) / 1e6
        )
        calls = [e for e in d["chat"] if e["k"] == "tool"]
        assert calls[0]["n"] == "get_reservation" and calls[0]["ok"] is False  # ZK3FFW is not theirs
        assert calls[0]["a"] == {"confirmation_number": "ZK3FFW", "last_name": "Doe"}
    replayed = details["eva_airline__1_1_3"]
    assert replayed["judge"] is None and replayed["usage"]["cost"] == 0.0
