"""What the adapters' benchmarks (bench_inproc, bench_rtvi) share: one measured run of the 50 eva
scenarios in this process, the gold-replaying fake LLM in a process of its own, and the table.

Definitions, as printed:

- **wall**: seconds from the run's start to its report (``time.perf_counter``).
- **CPU**: the CPU seconds (user + system) of the evalctl process over the run, its children's
  included: ``time.process_time`` of this process (every thread) plus the growth of
  ``RUSAGE_CHILDREN`` (worker processes, reaped). The fake LLM, an RTVI bot and an external
  ``ws://`` agent run in processes of their own that evalctl did not start, so they are not in it.
- **overhead per turn** of an agent: (its run - the ``--agent replay`` run) / its agent turns, in
  wall and in CPU: what its model path adds on top of the engine.
- **ratio**: an adapter's overhead per turn over the plain protocol's (target: at most 2),
  computed in each round from that round's runs (the adapter, the plain protocol and replay run
  one after the other, so the machine's drift over minutes cancels out), and judged by the
  median of the rounds' ratios; the range of the rounds and the ratio of the medians are printed
  beside it.
- For an agent outside evalctl's process (an RTVI bot, an external ``ws://`` agent) the CPU is
  compared whole, not over replay: replay's agent runs in evalctl's process and theirs does
  not, so "over replay" can come out below zero (the plain protocol's did). Its **CPU ratio** is
  the adapter's CPU per turn over the plain protocol's: what evalctl spends driving each.

Every run is in this process, on one event loop, after a warm-up run of each agent (imports, the
bots' modules, the data and the bots' shared HTTP clients are made once, as in a long-running
process), one worker process (``--workers 1``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.run import runner
from tests.conftest import REPO, SPEC_DIR
from tests.runtime_helpers import run_options

TARGET = 2.0
_LOOP = asyncio.new_event_loop()  # every run on one loop: the example bots share a client per loop


@dataclass(frozen=True)
class Measure:
    """One run: ``wall`` and ``cpu`` seconds (module doc), agent ``turns``."""

    wall: float
    cpu: float
    turns: int


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(agent: str, data_root: Path, base: Path | None = None, **options: Any) -> Measure:
    """Run the 50 eva scenarios with ``agent`` in this process; SystemExit unless all 50 pass.
    The run's folder is made in ``base`` and left there (default: a temporary folder removed at once)."""
    with contextlib.ExitStack() as stack:
        folder = base if base is not None else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        opts = run_options(
            SPEC_DIR,
            data_root,
            agent=agent,
            output_dir=Path(tempfile.mkdtemp(prefix="run-", dir=folder)) / "run",
            progress=False,
            quiet=True,
            workers=1,
            **options,
        )
        start, cpu, children = time.perf_counter(), time.process_time(), _children_cpu()
        report = _LOOP.run_until_complete(runner.run(opts))
        wall = time.perf_counter() - start
        used = time.process_time() - cpu + _children_cpu() - children
        results = list(report.results())
    passed = sum(1 for _, m in results if m is not None and m.is_successful)
    if passed != 50:
        raise SystemExit(f"bench: {agent} passed {passed}/50")
    return Measure(wall, used, sum(r.agent_turns for r, _ in results))


def rounds(
    agents: Mapping[str, str], data_root: Path, count: int, **options: Any
) -> dict[str, list[Measure]]:
    """Each agent once to warm up, then ``count`` rounds alternating between them; per agent its
    measures, one per round, in round order. The runs' folders are kept until the last round has
    run: a file made just after many were deleted costs up to 50x more on this machine's ext4
    (docs/performance.md), which a run right after another's clean-up would pay."""
    found: dict[str, list[Measure]] = {name: [] for name in agents}
    with tempfile.TemporaryDirectory(prefix="evalctl-bench-") as tmp:
        for agent in agents.values():
            measure(agent, data_root, Path(tmp), **options)
        for _ in range(count):
            for name, agent in agents.items():
                found[name].append(measure(agent, data_root, Path(tmp), **options))
    return found


