"""A run replays each scenario's gold trace at most once: loading (``expected_db: {from:
gold_replay}``, tests/domains/tau2/test_tau2_gold_replay_once.py), the scoring diagnostics (eva's
``authenticated``) and the domain plugins (tau2 telecom's phone-DB hash) share
``engine.spec.gold_replay.gold_replay``; the replay backend cuts each gold trace into turns once for both
sides and every trial."""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from engine.domains.registry import plugins
from engine.run import runner
from engine.session.backends import replay as replay_backend
from engine.spec import gold_replay as replay
from engine.spec.loader import load_domain
from tests.conftest import SPEC_DIR
from tests.runtime_helpers import run_options

EVA = ("eva_airline__3_1_5", "eva_airline__5_2_5")


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


@pytest.fixture
def cuts(monkeypatch: pytest.MonkeyPatch) -> Counter[int]:
    """Gold traces cut into turns by the replay backend, per trace."""
    seen: Counter[int] = Counter()
    real = replay_backend.split_trace

    def counting(trace: Any, *args: Any, **kwargs: Any) -> Any:
        seen[id(trace)] += 1
        return real(trace, *args, **kwargs)

    monkeypatch.setattr(replay_backend, "split_trace", counting)
    return seen


def test_an_eva_run_replays_each_gold_once(
    tmp_path: Path, data_root: Path, replays: Counter[str], cuts: Counter[int]
) -> None:
    opts = run_options(SPEC_DIR, data_root, scenarios=EVA, trials=2, output_dir=tmp_path / "run", quiet=True)
    report = asyncio.run(runner.run(opts))
    assert len(report.outcomes) == 4 and all(o.clean_exit for o in report.outcomes)
    # the authenticated diagnostic compares each session with the gold's end state
    assert all(m is not None and m.signals.diagnostics["authenticated"] is True for _, m in report.results())
    assert replays == Counter({name: 1 for name in EVA})
    assert sorted(cuts.values()) == [1, 1]  # 2 scenarios x 2 trials x 2 sides, cut once each


def test_kept_replays_do_not_keep_their_scenarios_alive(data_root: Path) -> None:
    loaded = load_domain(SPEC_DIR, data_root, plugins=plugins())
    traces = [weakref.ref(s.gold_trace) for s in loaded.scenarios[:3]]
    for scenario in loaded.scenarios[:3]:
        assert replay.gold_replay(scenario) is replay.gold_replay(scenario)
    kept = len(replay._GOLD_RUNS)
    del loaded, scenario
    gc.collect()
    assert all(ref() is None for ref in traces)
    assert len(replay._GOLD_RUNS) <= kept - 3
