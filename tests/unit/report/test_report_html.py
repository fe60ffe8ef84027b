"""`evalctl report RUN_DIR --html` (issue #16 §1), read as a file: self-contained, the DB
differences exactly as `evalctl diff` prints them, groups, judge verdicts, cost, escaping and
bounds. test_report_browser.py opens the same pages in Chromium."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
import shutil
from pathlib import Path

import pytest

from cli import main
from engine.core.grouping import GroupRule, parse_rule
from engine.domains.registry import plugins
from engine.report_html import write_report
from engine.report_html.collect import GroupRate, collect
from engine.report_html.transcript import ELIDED, ITEM_MAX, MAX_LINES, Budget, chat_entries
from engine.results.costs import load_prices
from engine.spec.loader import load_domain
from engine.util.errors import SpecError
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR
from tests.mock_domain.sample_run import (
    ALTERED,
    BIG_SAY,
    HOSTILE_TOOL,
    JUDGE_REASON,
    MODELLED,
    NOT_THEIRS,
    PRICES_YAML,
    REPLAYED,
    blocks,
    hostile_run,
)


def _details(page: str) -> dict[str, dict]:
    data = blocks(page)
    return {row["name"]: data[f"d-{row['i']}"] for row in data["report-index"]["rows"]}


@pytest.fixture(scope="module")
def report_file(mock_sample_run_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample run's report with prices, written outside the run (links go back to it)."""
    prices = tmp_path_factory.mktemp("prices") / "prices.yaml"
    prices.write_text(PRICES_YAML, encoding="utf-8")
    out = tmp_path_factory.mktemp("report") / "report.html"
    write_report(mock_sample_run_dir, out, load_prices(prices))
    return out


@pytest.fixture(scope="module")
def page(report_file: Path) -> str:
    return report_file.read_text(encoding="utf-8")


def _sha(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


def test_the_page_is_self_contained_and_runs_only_its_own_script(page: str) -> None:
    assert "<link" not in page and " src=" not in page and "@import" not in page and "url(" not in page
    csp = html.unescape(re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1))
    script = re.search(r"<script>(.*?)</script>", page, re.S).group(1)
    style = re.search(r"<style>(.*?)</style>", page, re.S).group(1)
    assert f"script-src '{_sha(script)}'" in csp and f"style-src '{_sha(style)}'" in csp
    assert "default-src 'none'" in csp  # no fetch, no frame, no font, no connection of any kind
    tags = re.findall(r"<script[^>]*>", page)
    assert len(tags) == 1 + len(blocks(page))  # the one script, then only JSON data blocks


def test_db_differences_are_exactly_what_evalctl_diff_prints(
    page: str, mock_sample_run_dir: Path, capsys
) -> None:
    details = _details(page)
    for name, (_, _, expected_line) in ALTERED.items():
        assert main(["diff", str(mock_sample_run_dir), name]) == 0
        printed = capsys.readouterr().out.splitlines()
        start = next(i for i, line in enumerate(printed) if line.startswith("DB differences"))
        # the differences, then the verdicts of failed assertions (mock__cancel_order has two)
        end = next(
            i for i in range(start + 1, len(printed)) if not printed[i].startswith(("  ", "assertion "))
        )
        assert details[name]["db"] == printed[start:end]
        assert any(expected_line in line for line in details[name]["db"])
        assert details[name]["db_failed"] is True
    assert details["mock__shipped_refusal"]["db"] == ["DB: final DB matches the expected DB"]


