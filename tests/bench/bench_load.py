"""``evalctl load`` at 1,000 callers (issue #31 item 4): eva_airline's 50 scenarios cycled (20 trials
each) against a local fake agent that plays the gold conversation 1 s after each caller line
(``tests.load_agents.GoldWsAgent``, a ``ws://`` agent in its own process, so the CPU measured is
evalctl's alone), the caller the built-in replay side, all 1,000 sessions at once. Printed per
step: sessions, success rate, the agent's reply time p50 / p99
(the engine's transcript clock: at least the agent's 1 s), wall, the CPU of this process (every
thread) and that CPU as a share of wall against the target of 10 %, next to the ideal wall (the
longest gold conversation's agent turns times 1 s) and the CPU as a share of that ideal wall (on a
busy machine the process gets less than a core, the wall stretches and CPU / wall flatters it:
the share of the ideal wall does not).

``EVALCTL_BENCH_LOAD`` (comma-separated caller counts, default ``1000``; ``0`` skips) sets the ramp.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from engine.core.options import RunOptions
from engine.domains.registry import plugins
from engine.run.load import LoadPlan, run_load
from tests.load_agents import GoldWsAgent

REPO = Path(__file__).resolve().parent.parent.parent
SPEC_DIR = REPO / "specs" / "eva_airline"
LATENCY_S = 1.0
TARGET = 0.10


def _ramp() -> tuple[int, ...]:
    raw = os.environ.get("EVALCTL_BENCH_LOAD", "1000").strip()
    if raw in ("", "0"):
        return ()
    return tuple(int(x) for x in raw.split(",") if x.strip())


def run() -> None:
    ramp = _ramp()
    if not ramp:
        print("load: skipped (EVALCTL_BENCH_LOAD=0)")
        return
    data_root = REPO / "data"
    ideal = LATENCY_S * max(len(turns) for turns in GoldWsAgent(SPEC_DIR, data_root, 0).scripts.values())
    argv = [sys.executable, "-m", "tests.load_agents", str(SPEC_DIR), str(data_root), str(LATENCY_S)]
    agent = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert agent.stdout is not None
        uri = agent.stdout.readline().strip()
        if not uri.startswith("ws://"):
            raise RuntimeError(f"the fake agent did not start (it printed {uri!r})")
        opts = RunOptions(
            spec_dir=SPEC_DIR, data_root=data_root, plugins=plugins(), agent=uri, max_endpoint_failures=0
        )
        with tempfile.TemporaryDirectory(prefix="evalctl-bench-load-") as tmp:
            done = asyncio.run(run_load(opts, LoadPlan(ramp, Path(tmp) / "load")))
    finally:
        agent.terminate()
        agent.wait(timeout=10)
    for step in done.record.steps:
        rate = "n/a" if step.rate is None else f"{100 * step.rate:.1f}%"
        p50, p99 = step.latency_ms["p50"], step.latency_ms["p99"]
        verdict = "ok" if step.overhead <= TARGET else "ABOVE TARGET"
        causes = ", ".join(f"{k} {v}" for k, v in sorted(step.errors_by_cause.items())) or "none"
        print(
            f"load {step.callers:5d} callers: {step.sessions} sessions, success {rate} (failures: {causes}), "
            f"reply p50 {p50:.0f} ms p99 {p99:.0f} ms (agent latency {LATENCY_S * 1000:.0f} ms); "
            f"wall {step.wall_s:.1f} s (ideal {ideal:.0f} s, {step.wall_s / ideal:.2f}x); "
            f"CPU {step.cpu_s:.1f} s = {100 * step.overhead:.1f} % of wall "
            f"(target <= {100 * TARGET:.0f} %: {verdict}), "
            f"{100 * step.cpu_s / ideal:.0f} % of the ideal wall; "
            f"{1000 * step.cpu_s / step.sessions:.1f} ms CPU/session"
        )
