"""`make screenshot`: regenerate docs/report.png, the README's picture of `evalctl report --html`.

Builds the sample run (tests/report_helpers.py: real eva_airline sessions on the data root, two
with DB differences, two with a scripted model agent and judge), writes its report with the sample
prices, opens it in headless Chromium, filters to the failing results, opens the one with three
bags instead of one and saves the page as a PNG. Usage: ``python -m tests.screenshot [OUT.png]``.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from engine.report_html import write_report
from engine.results.costs import load_prices
from tests import browser as chromium
from tests.conftest import REPO
from tests.report_helpers import PRICES_YAML, sample_run

WIDTH, HEIGHT = 1280, 2000
OPENED = "eva_airline__1_1_3"


def main(argv: list[str]) -> int:
    out = (Path(argv[0]) if argv else REPO / "docs" / "report.png").resolve()
    if (why := chromium.missing()) is not None:
        print(f"screenshot: {why}", file=sys.stderr)
        return 1
    data_root = Path(os.environ.get("EVAL_DATA_ROOT", REPO / "data")).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        run_dir = sample_run(data_root, where / "sample")
        (where / "prices.yaml").write_text(PRICES_YAML, encoding="utf-8")
        # the page's title is the run folder as given: make it read like `evalctl run` output
        (where / "runs").mkdir()
        run_dir.rename(where / "runs" / "20261201-093000")
        os.chdir(where)
        shown = Path("runs") / "20261201-093000"
        report = write_report(shown, shown / "report.html", load_prices(where / "prices.yaml")).path
        with chromium.browser(WIDTH, HEIGHT) as driver:
            chromium.open_page(driver, report)
            driver.find_element("id", "f-failing").click()
            driver.find_element("css selector", f'tr[data-name="{OPENED}"]').click()
            driver.execute_script("window.scrollTo(0, 0)")
            problems = chromium.console_problems(driver)
            if problems:
                print(f"screenshot: console: {problems}", file=sys.stderr)
                return 1
            out.parent.mkdir(parents=True, exist_ok=True)
            driver.save_screenshot(str(out))
        os.chdir(REPO)
    print(f"screenshot: {out} ({out.stat().st_size // 1024} KiB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
