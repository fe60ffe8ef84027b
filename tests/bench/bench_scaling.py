"""Scaling of a replay run (issue #18): 50 / 500 / 2,000 eva_airline sessions (``--trials`` 1 / 10 /
40), each a real ``evalctl run`` in its own process, with its wall time, its peak memory (the
child's max RSS, from ``os.wait4``), the memory per session beyond the 50-session run, and the
durable syncs it called per session and the seconds its threads spent in them
(``tests.bench.scale_child`` counts them).

Anchors: before #18 the same runs took 1.6 / 12.2 / 56.5 s and peaked at 68 / 205 / 674 MiB
(0.31 MiB more per session: every result was kept to the end) with 22 syncs per session (11 files,
each fsynced with its folder); the target is <= 150 MiB at 2,000 sessions, whatever their number.

``EVALCTL_BENCH_SCALE`` (comma-separated session counts, multiples of 50; default
``50,500,2000``) picks the runs; ``0`` skips the table.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from engine.core.dataroot import resolve_data_root

REPO = Path(__file__).resolve().parent.parent.parent
SPEC_DIR = REPO / "specs" / "eva_airline"
SCENARIOS = 50
#: sessions -> (wall s, peak MiB) measured before #18 (issue #18's figures)
BEFORE = {50: (1.6, 68), 500: (12.2, 205), 2000: (56.5, 674)}
TARGET_MIB = 150


def _counts() -> list[int]:
    raw = os.environ.get("EVALCTL_BENCH_SCALE", "50,500,2000").strip()
    if raw in ("", "0"):
        return []
    counts = [int(x) for x in raw.split(",") if x.strip()]
    bad = [n for n in counts if n < SCENARIOS or n % SCENARIOS]
    if bad:
        raise SystemExit(f"EVALCTL_BENCH_SCALE: {bad[0]} is not a multiple of {SCENARIOS}")
    return counts


def measure(sessions: int, base: Path) -> dict[str, float]:
    """One replay run of ``sessions`` sessions in a child process: wall s, peak MiB, syncs."""
    out, counts = base / f"run{sessions}", base / f"syncs{sessions}.json"
    argv = [sys.executable, "-m", "tests.bench.scale_child", str(counts), "run", str(SPEC_DIR)]
    argv += ["--data-root", str(resolve_data_root(None)), "--trials", str(sessions // SCENARIOS)]
    argv += ["--output-dir", str(out), "--no-progress", "--workers", "1"]  # one process: its syncs counted
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"evalctl run exited {proc.returncode}: {err.decode(errors='replace')[-500:]}")
    synced = json.loads(counts.read_text(encoding="utf-8"))
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    return {
        "wall_s": wall,
        "peak_mib": usage.ru_maxrss / 1024,  # KiB on Linux
        "syncfs": synced["syncfs"],
        "fsync": synced["fsync"],
        "sync_s": synced["sync_s"],
        "passed": summary["overall"]["passed"],
        "results": summary["results"],
    }


def run() -> None:
    counts = _counts()
    if not counts:
        print("scaling table skipped (EVALCTL_BENCH_SCALE=0)")
        return
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in counts:
            print(f"  scaling: {n} sessions ...", flush=True)
            rows[n] = measure(n, Path(tmp))
    first = min(rows)
    print(
        "replay run scaling (one `evalctl run` process each, default concurrency; (before): issue #18's "
        "figures before the change, on an idle machine):"
    )
    print(
        "  sessions   wall s  (before)   peak MiB  (before)   MiB/session   syncs/session  in syncs s  passed"
    )
    for n, r in rows.items():
        wall0, mib0 = BEFORE.get(n, (None, None))
        growth = "" if n == first else f"{(r['peak_mib'] - rows[first]['peak_mib']) / (n - first):.4f}"
        syncs = (r["syncfs"] + r["fsync"]) / n
        print(
            f"  {n:8d} {r['wall_s']:8.1f}  {'' if wall0 is None else f'({wall0})':>8} "
            f"{r['peak_mib']:10.0f}  {'' if mib0 is None else f'({mib0})':>8}   {growth:>11} "
            f"  {syncs:13.2f}  {r['sync_s']:10.2f}  {r['passed']}/{r['results']}"
        )
    top = max(rows)
    print(
        f"  peak at {top} sessions: {rows[top]['peak_mib']:.0f} MiB (target <= {TARGET_MIB} MiB at 2000, "
        f"ratio {rows[top]['peak_mib'] / TARGET_MIB:.2f}); syncs: {rows[top]['syncfs']} syncfs + "
        f"{rows[top]['fsync']} fsync (run-level files) for {top} result folders"
    )


if __name__ == "__main__":
    run()
