"""``evalctl load`` at 1,000 callers (issue #31 item 4): eva_airline's 50 scenarios cycled (20 trials
each) against a local fake agent that plays the gold conversation 1 s after each caller line
(``tests.load_agents.GoldAgent``, in-process ``python:``), the caller the built-in replay side, all
1,000 sessions at once. Printed per step: sessions, success rate, the agent's reply time p50 / p99
(the engine's transcript clock: at least the agent's 1 s), wall, the CPU of this process (every
thread, the fake agent's own work included: an upper bound of the engine's) and that CPU as a share
of wall against the target of 10 %, next to the ideal wall (the longest gold conversation's agent
turns times 1 s).

``EVALCTL_BENCH_LOAD`` (comma-separated caller counts, default ``1000``; ``0`` skips) sets the ramp.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path

from engine.core.options import RunOptions
from engine.domains.registry import plugins
from engine.run.load import LoadPlan, run_load
from tests.load_agents import GoldAgent

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
    agent = GoldAgent(SPEC_DIR, data_root, LATENCY_S)
    ideal = LATENCY_S * max(len(turns) for turns in agent.scripts.values())
    spec = agent.register("bench_load_gold")
    opts = RunOptions(
        spec_dir=SPEC_DIR,
        data_root=data_root,
        plugins=plugins(),
        agent=spec,
        max_endpoint_failures=0,
    )
    with tempfile.TemporaryDirectory(prefix="evalctl-bench-load-") as tmp:
        done = asyncio.run(run_load(opts, LoadPlan(ramp, Path(tmp) / "load")))
    for step in done.record.steps:
        rate = "n/a" if step.rate is None else f"{100 * step.rate:.1f}%"
        p50, p99 = step.latency_ms["p50"], step.latency_ms["p99"]
        verdict = "ok" if step.overhead <= TARGET else "ABOVE TARGET"
        print(
            f"load {step.callers:5d} callers: {step.sessions} sessions, success {rate}, "
            f"reply p50 {p50:.0f} ms p99 {p99:.0f} ms (agent latency {LATENCY_S * 1000:.0f} ms); "
            f"wall {step.wall_s:.1f} s (ideal {ideal:.0f} s, {step.wall_s / ideal:.2f}x); "
            f"CPU {step.cpu_s:.1f} s = {100 * step.overhead:.1f} % of wall "
            f"(target <= {100 * TARGET:.0f} %: {verdict}); "
            f"{1000 * step.cpu_s / step.sessions:.1f} ms CPU/session"
        )
