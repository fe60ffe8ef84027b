"""tau2 telecom timings on the real data (issue #14 targets):

- ``evalctl validate`` of specs/tau2_telecom and specs/tau2_telecom_workflow as a fresh process
  (schemas, 114 scenarios, 228 prompts, 114 gold replays with their assertions): target <= 3 s;
- a replay run of all 114 scenarios at the default concurrency (load, sessions, scoring, artifacts):
  target <= 10 s.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from engine.run import runner
from tests.conftest import REPO
from tests.runtime_helpers import run_options

RUNS = 3
SPECS = ("specs/tau2_telecom", "specs/tau2_telecom_workflow")


def _validate(spec: str) -> tuple[float, float, str]:
    times, last = [], ""
    for _ in range(RUNS):
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-c", "import sys, cli; sys.exit(cli.main())", "validate", spec],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=False,
        )
        times.append(time.perf_counter() - start)
        last = (proc.stdout.strip().splitlines() or [proc.stderr.strip()])[-1]
    return statistics.median(times), min(times), last


def run() -> None:
    """Print the validate wall times (median and best of RUNS fresh processes) and one replay run's."""
    for spec in SPECS:
        median, best, last = _validate(spec)
        print(
            f"evalctl validate {spec}: median {median:.2f} s, best {best:.2f} s over {RUNS} runs "
            "(target <= 3 s)"
        )
        print(f"  last line: {last}")
    with tempfile.TemporaryDirectory() as tmp:
        for spec in SPECS:
            start = time.perf_counter()
            opts = run_options(REPO / spec, REPO / "data", output_dir=Path(tmp) / Path(spec).name, quiet=True)
            report = asyncio.run(runner.run(opts))
            wall = time.perf_counter() - start
            passed = sum(1 for o in report.outcomes if o.is_successful is True)
            print(
                f"replay run of {spec} (concurrency {opts.concurrency}): {wall:.2f} s in all "
                f"(sessions {report.wall_s:.2f} s), {passed}/{len(report.outcomes)} successful "
                "(target <= 10 s)"
            )


if __name__ == "__main__":
    run()
