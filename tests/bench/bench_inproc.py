"""In-process adapters' cost (issue #27 §5): the 50 eva scenarios through ``pipecat:`` and
``livekit:`` (the example bots on the real packages) with a gold-replaying fake LLM on loopback
(tests/fake_llm.py), next to ``--agent replay`` and to evalctl's own ``openai:`` agent over the
plain protocol with the same fake LLM.

Each agent runs the 50 at the default concurrency, ``ROUNDS`` times; the median wall time is
kept. The overhead per agent turn is (run time - replay's) / agent turns: what the model path
adds on top of the engine. An adapter's ratio is its overhead per turn over the plain protocol's
(target: at most 2). Every run must pass 50/50, or the bench says so and stops.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

from engine.domains.registry import plugins
from engine.run import runner
from engine.spec.loader import load_domain
from tests.conftest import REPO, SPEC_DIR
from tests.fake_llm import GoldLLM
from tests.runtime_helpers import run_options

ROUNDS = 3
AGENTS = {
    "replay": "replay",
    "openai (plain protocol)": "openai:gold",
    "pipecat": f"pipecat:{REPO}/examples/pipecat_bot.py:make_pipeline",
    "livekit": f"livekit:{REPO}/examples/livekit_bot.py:make_agent",
}


def _once(agent: str, data_root: Path, base_url: str) -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as tmp:
        opts = run_options(
            SPEC_DIR, data_root, agent=agent, output_dir=Path(tmp) / "run", progress=False, base_url=base_url
        )
        start = time.perf_counter()
        report = asyncio.run(runner.run(opts))
        elapsed = time.perf_counter() - start
        results = list(report.results())
    passed = sum(1 for _, m in results if m is not None and m.is_successful)
    if passed != 50:
        raise SystemExit(f"bench_inproc: {agent} passed {passed}/50")
    return elapsed, sum(r.agent_turns for r, _ in results)


def run() -> None:
    data_root = REPO / "data"
    loaded = load_domain(SPEC_DIR, data_root, plugins=plugins())
    with GoldLLM(loaded.scenarios) as llm:
        os.environ["OPENAI_BASE_URL"] = llm.base_url
        os.environ.setdefault("OPENAI_API_KEY", "local")
        for agent in AGENTS.values():  # warm: imports, the bots' modules, the data
            _once(agent, data_root, llm.base_url)
        times: dict[str, list[float]] = {name: [] for name in AGENTS}
        turns: dict[str, int] = {}
        for _ in range(ROUNDS):  # rounds alternate between the agents
            for name, agent in AGENTS.items():
                elapsed, turns[name] = _once(agent, data_root, llm.base_url)
                times[name].append(elapsed)
    median = {name: statistics.median(t) for name, t in times.items()}
    base = median["replay"]
    plain = (median["openai (plain protocol)"] - base) / turns["openai (plain protocol)"]
    for name in AGENTS:
        per_turn = (median[name] - base) / turns[name]
        line = f"{name:24s} {median[name]:6.2f} s for 50 scenarios, {turns[name]} agent turns"
        if name != "replay":
            line += f", overhead {per_turn * 1000:6.2f} ms/turn"
        if name in ("pipecat", "livekit"):
            line += f", {per_turn / plain:4.2f}x the plain protocol's (target <= 2x)"
        print(line)
