"""Issue #27: all 50 eva scenarios through each in-process adapter (examples/python_agent.py, and
the real pipecat and LiveKit packages with the example bots) with a gold-replaying fake LLM on
loopback: 50/50, and every scenario's final DB hash and tool calls equal to the ``--agent replay``
run's."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from engine.core.dbhash import db_hash
from engine.run.runner import run
from engine.spec.loader import LoadedDomain
from tests.conftest import SPEC_DIR
from tests.fake_llm import GoldLLM
from tests.runtime_helpers import run_options

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def replayed(
    data_root: Path, loaded: LoadedDomain, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    return _hashes(loaded, data_root, "replay", tmp_path_factory.mktemp("replay"))


def _hashes(loaded: LoadedDomain, data_root: Path, agent: str, out: Path) -> dict[str, Any]:
    report = asyncio.run(run(run_options(SPEC_DIR, data_root, agent=agent, output_dir=out, progress=False)))
    assert not report.interrupted and not report.scoring_errors
    found = {}
    for result, metrics in report.results():
        rules = loaded.scenario(result.scenario_name).domain.hash_rules
        calls = [(c["name"], c["arguments"]) for c in result.tool_calls]
        passed = bool(metrics and metrics.is_successful)
        found[result.scenario_name] = (passed, result.stop_reason, db_hash(result.final_db, rules), calls)
    return found


@pytest.mark.parametrize(
    "agent",
    [
        pytest.param(f"python:{REPO}/examples/python_agent.py:make_agent", id="python"),
        pytest.param(f"pipecat:{REPO}/examples/pipecat_bot.py:make_pipeline", id="pipecat"),
        pytest.param(f"livekit:{REPO}/examples/livekit_bot.py:make_agent", id="livekit"),
    ],
)
def test_all_50_through_the_adapter_equal_replay(
    agent: str,
    replayed: dict[str, Any],
    loaded: LoadedDomain,
    data_root: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    needs = {"python": "openai", "pipecat": "pipecat", "livekit": "livekit.plugins.openai"}
    pytest.importorskip(needs[agent.split(":")[0]])
    with GoldLLM(loaded.scenarios) as llm:
        monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "local")
        found = _hashes(loaded, data_root, agent, tmp_path)
    assert len(found) == len(replayed) == 50
    assert sum(passed for passed, *_ in found.values()) == 50
    assert found == replayed  # verdict, stop reason, DB hash and tool calls, scenario by scenario
