"""In-process adapters' cost (issue #27 §5): the 50 eva scenarios through ``python:``, ``pipecat:``
and ``livekit:`` (the example agents, on the real packages) with a gold-replaying fake LLM on
loopback (tests/fake_llm.py, in a process of its own), next to ``--agent replay`` and to evalctl's
own ``openai:`` agent over the plain protocol with the same fake LLM.

Each agent runs the 50 at the default concurrency, ``ROUNDS`` times after a warm-up, the agents
alternating; each round gives its own ratios. Definitions (wall, CPU, overhead per turn, ratio):
tests/bench/cost.py.
Every run must pass 50/50, or the bench says so and stops.
"""

from __future__ import annotations

import os

from tests.bench.cost import gold_llm, report, rounds
from tests.conftest import REPO

ROUNDS = 5
PLAIN = "openai: (plain protocol)"
AGENTS = {
    "replay": "replay",
    PLAIN: "openai:gold",
    "python": f"python:{REPO}/examples/python_agent.py:make_agent",
    "pipecat": f"pipecat:{REPO}/examples/pipecat_bot.py:make_pipeline",
    "livekit": f"livekit:{REPO}/examples/livekit_bot.py:make_agent",
}


def run() -> None:
    data_root = REPO / "data"
    with gold_llm(data_root) as url:
        os.environ["OPENAI_BASE_URL"] = url
        os.environ.setdefault("OPENAI_API_KEY", "local")
        runs = rounds(AGENTS, data_root, ROUNDS, base_url=url)
    report(runs, PLAIN, ["python", "pipecat", "livekit"])
