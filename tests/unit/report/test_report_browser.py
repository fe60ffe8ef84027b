"""The HTML report in a real headless Chromium (issue #16 §4): filters, search, a result opened
from the table and from the chart, its transcript, tool calls and DB difference shown, no console
error; a screenshot is saved under the test's tmp dir. Skips (one line) without Chromium."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.report_html import write_report
from engine.results.costs import load_prices
from tests import browser as chromium
from tests.mock_domain.sample_run import ALTERED, HOSTILE, MODELLED, PRICES_YAML, REPLAYED, hostile_run

pytestmark = pytest.mark.skipif(chromium.missing() is not None, reason=str(chromium.missing()))

FAILING = sorted([*ALTERED, *MODELLED])
ALL = (*REPLAYED, *MODELLED)
OPENED = "mock__late_delivery_credit"  # replayed with 25 dollars of credit instead of 15


@pytest.fixture(scope="module")
def driver():
    with chromium.browser() as d:
        yield d


@pytest.fixture(scope="module")
def report_file(mock_sample_run_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    prices = tmp_path_factory.mktemp("prices") / "prices.yaml"
    prices.write_text(PRICES_YAML, encoding="utf-8")
    out = mock_sample_run_dir.parent / "browser-report.html"
    write_report(mock_sample_run_dir, out, load_prices(prices))
    return out


def _visible(driver) -> list[str]:
    return driver.execute_script(
        "return [...document.querySelectorAll('#scenario-rows tr')].filter(r => !r.hidden)"
        ".map(r => r.getAttribute('data-name'))"
    )


def _select(driver, element_id: str, value: str) -> None:
    from selenium.webdriver.support.ui import Select

    Select(driver.find_element("id", element_id)).select_by_value(value)


def test_filter_search_and_open_a_result(
    driver, report_file: Path, mock_sample_run_dir: Path, tmp_path: Path
) -> None:
    chromium.open_page(driver, report_file)
    assert sorted(_visible(driver)) == sorted(ALL)
    driver.find_element("id", "f-failing").click()
    assert sorted(_visible(driver)) == FAILING
    assert driver.find_element("id", "f-count").text == f"showing {len(FAILING)} of {len(ALL)}"
    _select(driver, "f-signal", "judge_passed")
    assert sorted(_visible(driver)) == sorted(MODELLED)
    _select(driver, "f-signal", "")
    driver.find_element("id", "f-failing").click()
    _select(driver, "f-group", "record M1")
    assert sorted(_visible(driver)) == ["mock__cancel_again", "mock__cancel_by_model", "mock__cancel_order"]
    _select(driver, "f-group", "")
    driver.find_element("id", "f-search").send_keys("AGAIN")
    assert _visible(driver) == ["mock__cancel_again"]
    driver.find_element("id", "f-search").clear()
    driver.find_element("id", "f-search").send_keys(" ")  # an input event with an empty query
    assert len(_visible(driver)) == len(ALL)

    driver.find_element("css selector", f'tr[data-name="{OPENED}"]').click()
    detail = driver.find_element("id", "detail")
    assert detail.is_displayed() and OPENED in detail.find_element("tag name", "h2").text
    lines = (mock_sample_run_dir / OPENED / "transcript.jsonl").read_text(encoding="utf-8").splitlines()
    spoken = [
        e["content"] for e in map(json.loads, lines) if e["type"] == "utterance" and e["content"].strip()
    ]
    bubbles = [b.text for b in detail.find_elements("css selector", ".msg .text")]
    assert bubbles == spoken  # the whole conversation, in order
    tools = {t.text: t for t in detail.find_elements("css selector", ".tool-name")}
    assert {"get_order", "issue_credit", "end_conversation"} <= set(tools)
    call = tools["issue_credit"].find_element(
        "xpath", "ancestor::div[contains(concat(' ', @class, ' '), ' tool ')]"
    )
    assert '"credit_amount": 25' in call.find_element("css selector", "pre.args").text
    call.find_element("css selector", "details summary").click()
    assert '"status": "success"' in call.find_element("css selector", "details pre").text
    db = [e.text for e in detail.find_elements("css selector", ".db-line")]
    diffs = [line for line in db if ": expected " in line]  # the credit and the balance
    assert len(diffs) == 2 and any(ALTERED[OPENED][2] in line for line in diffs)
    assert any("reference item 1: issue_credit(" in line for line in db)  # and why the actions fail
    assert driver.execute_script("return location.hash") == f"#r{_index(driver, OPENED)}"
    links = {a.text: a.get_attribute("href") for a in detail.find_elements("css selector", ".files a")}
    assert links["final_db.json"] == (mock_sample_run_dir / OPENED / "final_db.json").as_uri()
    shot = tmp_path / "report.png"
    assert driver.save_screenshot(str(shot)) and shot.stat().st_size > 20_000
    assert chromium.console_problems(driver) == []


def _index(driver, name: str) -> int:
    return int(driver.find_element("css selector", f'tr[data-name="{name}"]').get_attribute("data-i"))


def test_a_chart_dot_opens_its_result_with_judge_and_cost(driver, report_file: Path) -> None:
    chromium.open_page(driver, report_file)
    name = MODELLED[0]
    dot = driver.find_element("css selector", f'circle.dot[data-i="{_index(driver, name)}"]')
    # a click event on that dot itself: with session times alike, another dot may lie on top of it
    driver.execute_script("arguments[0].dispatchEvent(new MouseEvent('click', {bubbles: true}))", dot)
    detail = driver.find_element("id", "detail")
    assert name in detail.find_element("tag name", "h2").text
    text = detail.text
    assert "model demo-judge: score 0.25, passed false (threshold 0.9)" in text
    assert "never made the change the caller asked for" in text
    assert "cost of this result: $0.0136" in text
    assert chromium.console_problems(driver) == []


def test_a_link_to_a_result_opens_it(driver, report_file: Path) -> None:
    chromium.open_page(driver, report_file, "#r0")
    assert driver.find_element("id", "detail").is_displayed()
    assert driver.find_element("css selector", "#scenario-rows tr.selected").get_attribute("data-i") == "0"
    assert chromium.console_problems(driver) == []


def test_hostile_text_is_shown_not_run(driver, tmp_path: Path) -> None:
    run_dir = hostile_run(tmp_path / "run")
    out = write_report(run_dir, run_dir / "report.html").path
    chromium.open_page(driver, out, "#r0")
    assert driver.execute_script("return window.__pwned") is None
    assert (
        driver.execute_script("return document.querySelectorAll('#detail img, #detail b, #detail i').length")
        == 0
    )
    said = driver.find_elements("css selector", "#detail .msg.agent .text")
    assert any(HOSTILE.split("\u2028")[0] in s.text for s in said)
    assert "<i>tool</i>" in [t.text for t in driver.find_elements("css selector", "#detail .tool-name")]
    assert chromium.console_problems(driver) == []


def test_compare_page_opens_clean(driver, mock_sample_run_dir: Path, tmp_path: Path) -> None:
    from cli import main

    out = tmp_path / "compare.html"
    assert main(["compare", str(mock_sample_run_dir), str(mock_sample_run_dir), "--html", str(out)]) == 0
    chromium.open_page(driver, out)
    assert (
        "Comparable: the same spec, template and data hashes." in driver.find_element("id", "comparable").text
    )
    assert chromium.console_problems(driver) == []


def test_the_report_shows_each_rate_with_its_interval(
    driver, report_file: Path, mock_sample_run_dir: Path
) -> None:
    import scipy.stats

    summary = json.loads((mock_sample_run_dir / "summary.json").read_text(encoding="utf-8"))
    chromium.open_page(driver, report_file)
    ov = summary["overall"]
    ci = scipy.stats.binomtest(ov["passed"], ov["total"]).proportion_ci(0.95, method="wilson")
    detail = driver.find_element("css selector", "#headline .card .detail").text
    assert detail == f"{ov['passed']}/{ov['total']} scenarios; 95% CI {100 * ci.low:.1f}-{100 * ci.high:.1f}%"
    rows = {
        r.find_elements("tag name", "td")[0].text: [td.text for td in r.find_elements("tag name", "td")]
        for r in driver.find_elements("css selector", "#rates table.rates tbody tr")
    }
    db = summary["signals"]["db_state_match"]
    ci = scipy.stats.binomtest(db["passed"], db["total"]).proportion_ci(0.95, method="wilson")
    assert rows["db_state_match"][2] == f"95% CI {100 * ci.low:.1f}-{100 * ci.high:.1f}%"
    assert chromium.console_problems(driver) == []
