"""The expected DB's gold replay runs once per scenario in a run: the run's gold check, every
trial's scoring (``gold_db``, ``gold_reaches``) and the domain diagnostics share it. The NeMo
domains' scenarios name a subset of the tools; the subset was made anew at each use, so the
replay's cache (keyed by the table's identity) missed and scoring replayed the gold again for
every session."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from engine.core.options import TaskSelection
from engine.run import runner
from engine.spec import gold_replay
from tests.conftest import REPO
from tests.runtime_helpers import run_options


@pytest.mark.parametrize("domain", ["restaurant", "eva_airline"])
def test_a_run_replays_each_gold_once(
    domain: str, data_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    replayed: list[str] = []
    real = gold_replay.replay_scenario

    def counted(scenario, **kwargs):  # type: ignore[no-untyped-def]
        replayed.append(scenario.name)
        return real(scenario, **kwargs)

    monkeypatch.setattr(gold_replay, "replay_scenario", counted)
    selection = {} if domain == "restaurant" else {"tasks": TaskSelection(num_tasks=6)}
    opts = run_options(
        REPO / "specs" / domain,
        data_root,
        output_dir=tmp_path / "run",
        trials=3,
        progress=False,
        quiet=True,
        workers=1,
        **selection,
    )
    report = asyncio.run(runner.run(opts))
    results = list(report.results())
    names = {r.scenario_name for r, _ in results}
    assert len(results) == 3 * len(names) and all(m is not None and m.is_successful for _, m in results)
    assert sorted(replayed) == sorted(set(replayed)) and names <= set(replayed)
