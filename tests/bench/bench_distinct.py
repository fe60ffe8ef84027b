"""Memory of a run over many *distinct* scenarios (issue #31 item 3): 2,000 eva_airline scenarios
that share nothing but the domain (``tests.bench.distinct_specs``), one replay session each, with
``--workers 1`` and ``--workers 2``, each a real ``evalctl run`` in its own process. Printed: wall,
CPU of every process of the run, and the peak memory of its largest process (``os.wait4``'s
``ru_maxrss``: the run's process and the workers it reaped), next to its peer: the same number of
sessions over the 50 eva scenarios (``--trials 40``), where the scenarios are few.

Then the cost of the index pass (``engine.spec.index.index_domain``: each scenario built, checked,
its gold replayed, then dropped) against what it replaces (``load_domain`` and the run's gold
check, every scenario kept), in this process, alternating, medians of CPU seconds.

Target: <= 150 MiB per process at 2,000 distinct scenarios, with 1 or 2 workers.
``EVALCTL_BENCH_DISTINCT`` (scenario count, default 2000; ``0`` skips) sets the size.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from engine.core.dataroot import resolve_data_root
from tests.bench.distinct_specs import write

REPO = Path(__file__).resolve().parents[2]
TARGET_MIB = 150
#: issue #31's figures before the index (2,000 distinct scenarios, largest process)
BEFORE_MIB = {1: 652, 2: 517}
ROUNDS = 3


def _count() -> int:
    raw = os.environ.get("EVALCTL_BENCH_DISTINCT", "2000").strip()
    return int(raw) if raw else 2000


def measure(spec: Path, data: Path, out: Path, workers: int, trials: int = 1) -> dict[str, float]:
    """One ``evalctl run`` replay of ``spec``: wall s, CPU s (every process), peak MiB, results."""
    argv = [sys.executable, "-c", "import sys, cli; sys.exit(cli.main())", "run", str(spec)]
    argv += ["--data-root", str(data), "--trials", str(trials), "--workers", str(workers)]
    argv += ["--output-dir", str(out), "--no-progress"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"evalctl run exited {status}: {err.decode(errors='replace')[-500:]}")
    results = sum(1 for _ in out.glob("*/metrics.json")) + sum(1 for _ in out.glob("*/*/metrics.json"))
    return {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_mib": usage.ru_maxrss / 1024,  # KiB on Linux; the largest of the process and its reaped workers
        "results": results,
    }


def index_cost(spec: Path, data: Path) -> tuple[float, float]:
    """Median CPU seconds of the index pass and of ``load_domain`` + the gold check, alternating."""
    sys.path.insert(0, str(REPO))
    from engine.domains.registry import plugins
    from engine.spec.gold_check import gold_mismatches
    from engine.spec.index import index_domain
    from engine.spec.loader import load_domain

    found = plugins()
    index_times, load_times = [], []
    for _ in range(ROUNDS):
        t0 = time.process_time()
        index_domain(spec, data, plugins=found)
        index_times.append(time.process_time() - t0)
        t0 = time.process_time()
        gold_mismatches(load_domain(spec, data, plugins=found).scenarios)
        load_times.append(time.process_time() - t0)
    return statistics.median(index_times), statistics.median(load_times)


def run() -> None:
    count = _count()
    if count <= 0:
        print("distinct-scenario memory skipped (EVALCTL_BENCH_DISTINCT=0)")
        return
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        spec, data = write(count, base / "distinct")
        print(f"  distinct: {count} scenarios written; load average {load:.1f}", flush=True)
        eva = REPO / "specs" / "eva_airline"
        rows = []
        for workers in (1, 2):
            mine = measure(spec, data, base / f"d{workers}", workers)
            peer = measure(eva, resolve_data_root(None), base / f"e{workers}", workers, trials=count // 50)
            rows.append((workers, mine, peer))
        print(
            f"run of {count} distinct scenarios, one replay session each, against its peer: {count} "
            f"sessions of the 50 eva scenarios (--trials {count // 50}); load average {load:.1f}:"
        )
        print("  workers  peak MiB (before)  peer MiB  ratio   wall s  CPU s  peer wall  peer CPU  results")
        for workers, mine, peer in rows:
            before = BEFORE_MIB.get(workers) if count == 2000 else None
            print(
                f"  {workers:7d}  {mine['peak_mib']:8.0f} {'' if before is None else f'({before})':>8}  "
                f"{peer['peak_mib']:8.0f}  {mine['peak_mib'] / peer['peak_mib']:5.2f}  {mine['wall_s']:7.1f}"
                f"  {mine['cpu_s']:5.1f}  {peer['wall_s']:9.1f}  {peer['cpu_s']:8.1f}  {mine['results']:.0f}"
            )
        worst = max(mine["peak_mib"] for _, mine, _ in rows)
        print(
            f"  largest process at {count} distinct scenarios: {worst:.0f} MiB (target <= {TARGET_MIB} MiB, "
            f"ratio {worst / TARGET_MIB:.2f})"
        )
        small = min(count, 500)
        spec_small, data_small = write(small, base / "small")
        index_s, load_s = index_cost(spec_small, data_small)
        print(
            f"  index pass of {small} distinct scenarios: {index_s:.2f} s CPU against {load_s:.2f} s for "
            f"load_domain + the run's gold check (ratio {index_s / load_s:.2f}; medians of {ROUNDS}, "
            "alternating)"
        )
    print(f"  load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    run()
