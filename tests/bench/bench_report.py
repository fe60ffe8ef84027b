"""Report benchmark: `evalctl report --html` for 50 and 500 scenarios — generation time, file size
and, in headless Chromium when it is installed, the time the page takes to open and to open one
result.

The 50-scenario run is a real replay run of eva_airline on the real data. The 500-scenario run is
that run's results copied ten times under new scenario names (every artifact, metrics.json
rewritten through its record), with the summary recomputed by ``finish_run``.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from engine.report_html import write_report
from engine.results.scoring_stage import finish_run, scored_dirs
from engine.run import runner
from engine.util.artifacts import read_json, write_json
from tests import browser as chromium
from tests.conftest import REPO, SPEC_DIR
from tests.runtime_helpers import run_options

COPIES = 10


def _copied(run_dir: Path, out: Path, copies: int) -> Path:
    """``run_dir``'s results ``copies`` times, as ``<name>__c<k>``, summarised."""
    out.mkdir()
    for sdir, m in scored_dirs(run_dir):
        for k in range(copies):
            name = f"{m.scenario_name}__c{k}"
            target = out / name
            shutil.copytree(sdir, target)
            write_json(target / "metrics.json", replace(m, scenario_name=name).to_json())
            meta = read_json(target / "scenario_config" / "metadata.json")
            write_json(target / "scenario_config" / "metadata.json", {**meta, "scenario_name": name})
    shutil.copy(run_dir / "run.json", out / "run.json")
    finish_run(out, {"spec_dir": str(SPEC_DIR), "data_root": str(REPO / "data")})
    assert len(scored_dirs(out)) == copies * len(scored_dirs(run_dir))
    return out


def _open_times(driver, page: Path) -> tuple[float, float, float]:
    """Milliseconds from navigation start: the script done (table built), the load event; then
    the time to open the first result."""
    chromium.open_page(driver, page)
    ready = float(driver.find_element("tag name", "body").get_attribute("data-ready-ms"))
    load = driver.execute_script("return performance.getEntriesByType('navigation')[0].loadEventEnd")
    t0 = time.perf_counter()
    driver.find_element("css selector", "#scenario-rows tr").click()
    driver.find_element("css selector", "#detail .chat")
    return ready, float(load), 1000 * (time.perf_counter() - t0)


def run() -> None:
    browser_missing = chromium.missing()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        replayed = base / "r50"
        asyncio.run(runner.run(run_options(SPEC_DIR, REPO / "data", output_dir=replayed, quiet=True)))
        runs = {50: replayed, 50 * COPIES: _copied(replayed, base / "r500", COPIES)}
        pages: dict[int, Path] = {}
        for n, run_dir in runs.items():
            assert len(scored_dirs(run_dir)) == n
            t0 = time.perf_counter()
            written = write_report(run_dir, run_dir / "report.html")
            seconds = time.perf_counter() - t0
            pages[n] = written.path
            print(
                f"report, {n} scenarios: generated in {seconds:.2f} s, {written.size / 1e6:.2f} MB "
                f"({written.size / n / 1e3:.1f} kB per scenario; limit 20 MB at 500)"
            )
        if browser_missing:
            print(f"report opening time: skipped ({browser_missing})")
            return
        with chromium.browser() as driver:
            for n, page in pages.items():
                cold = _open_times(driver, page)  # the browser's first look at this file
                ready, load, result = _open_times(driver, page)
                problems = chromium.console_problems(driver)
                print(
                    f"report, {n} scenarios, headless Chromium: table ready {cold[0]:.0f} ms (first open), "
                    f"{ready:.0f} ms (again), load event {load:.0f} ms after navigation start "
                    f"(target < 2000 ms); one result opens in {result:.0f} ms (WebDriver round trips "
                    f"included); console problems: {len(problems)}"
                )


if __name__ == "__main__":
    run()
