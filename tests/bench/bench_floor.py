"""A 2,000-session replay run against its floor (issue #31 item 1), measured side by side.

- **run**: ``evalctl run specs/eva_airline --trials 40`` (2,000 sessions, built-in replay sides)
  in a child process, with ``--workers 1`` and ``--workers 2``; its CPU is the child's user +
  system time with its workers' (``os.wait4``), start-up (imports, spec loading) included.
- **floor**: the same 2,000 sessions' own work in this process: each scenario's gold trace
  replayed onto its initial DB the way a session runs it (``replay_scenario``: the domain's tool
  table, argument checks, copy-on-write DB) and the final DB hashed, 40 times per scenario, plus
  each expected DB hashed once; CPU by ``time.process_time``, the spec loading not counted.

Rounds alternate floor and runs (``EVALCTL_BENCH_FLOOR_ROUNDS``, default 2; medians are printed);
``EVALCTL_BENCH_FLOOR_WORKERS`` (default ``1,2``; ``0`` skips) picks the runs.
``EVALCTL_BENCH_FLOOR_BASELINE``: another checkout (a worktree of ``main``) whose ``evalctl run``
takes its turn in every round, right after this one's, under the same load. Each run's folder is
kept until the bench ends: removing its 28,000 files just before the next run made that run's file
creations dearer (ext4 passes over the inodes freed moments ago when it allocates new ones). The
load average is printed before and after: the machine is shared, so only the ratio within one
bench run means much. Targets (issue #31): run CPU <= 5x the floor, <= 2 ms of CPU per session.
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
from engine.core.dbhash import db_hash
from engine.domains.registry import plugins
from engine.spec.gold_replay import replay_scenario
from engine.spec.loader import load_domain

REPO = Path(__file__).resolve().parent.parent.parent
SPEC_DIR = REPO / "specs" / "eva_airline"
TRIALS = 40
TARGET_RATIO = 5.0
TARGET_MS = 2.0


def _workers() -> list[int]:
    raw = os.environ.get("EVALCTL_BENCH_FLOOR_WORKERS", "1,2").strip()
    return [] if raw in ("", "0") else [int(x) for x in raw.split(",") if x.strip()]


def floor_cpu(trials: int = TRIALS) -> tuple[float, int]:
    """CPU seconds of the in-process replay + hash of ``trials`` sessions per eva scenario; and
    the number of sessions."""
    loaded = load_domain(SPEC_DIR, resolve_data_root(None), plugins=plugins())
    scenarios = [s for s in loaded.scenarios if s.gold_trace is not None]
    rules = loaded.domain.hash_rules
    start = time.process_time()
    for s in scenarios:
        expected = db_hash(s.expected_db, rules) if s.expected_db is not None else None
        for _ in range(trials):
            final = db_hash(replay_scenario(s).db, rules)
            assert final == expected, s.name
    return time.process_time() - start, len(scenarios) * trials


def run_cpu(workers: int, base: Path, trials: int = TRIALS, repo: Path = REPO) -> tuple[float, float, float]:
    """(CPU s, wall s, system CPU s) of one ``evalctl run`` of ``trials`` trials in a child
    process, of the checkout ``repo`` (the system part: file creation, syncs; it follows the
    disk's other users). Its folder is left in ``base`` (a new one per call)."""
    out = Path(tempfile.mkdtemp(prefix=f"run-w{workers}-", dir=base))
    spec_dir = repo / "specs" / "eva_airline"
    argv = [sys.executable, "-m", "cli", "run", str(spec_dir), "--data-root", str(resolve_data_root(None))]
    argv += [
        "--trials",
        str(trials),
        "--workers",
        str(workers),
        "--no-progress",
        "--output-dir",
        str(out / "run"),
    ]
    env = {**os.environ, "PYTHONPATH": str(repo)}
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=repo, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise RuntimeError(f"evalctl run exited {code}: {err.decode(errors='replace')[-500:]}")
    return usage.ru_utime + usage.ru_stime, wall, usage.ru_stime


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def _baseline() -> Path | None:
    raw = os.environ.get("EVALCTL_BENCH_FLOOR_BASELINE", "").strip()
    return Path(raw).resolve() if raw else None


def _line(label: str, found: list[tuple[float, float, float]], sessions: int, floor: float) -> str:
    cpu = statistics.median(c for c, _, _ in found)
    wall = statistics.median(t for _, t, _ in found)
    system = statistics.median(s for _, _, s in found)
    per = 1000 * cpu / sessions
    return (
        f"  {label}: {cpu:.2f} s CPU ({system:.2f} s of it system), {wall:.1f} s wall "
        f"(median of {len(found)}: {', '.join(f'{c:.2f}' for c, _, _ in found)} s CPU; system "
        f"{', '.join(f'{s:.2f}' for _, _, s in found)}) | {per:.2f} ms CPU/session (target <= "
        f"{TARGET_MS:g}) | ratio to the floor {cpu / floor:.1f}x (target <= {TARGET_RATIO:g}x)"
    )


def run() -> None:
    workers = _workers()
    if not workers:
        print("floor comparison skipped (EVALCTL_BENCH_FLOOR_WORKERS=0)")
        return
    rounds = int(os.environ.get("EVALCTL_BENCH_FLOOR_ROUNDS", "2"))
    baseline = _baseline()
    floors: list[float] = []
    runs: dict[int, list[tuple[float, float, float]]] = {w: [] for w in workers}
    base_runs: dict[int, list[tuple[float, float, float]]] = {w: [] for w in workers}
    sessions = 0
    print(f"  load average before: {_load()}")
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(rounds):
            for w in workers:
                cpu, sessions = floor_cpu()
                floors.append(cpu)
                runs[w].append(run_cpu(w, Path(tmp)))
                if baseline is not None:
                    base_runs[w].append(run_cpu(w, Path(tmp), repo=baseline))
    print(f"  load average after: {_load()}")
    floor = statistics.median(floors)
    print(
        f"  floor: in-process replay + hash of the same {sessions} sessions: {floor:.2f} s CPU "
        f"({1000 * floor / sessions:.3f} ms/session; median of {len(floors)}: "
        f"{', '.join(f'{f:.2f}' for f in floors)})"
    )
    for w, found in runs.items():
        print(_line(f"evalctl run --trials {TRIALS} --workers {w}", found, sessions, floor))
        if baseline is not None:
            print(_line(f"  baseline {baseline.name}, the same run", base_runs[w], sessions, floor))


if __name__ == "__main__":
    run()
