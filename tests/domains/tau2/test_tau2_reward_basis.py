"""Issue 30 item 2: the tau2 domains scored on tau2's own reward basis (specs/tau2_*_reward).

Each scenario of the ``_reward`` spec folders gates on the reward types its task's
``evaluation_criteria.reward_basis`` lists (DB -> db_state_match, COMMUNICATE -> communicate_info,
NL_ASSERTION -> nl_assertion), then clean_exit. Two agents play every task of both domains: the
replay agent (the gold calls, silent: tau2's gold holds no words) and the same agent that also
says the task's ``communicate_info`` values in its opening turn (the replay agent fed a gold trace
with that line, through a plugin whose ``actions`` adapter adds it).
"""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from engine.core.gold import GoldStep, GoldTrace, actions_trace
from engine.domains.registry import plugins
from engine.domains.tau2_common.reward import reward_gates, reward_signals
from engine.run import runner
from engine.spec.loader import load_domain
from tests.conftest import REPO
from tests.runtime_helpers import run_options

DOMAINS = ("airline", "retail")
SPECS = {name: REPO / "specs" / f"tau2_{name}_reward" for name in DOMAINS}


def _speaking(raw: Any, record: Mapping[str, Any] | None = None, language: str = "en") -> GoldTrace:
    """The gold calls, opened by an agent line saying every ``communicate_info`` value."""
    trace = actions_trace(raw, record, language)
    info = ((record or {}).get("evaluation_criteria") or {}).get("communicate_info") or []
    line = GoldStep("agent", text="Here is what you asked: " + "; ".join(str(v) for v in info) + ".")
    return GoldTrace((line, *trace.steps), trace.format)


def _run(name: str, speaking: bool, data_root: Path) -> dict[str, bool | str]:
    found = dict(plugins())
    if speaking:
        key = f"tau2_{name}"
        found[key] = dataclasses.replace(found[key], gold_adapters={"actions": _speaking})
    shm = Path("/dev/shm")
    where = Path(tempfile.mkdtemp(dir=shm if shm.is_dir() else None))
    try:
        opts = run_options(
            SPECS[name],
            data_root,
            plugins=found,
            output_dir=where / "run",
            concurrency=16,
            quiet=True,
            progress=False,
        )
        report = asyncio.run(runner.run(opts))
        return {o.scenario_name: o.is_successful for o in report.outcomes}
    finally:
        shutil.rmtree(where, ignore_errors=True)


@pytest.fixture(scope="module")
def verdicts(data_root: Path) -> dict[tuple[str, bool], dict[str, bool | str]]:
    """Per domain and agent (silent, speaking): every scenario's verdict, from full runs."""
    return {
        (name, speaking): _run(name, speaking, data_root) for name in DOMAINS for speaking in (False, True)
    }


def _communicate_tasks(name: str, data_root: Path) -> set[str]:
    loaded = load_domain(SPECS[name], data_root, plugins=plugins())
    return {
        s.name
        for s in loaded.scenarios
        if "COMMUNICATE" in (s.record["evaluation_criteria"].get("reward_basis") or [])
        and s.record["evaluation_criteria"].get("communicate_info")
    }


@pytest.mark.parametrize("name", DOMAINS)
def test_issue30_item2_the_gold_agent_that_says_the_information_passes_every_task(
    name: str, verdicts
) -> None:
    got = verdicts[(name, True)]
    assert len(got) == {"airline": 50, "retail": 114}[name]
    assert {n for n, v in got.items() if v is not True} == set()


@pytest.mark.parametrize("name", DOMAINS)
def test_issue30_item2_the_silent_gold_agent_fails_exactly_the_communicate_tasks(
    name: str, verdicts, data_root: Path
) -> None:
    failed = {n for n, v in verdicts[(name, False)].items() if v is not True}
    expected = _communicate_tasks(name, data_root)
    assert failed == expected
    # airline: 6 tasks list information to say; retail's reward basis never has COMMUNICATE
    assert len(expected) == {"airline": 6, "retail": 0}[name]


def test_issue30_item2_reward_basis_maps_to_signals_and_gates() -> None:
    both = {"evaluation_criteria": {"reward_basis": ["DB", "COMMUNICATE"]}}
    assert reward_signals(both) == ["db_state_match", "clean_exit"]
    assert reward_gates(both) == ["communicate_info"]
    retail = {"evaluation_criteria": {"reward_basis": ["DB", "NL_ASSERTION"]}}
    assert reward_signals(retail) == ["db_state_match", "nl_assertion", "clean_exit"]
    assert reward_gates(retail) is None
    telecom = {"evaluation_criteria": {"reward_basis": ["ENV_ASSERTION", "ACTION"]}}
    assert reward_signals(telecom) == ["db_state_assertion", "is_action_match", "clean_exit"]
    default = {"evaluation_criteria": {}}  # tau2's default basis: DB and COMMUNICATE
    assert (reward_signals(default), reward_gates(default)) == (
        ["db_state_match", "clean_exit"],
        ["communicate_info"],
    )
    with pytest.raises(ValueError, match="not a tau2 reward type"):
        reward_signals({"evaluation_criteria": {"reward_basis": ["VIBES"]}})
