"""A session DB of the real tau2 domains crosses from a supervised worker to the run's process as
what it changed (``engine.core.tools.writeset.view_delta``, sent when an in-process agent's
conversation ends: engine.run.worker_child): for every airline and retail task's gold replay the
DB rebuilt from the delta equals the replay's own, and the delta holds under 1 % of the
7 MB / 3 MB DB's records; telecom (a set-up step, so deep copies, and a user-side DB) rebuilds equal too."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from engine.core.tools.writeset import apply_delta, view_delta
from engine.domains.registry import plugins
from engine.spec.gold_replay import replay_scenario
from engine.spec.loader import load_domain
from tests.conftest import REPO


@pytest.mark.parametrize("domain", ["tau2_airline", "tau2_retail", "tau2_telecom"])
def test_every_gold_replays_db_is_rebuilt_from_its_delta(domain: str, data_root: Path) -> None:
    loaded = load_domain(REPO / "specs" / domain, data_root, plugins=plugins())
    sizes = []
    for scenario in loaded.scenarios:
        if scenario.gold_trace is None:
            continue
        run = replay_scenario(scenario)
        delta = pickle.loads(pickle.dumps(view_delta(scenario.initial_db, run.db)))
        rebuilt = apply_delta(scenario.initial_db, delta)
        assert rebuilt == run.db and list(rebuilt) == list(run.db), scenario.name
        if run.user_db is not None:
            user = apply_delta(
                scenario.user_initial_db or {}, view_delta(scenario.user_initial_db or {}, run.user_db)
            )
            assert user == run.user_db, scenario.name
        records = sum(len(v) if isinstance(v, dict | list) else 1 for v in run.db.values())
        sent = sum(map(len, delta["rows"].values())) + sum(
            len(v) if isinstance(v, dict | list) else 1 for v in delta["top"].values()
        )
        sizes.append(sent / records)
    assert len(sizes) >= 20
    if domain != "tau2_telecom":  # copy-on-write views: a few records of the shared DB
        assert max(sizes) < 0.01


async def test_a_dead_workers_ended_session_is_scored_from_its_delta(tmp_path: Path, data_root: Path) -> None:
    """The run's process scores a session whose conversation had ended when its worker died from
    the result and DB delta the worker sent (``engine.run.workers``): the same verdict and DB hash
    as the session scored where it ran."""
    import dataclasses
    import json
    from types import SimpleNamespace

    from engine.results.resume import Job
    from engine.run import workers
    from engine.run.progress import Progress
    from engine.run.runner import run
    from engine.run.worker_child import _deltas
    from tests.runtime_helpers import run_options

    spec = REPO / "specs" / "tau2_airline"
    loaded = load_domain(spec, data_root, plugins=plugins())
    scenario = next(
        s for s in loaded.scenarios if s.gold_trace and any(st.kind == "tool_call" for st in s.gold_trace)
    )
    there = await run(run_options(spec, data_root, scenarios=(scenario.name,), output_dir=tmp_path / "there",
                                  progress=False, quiet=True))  # fmt: skip
    [(result, metrics)] = list(there.results())
    assert metrics is not None and result.final_db is not None
    opts = run_options(
        spec, data_root, scenarios=(scenario.name,), agent="python:@x", progress=False, quiet=True
    )
    task = workers.WorkerTask(opts, tmp_path / "here", "inv-1", None, ((scenario.name, 1, "run", ()),))
    bare = dataclasses.replace(result, final_db=None, user_db=None)
    worker = workers._Worker(task, SimpleNamespace(pid=1, exitcode=-9), None)  # type: ignore[arg-type]
    worker.started.add((scenario.name, 1))
    worker.talked[(scenario.name, 1)] = (bare, _deltas(scenario, result))
    report = SimpleNamespace(scoring_errors={}, add=lambda *a: None)
    (tmp_path / "here").mkdir()
    with Progress(1, quiet=True) as progress:
        await workers._fail_unfinished(worker, {(scenario.name, 1): Job(scenario, 1, "run")}, opts,
                                       tmp_path / "here", "inv-1", progress, report)  # fmt: skip
    here = json.loads((tmp_path / "here" / scenario.name / "metrics.json").read_text())
    assert report.scoring_errors == {}
    assert (here["is_successful"], here["db_hash"]) == (metrics.is_successful, metrics.db_hash)
    assert here["db_hash"] == here["expected_db_hash"] and here["stop_reason"] == result.stop_reason
