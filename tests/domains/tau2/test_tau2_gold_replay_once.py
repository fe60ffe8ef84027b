"""A tau2 scenario whose expected DB is its gold's end state (``expected_db: {from:
gold_replay}``) is replayed once when loaded; the run's diagnostics read that same replay
(``engine.spec.gold_replay.gold_replay``)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from engine.domains.registry import plugins
from engine.spec import gold_replay as replay
from engine.spec.loader import load_domain
from tests.conftest import REPO


@pytest.fixture
def replays(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Gold replays made, per scenario name."""
    seen: Counter[str] = Counter()
    real = replay.replay_scenario

    def counting(scenario: Any, *, audit: bool = False) -> replay.ReplayRun:
        seen[scenario.name] += 1
        return real(scenario, audit=audit)

    monkeypatch.setattr(replay, "replay_scenario", counting)
    return seen


def test_a_scenario_built_from_its_gold_is_not_replayed_again(data_root: Path, replays: Counter[str]) -> None:
    spec = REPO / "specs" / "tau2_retail"
    loaded = load_domain(spec, data_root, plugins=plugins())
    assert loaded.scenarios and set(replays.values()) == {1}  # each expected DB came from one replay
    first = loaded.scenarios[0]
    assert replay.gold_replay(first).db is first.expected_db  # the load's own replay, kept
    assert replays[first.name] == 1
