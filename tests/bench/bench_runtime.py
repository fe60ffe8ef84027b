"""Runtime benchmark: replay runs of all 50 eva_airline scenarios on the real data.

Prints: wall time at the default concurrency and at 1, the engine's own time per turn (frame
encoding/decoding and tool execution, excluding waiting on sides), and with an artificial model
latency per replay model step the ratio of the 50-scenario wall time at concurrency 50 to the
longest single scenario's model time (target <= 1.25), plus peak memory (max RSS).
"""

from __future__ import annotations

import asyncio
import resource
import tempfile
import time
from pathlib import Path

from engine.run import runner
from engine.run.runner import RunReport
from tests.conftest import REPO, SPEC_DIR
from tests.runtime_helpers import run_options

LATENCY_S = 0.1


def _run(out: Path, **kw: object) -> tuple[RunReport, float]:
    t0 = time.perf_counter()
    report = asyncio.run(runner.run(run_options(SPEC_DIR, REPO / "data", output_dir=out, quiet=True, **kw)))
    return report, time.perf_counter() - t0


def _turns(report: RunReport) -> int:
    return sum(r.agent_turns + r.user_turns for r in report.outcomes)


def _model_calls(report: RunReport) -> list[int]:
    return [sum(u.get("calls", 0) for u in r.usage.values()) for r in report.outcomes]


def run() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        for concurrency in (8, 1):
            report, wall = _run(base / f"c{concurrency}", concurrency=concurrency)
            turns = _turns(report)
            engine_s = sum(r.engine_time_s for r in report.outcomes)
            clean = sum(1 for r in report.outcomes if r.clean_exit)
            print(
                f"replay, 50 scenarios, concurrency {concurrency}: wall {wall:.2f} s "
                f"(runner {report.wall_s:.2f} s), "
                f"{clean}/50 clean exits, {turns} turns, engine time {1000 * engine_s / turns:.3f} ms/turn"
            )
        report, wall = _run(base / "lat", concurrency=50, replay_latency_s=LATENCY_S)
        longest = max(_model_calls(report)) * LATENCY_S
        ratio = report.wall_s / longest
        print(
            f"replay with {LATENCY_S * 1000:.0f} ms per model step, concurrency 50: "
            f"wall {report.wall_s:.2f} s, "
            f"longest scenario model time {longest:.2f} s, ratio {ratio:.3f} (target <= 1.25)"
        )
        slowest = max(r.duration_s for r in report.outcomes)
        print(f"  slowest session {slowest:.2f} s; all clean: {all(r.clean_exit for r in report.outcomes)}")
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory (max RSS of the process): {peak_mib:.0f} MiB")


if __name__ == "__main__":
    run()