def _median(ms: list[Measure]) -> Measure:
    return Measure(statistics.median(m.wall for m in ms), statistics.median(m.cpu for m in ms), ms[0].turns)


def _per_turn(m: Measure, base: Measure | None, what: str) -> float:
    """Seconds a turn of ``m``'s ``what`` (wall or cpu) over ``base``'s (None: whole)."""
    zero = 0.0 if base is None else getattr(base, what)
    return (getattr(m, what) - zero) / m.turns


def _ratio(over: float, ref: float) -> float:
    return over / ref if ref > 0 else float("inf")


def report(
    runs: Mapping[str, list[Measure]], plain: str, adapters: list[str], external: bool = False
) -> None:
    """Print each run (medians over the rounds), then each adapter's overhead per turn and its
    ratio to ``plain``'s: the median of the rounds' ratios (module doc), their range, and the
    ratio of the medians; ``external``: the agents run outside evalctl's process, CPU compared
    whole (module doc)."""
    medians = {name: _median(ms) for name, ms in runs.items()}
    count = len(runs[plain])
    print("  wall: the run's seconds; CPU: evalctl's process and its children (tests/bench/cost.py)")
    for name, m in medians.items():
        print(f"  {name:24s} {m.wall:6.2f} s wall {m.cpu:6.2f} s CPU for 50 scenarios, {m.turns} agent turns")
    print(
        "  overhead per turn = (run - replay) / agent turns; ratio = adapter's overhead / "
        f"{plain}'s in each of the {count} rounds, judged by their median (target <= {TARGET:.0f}x)"
    )
    if external:
        print(
            "  cpu: evalctl's CPU per turn, whole (the agents run outside evalctl's process): the "
            "adapter's own cost; wall: the agents' own work too"
        )
    for what in ("wall", "cpu"):
        whole = external and what == "cpu"
        base = None if whole else medians["replay"]
        ref = _per_turn(medians[plain], base, what)
        print(f"  {what:4s} {plain:24s} {1000 * ref:6.2f} ms/turn (median run)")
        for name in adapters:
            per_round = sorted(
                _ratio(_per_turn(a, None if whole else r, what), _per_turn(p, None if whole else r, what))
                for a, p, r in zip(runs[name], runs[plain], runs["replay"], strict=True)
            )
            ratio = statistics.median(per_round)
            verdict = "ok" if ratio <= TARGET else "over the target"
            if external and what == "wall":  # the agents' own processing, in their processes
                verdict = "the agent's own pipeline included: the target is the CPU line"
            over = _per_turn(medians[name], base, what)
            print(
                f"  {what:4s} {name:24s} {1000 * over:6.2f} ms/turn: {ratio:4.2f}x ({verdict}); rounds "
                f"{per_round[0]:.2f}-{per_round[-1]:.2f}x, ratio of the medians {_ratio(over, ref):.2f}x"
            )


@contextlib.contextmanager
def gold_llm(data_root: Path) -> Iterator[str]:
    """tests/fake_llm.py's GoldLLM on the eva scenarios in a process of its own; yields its
    base URL (``http://127.0.0.1:PORT/v1``)."""
    cmd = [sys.executable, "-m", "tests.bench.cost", str(SPEC_DIR), str(data_root)]
    proc = subprocess.Popen(cmd, cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        if not url.startswith("http://"):
            raise SystemExit("bench: the fake LLM did not start")
        yield url
    finally:
        if proc.stdin is not None:
            proc.stdin.close()  # the server stops at the end of its stdin
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _serve(spec_dir: str, data_root: str) -> None:
    from engine.domains.registry import plugins
    from engine.spec.loader import load_domain
    from tests.fake_llm import GoldLLM

    loaded = load_domain(Path(spec_dir), Path(data_root), plugins=plugins())
    with GoldLLM(loaded.scenarios) as llm:
        print(llm.base_url, flush=True)
        sys.stdin.read()
        os._exit(0)  # its handler threads may hold keep-alive connections: nothing to wait for


if __name__ == "__main__":
    _serve(*sys.argv[1:3])
