"""tau2 airline and retail on their big shared DBs (7 MB and 2.8 MB), as fresh processes (what a user
waits for): `evalctl validate` of each domain including every gold replay (target <= 4 s each;
tau2's own gold replay takes about 45 s and 33 s here), and a replay run of all 114 retail tasks
at the default concurrency (target <= 10 s wall, peak memory <= 400 MB)."""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RUNS = 3
#: Runs the CLI, then reports the process's own peak memory (max RSS, KiB) on stderr's last line.
MAIN = (
    "import resource, sys, cli\n"
    "code = cli.main()\n"
    "print('maxrss', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def _evalctl(args: list[str]) -> tuple[float, float, str]:
    """Wall seconds, peak memory (MiB) and the last output line of one fresh `evalctl` process."""
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", MAIN, *args], cwd=REPO, capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - start
    peak = next(
        (
            int(line.split()[1]) / 1024
            for line in reversed(proc.stderr.splitlines())
            if line.startswith("maxrss")
        ),
        float("nan"),
    )
    lines = proc.stdout.strip().splitlines() or [proc.stderr.strip()]
    last = lines[-1] if proc.returncode == 0 else f"exit {proc.returncode}: {lines[-1]}"
    return wall, peak, last


def run() -> None:
    """Print median and best wall time of validate per domain, then the retail replay run's wall
    time and peak memory."""
    for name in ("tau2_airline", "tau2_retail"):
        results = [_evalctl(["validate", f"specs/{name}"]) for _ in range(RUNS)]
        times = [t for t, _, _ in results]
        print(
            f"evalctl validate specs/{name}: median {statistics.median(times):.2f} s, "
            f"best {min(times):.2f} s over {RUNS} runs (target <= 4 s)"
        )
        print(f"  last line: {results[-1][2]}")
    with tempfile.TemporaryDirectory() as tmp:
        wall, peak, last = _evalctl(["run", "specs/tau2_retail", "--output-dir", f"{tmp}/run"])
    print(
        f"evalctl run specs/tau2_retail (replay agent and user, 114 tasks, concurrency 8): wall {wall:.2f} s"
    )
    print(f"  (target <= 10 s), peak memory {peak:.0f} MiB (target <= 400 MB); {last}")


if __name__ == "__main__":
    run()
