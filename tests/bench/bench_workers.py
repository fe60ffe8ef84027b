"""All cores (issue #18, point 4): replay runs of eva_airline through the command line, in one
process (``--workers 1``) and in one worker per core (``--workers N``).

Prints, per size (50 / 500 / 2,000 sessions: ``--trials`` 1 / 10 / 40): wall time, CPU time of
every process of the run, CPU per turn, peak memory of the largest process, and the speed-up of N
workers over one (target for 2,000 sessions: <= 20 s wall). Then 500 sessions at concurrency 200
with 0.1 s per replay model step against the ideal: every model step's sleep packed perfectly on
200 slots (total model time / 200), and never less than the longest session's model time
(target, issue #31: <= 1.5x with N workers), with the idle share of each process's writer thread
(busy seconds over its active span, ``engine.util.group_commit.WriterStats``; target >= 50 %).
Beside the ideal it prints what bounds the wall below it: the sessions packed whole, longest
first, on the 200 slots (a session's steps cannot spread over slots, so no run can beat this even
at no CPU cost), and how the wall splits into the run's sessions (``run.json``'s ``wall_time_s``:
from the jobs planned to the last worker's end) and the rest (interpreter start, imports, spec
indexing before; the summary and exit after).
``EVALCTL_BENCH_SIZES=50,500`` runs fewer sizes.
"""

from __future__ import annotations

import heapq
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from engine.results.scorer import STATS_ENV
from engine.run.workers import MIN_JOBS_PER_WORKER, cpu_count
from tests.conftest import REPO, SPEC_DIR

LATENCY_S = 0.1
WALL_TARGET_S = 20.0
IDEAL_RATIO_TARGET = 1.5
WRITER_IDLE_TARGET = 0.5


@dataclass(frozen=True)
class Measured:
    wall_s: float
    cpu_s: float
    peak_mib: float
    sessions: int
    turns: int
    model_calls: list[int]
    passed: int
    writers: list[dict[str, float]]
    run_wall_s: float


def _run(out: Path, *args: str) -> Measured:
    """One ``evalctl run`` of eva_airline in a subprocess (the real start-up and spawn costs). CPU
    and peak memory are that run's own (its workers included), from wait4."""
    stats = out.with_name(out.name + ".writer.jsonl")
    env = {**os.environ, STATS_ENV: str(stats)}
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, str(REPO / "cli.py"), "run", str(SPEC_DIR), "--data-root", str(REPO / "data"),
         "--output-dir", str(out), "--no-progress", *args],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise subprocess.CalledProcessError(proc.returncode, proc.args)
    cpu = usage.ru_utime + usage.ru_stime
    rows = [json.loads(p.read_text()) for p in out.glob("**/metrics.json")]
    calls = [sum(u.get("calls", 0) for r, u in m["usage"].items() if r != "judge") for m in rows]
    return Measured(
        wall_s=wall,
        cpu_s=cpu,
        peak_mib=usage.ru_maxrss / 1024,  # the largest process of this run (Linux: KiB)
        sessions=len(rows),
        turns=sum(m["agent_turns"] + m["user_turns"] for m in rows),
        model_calls=calls,
        passed=sum(1 for m in rows if m["is_successful"] is True),
        writers=[json.loads(line) for line in stats.read_text().splitlines()] if stats.exists() else [],
        run_wall_s=float(json.loads((out / "run.json").read_text())["invocations"][-1]["wall_time_s"]),
    )


def packed_s(durations: list[float], slots: int) -> float:
    """The makespan of ``durations`` (seconds) started longest first, each on the slot free soonest."""
    free = [0.0] * slots
    for d in sorted(durations, reverse=True):
        heapq.heappush(free, heapq.heappop(free) + d)
    return max(free)


def _writer_line(m: Measured) -> str:
    """Each writing process's writer thread: its idle share, busy and sync seconds over its span,
    folders per commit."""
    parts = [
        f"idle {100 * w['idle_share']:.0f}% (busy {w['busy_s']:.2f} s, {w['sync_s']:.2f} s of it syncing, "
        f"of {w['span_s']:.2f} s; {w['folders']:.0f} folders in {w['batches']:.0f} commits, "
        f"at most {w['largest_batch']:.0f})"
        for w in m.writers
    ]
    least = min((w["idle_share"] for w in m.writers), default=float("nan"))
    return (
        f"  writer threads: {'; '.join(parts) or 'none'}; least idle {100 * least:.0f}% "
        f"(target >= {100 * WRITER_IDLE_TARGET:.0f}%)"
    )


def _line(label: str, m: Measured) -> str:
    per_turn = 1000 * m.cpu_s / max(1, m.turns)
    return (
        f"  {label}: wall {m.wall_s:6.2f} s, CPU {m.cpu_s:6.2f} s "
        f"({per_turn:.2f} ms/turn over {m.turns} turns), "
        f"{m.passed}/{m.sessions} passing, peak {m.peak_mib:.0f} MiB"
    )


def run() -> None:
    n = cpu_count()
    print(f"{n} cores; load average before: {os.getloadavg()[0]:.1f} (other jobs slow every figure)")
    sizes = [int(s) for s in os.environ.get("EVALCTL_BENCH_SIZES", "50,500,2000").split(",") if s]
    peak = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        for size in sizes:
            trials = max(1, size // 50)
            one = _run(base / f"one{size}", "--trials", str(trials), "--workers", "1")
            many = _run(base / f"many{size}", "--trials", str(trials), "--workers", str(n))
            peak = max(peak, one.peak_mib, many.peak_mib)
            print(f"replay, {size} sessions (--trials {trials}), concurrency 8:")
            print(_line("--workers 1", one))
            target = f" (target <= {WALL_TARGET_S:.0f} s)" if size == 2000 else ""
            if size < 2 * MIN_JOBS_PER_WORKER:
                target = " (one process: the small-run rule)"
            print(_line(f"--workers {n}", many) + target)
            print(f"  speed-up of {n} workers over 1: {one.wall_s / many.wall_s:.2f}x")
        for workers in (1, n):
            m = _run(base / f"lat{workers}", "--trials", "10", "--concurrency", "200",
                     "--replay-latency", str(LATENCY_S), "--workers", str(workers))  # fmt: skip
            peak = max(peak, m.peak_mib)
            model_s = [c * LATENCY_S for c in m.model_calls]
            ideal = max(sum(model_s) / 200, max(model_s, default=0.0))
            ratio = m.wall_s / ideal if ideal else float("nan")
            target = f" (target <= {IDEAL_RATIO_TARGET}x)" if workers == n else ""
            print(
                f"replay, {m.sessions} sessions, concurrency 200, {LATENCY_S * 1000:.0f} ms per model step, "
                f"--workers {workers}: wall {m.wall_s:.2f} s, ideal {ideal:.2f} s "
                f"({sum(m.model_calls)} model steps / 200 slots), ratio {ratio:.2f}x{target}, "
                f"load average {os.getloadavg()[0]:.1f}"
            )
            print(
                f"  sessions packed whole on 200 slots: {packed_s(model_s, 200):.2f} s; of the wall, "
                f"{m.run_wall_s:.2f} s the sessions, {m.wall_s - m.run_wall_s:.2f} s start-up and summary"
            )
            print(_writer_line(m))
    print(f"peak memory of the largest process of any run above: {peak:.0f} MiB")
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    run()
