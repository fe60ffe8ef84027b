"""Wall time of `evalctl validate specs/eva_airline` (all 50 scenarios, both prompts rendered),
with and without the gold replay, as a fresh process (what a user waits for). Target: < 1.5 s."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RUNS = 5


def _wall(args: list[str]) -> tuple[float, float, str]:
    times, last = [], ""
    for _ in range(RUNS):
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-c", "import sys, cli; sys.exit(cli.main())", *args],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=False,
        )
        times.append(time.perf_counter() - start)
        last = (proc.stdout.strip().splitlines() or [proc.stderr.strip()])[-1]
    return statistics.median(times), min(times), last


def run() -> None:
    """Print median and best wall time (seconds) over RUNS fresh processes, per variant."""
    for label, extra in (("with replay", []), ("--no-replay", ["--no-replay"])):
        median, best, last = _wall(["validate", "specs/eva_airline", *extra])
        print(
            f"evalctl validate specs/eva_airline ({label}): median {median:.2f} s, best {best:.2f} s "
            f"over {RUNS} runs (target < 1.5 s)"
        )
        print(f"  last line: {last}")
    sys.path.insert(0, str(REPO))
    from engine.domains.registry import plugins
    from engine.spec.loader import load_domain

    start = time.perf_counter()
    load_domain(REPO / "specs" / "eva_airline", plugins=plugins())
    print(f"load_domain in-process (warm imports): {time.perf_counter() - start:.3f} s")