def test_results_are_grouped_by_the_spec_rule(mock_sample_run_dir: Path, tmp_path: Path) -> None:
    model = collect(mock_sample_run_dir, tmp_path / "r.html")
    assert model.grouped
    assert model.groups == [
        GroupRate("record M1", 1, 2, 0),  # cancel_again passes; cancel_order (altered), cancel_by_model fail
        GroupRate("record M2", 0, 2, 0),  # late_delivery_credit (altered), late_by_model
        GroupRate("record M3", 1, 0, 0),  # shipped_refusal
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
        assert calls[0]["n"] == "get_order" and calls[0]["ok"] is False  # no such order
        assert calls[0]["a"] == NOT_THEIRS
    replayed = details["mock__cancel_again"]
    assert replayed["judge"] is None and replayed["usage"]["cost"] == 0.0


def test_artifact_links_lead_to_the_run_files(
    page: str, report_file: Path, mock_sample_run_dir: Path
) -> None:
    files = dict(_details(page)["mock__cancel_again"]["files"])
    assert list(files)[:4] == ["metrics.json", "transcript.jsonl", "tool_calls.json", "actions.json"]
    for name, href in files.items():
        target = (report_file.parent / href).resolve()
        assert target.is_file() and target.name == name
        assert target.is_relative_to(mock_sample_run_dir.resolve() / "mock__cancel_again")


def test_what_a_side_sends_stays_text(tmp_path: Path) -> None:
    run_dir = hostile_run(tmp_path / "run")
    out = run_dir / "report.html"
    assert main(["report", str(run_dir), "--html"]) == 0
    page = out.read_text(encoding="utf-8")
    assert "<img" not in page and "<svg onload" not in page and "<b>" not in page and "<i>" not in page
    assert len(re.findall(r"<script[^>]*>", page)) == 1 + len(blocks(page))
    (detail,) = _details(page).values()
    said = [e["x"] for e in detail["chat"] if e["k"] == "say" and e["r"] == "agent"]
    long = next(x for x in said if isinstance(x, dict))  # the hostile text plus the long answer
    assert long[ELIDED].startswith("</script><script>window.__pwned = 1</script><img src=x")
    assert long["size"] > len(BIG_SAY) and len(long[ELIDED]) < ITEM_MAX
    tool = next(e for e in detail["chat"] if e["k"] == "tool")
    assert tool["n"] == HOSTILE_TOOL and tool["ok"] is False
    assert tool["a"] == {"q": "</script><svg onload=alert(1)>"}
    models = blocks(page)["report-index"]["rows"][0]
    assert models["name"] == "mock__shipped_refusal"
    assert "openai:&lt;b&gt;model&lt;/b&gt;" in page  # the model name in the static usage table


def test_a_transcript_is_bounded(tmp_path: Path) -> None:
    path = tmp_path / "transcript.jsonl"
    line = {"role": "agent", "type": "utterance", "content": "x" * 100, "t": 1.0}
    path.write_text(
        "\n".join(json.dumps(line) for _ in range(MAX_LINES + 5)) + "\nnot json\n", encoding="utf-8"
    )
    entries = chat_entries(path, Budget(50_000))
    said = [e for e in entries if e["k"] == "say"]
    notes = [e["x"] for e in entries if e["k"] == "note"]
    assert 50_000 / 130 < len(said) < 50_000 / 100  # whole entries until the budget ran out
    assert notes == [
        f"{MAX_LINES + 5 - len(said) + 1} more transcript entries not shown (see transcript.jsonl)"
    ]
    assert chat_entries(tmp_path / "none.jsonl", Budget(100))[0]["x"].startswith("no transcript")


def test_group_rules() -> None:
    rule = GroupRule(r"^(\d+)\.(\d+)", "flow {1}.{2}")
    assert rule.group_of("7.2.9", "x") == "flow 7.2" and rule.group_of("abc", "x") == "other"
    assert GroupRule("^[a-z]+", field="name").group_of("1.1", "mock__late") == "mock"
    assert parse_rule({"pattern": "(", "label": "x"})[1][0][0] == "pattern"
    assert parse_rule({"pattern": "^(a)", "label": "{2}"})[1] == [
        ("label", "names {2} but the pattern has 1 group")
    ]


def test_a_bad_group_rule_is_a_spec_problem_at_its_line(tmp_path: Path) -> None:
    spec = tmp_path / "mock"
    shutil.copytree(MOCK_SPEC_DIR, spec)
    domain = spec / "domain.yaml"
    text = domain.read_text(encoding="utf-8") + "report_group:\n  pattern: '^(\\d+'\n  label: 'x {1}'\n"
    domain.write_text(text, encoding="utf-8")
    line = text.splitlines().index("  pattern: '^(\\d+'") + 1
    with pytest.raises(SpecError) as err:
        load_domain(spec, MOCK_DATA_ROOT, plugins=plugins())
    assert f"domain.yaml:{line}: $.report_group.pattern: not a regular expression: missing )" in str(
        err.value
    )


def test_session_errors_and_signal_rates_are_listed(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    argv = [
        "run",
        str(MOCK_SPEC_DIR),
        "--data-root",
        str(MOCK_DATA_ROOT),
        "--scenarios",
        "mock__shipped_refusal",
    ]
    assert main([*argv, "--max-turns", "1", "--output-dir", str(run_dir), "--no-progress"]) == 0
    page = write_report(run_dir, run_dir / "report.html").path.read_text(encoding="utf-8")
    rates = page[
        page.index('<section id="rates">') : page.index("</section>", page.index('<section id="rates">'))
    ]
    assert (
        "<td>db_state_match</td><td>n/a</td><td>no interval</td><td>0/0 scenarios</td><td>gating</td>"
        in rates
    )  # stalled
    assert "<h3>Session errors</h3>" in rates
    assert "<td>mock__shipped_refusal</td><td>timeout</td><td>max turns (1 agent turns) reached</td>" in rates


def test_report_html_goes_into_the_run_by_default(mock_sample_run_dir: Path, tmp_path: Path, capsys) -> None:
    copy = tmp_path / "run"
    shutil.copytree(mock_sample_run_dir, copy)
    assert main(["report", str(copy), "--html"]) == 0
    n = len(REPLAYED) + len(MODELLED)
    assert capsys.readouterr().out.startswith(f"report: {copy / 'report.html'} ({n} results, ")
    assert (copy / "report.html").is_file()
    assert main(["report", str(tmp_path / "nothing"), "--html"]) == 2
