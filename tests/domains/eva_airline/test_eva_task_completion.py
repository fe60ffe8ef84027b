"""eva's task-completion check (issue #10 §2): upstream's verdict also compares the caller session
get_reservation leaves (who was authenticated, with which last name) with the gold's. evalctl
keeps it a diagnostic (``authenticated``) and gates on it only when a spec asks
(``gate_diagnostics: [authenticated]``)."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from engine.core.options import ScoringOptions
from engine.core.plugin import DiagnosticInputs
from engine.domains.eva_airline.diagnostics import authenticated
from engine.domains.registry import plugins
from engine.results.scoring_stage import finish_session
from engine.session.backends.replay import ReplayFactory
from engine.spec.loader import load_domain
from engine.util.errors import SpecError
from tests.conftest import SPEC_DIR
from tests.mock_domain.eva_fixtures import eva_scenario, expected_copy, session
from tests.runtime_helpers import alter_gold_call, session_between

NAME = "eva_airline__voluntary_date_change"  # eva 1.1.2


@pytest.fixture(scope="module")
def sc(data_root):
    return eva_scenario(data_root, "1.1.2")


def _spec(tmp_path: Path, gate: bool) -> Path:
    spec = tmp_path / ("gated" if gate else "plain")
    shutil.copytree(SPEC_DIR, spec)
    if gate:
        scenario = spec / "scenarios" / "1.1.2.yaml"
        scenario.write_text(scenario.read_text() + "gate_diagnostics: [authenticated]\n")
    return spec


@pytest.mark.parametrize(("gate", "passes"), [(False, True), (True, False)])
async def test_an_empty_last_name_matches_the_hash_but_fails_the_gate(
    tmp_path: Path, data_root: Path, gate: bool, passes: bool
) -> None:
    scenario = load_domain(_spec(tmp_path, gate), data_root, plugins=plugins()).scenario(NAME)
    # the agent authenticates with last_name "" (eva accepts it without a name check)
    unnamed = alter_gold_call(
        scenario.gold_trace,
        "get_reservation",
        lambda s: replace(s, arguments={**s.arguments, "last_name": ""}),
    )
    agent = ReplayFactory({NAME: replace(scenario, gold_trace=unnamed)})
    result = await session_between(scenario, agent, ReplayFactory({NAME: scenario}))
    metrics = await finish_session(tmp_path / "run", scenario, result, 1, ScoringOptions())
    assert metrics.signals.db_state_match is True  # the session record is not part of the hash
    assert metrics.signals.diagnostics["authenticated"] is False
    assert metrics.is_successful is passes
    assert ("authenticated" in metrics.success_breakdown.failed) is gate


def test_a_gate_must_be_a_diagnostic_of_the_domain(tmp_path: Path, data_root: Path) -> None:
    spec = _spec(tmp_path, True)
    scenario = spec / "scenarios" / "1.1.2.yaml"
    scenario.write_text(scenario.read_text().replace("[authenticated]", "[authenticatd]"))
    with pytest.raises(SpecError) as info:
        load_domain(spec, data_root, plugins=plugins())
    (problem,) = info.value.problems
    assert problem.json_path == "$.gate_diagnostics[0]"
    assert problem.message == (
        "'authenticatd' is not a diagnostic of domain eva_airline (did you mean 'authenticated'?)"
    )


def test_a_count_diagnostic_cannot_gate(tmp_path: Path, data_root: Path) -> None:
    """A count is 0 when clean: as a verdict it would fail every clean session and pass a leaky one."""
    spec = _spec(tmp_path, True)
    scenario = spec / "scenarios" / "1.1.2.yaml"
    scenario.write_text(scenario.read_text().replace("[authenticated]", "[authenticated, leaked_tool_text]"))
    with pytest.raises(SpecError) as info:
        load_domain(spec, data_root, plugins=plugins())
    (problem,) = info.value.problems
    assert problem.json_path == "$.gate_diagnostics[1]"
    assert problem.message == (
        "'leaked_tool_text' counts findings (0 = clean) and cannot gate; the summary reports it as a count"
    )


def test_authenticated_diagnostic(sc):
    good = expected_copy(sc)
    good["session"] = {"confirmation_number": "ZK3FFW", "last_name": "rodriguez"}
    gold = {"session": {"confirmation_number": "ZK3FFW", "last_name": "Rodriguez"}}

    def diag(final_db, gold_db):
        return authenticated(DiagnosticInputs(sc, session(sc, final_db), gold_db))

    assert diag(good, gold) is True
    unauthenticated = expected_copy(sc)
    del unauthenticated["session"]  # eva's expected DBs carry the session get_reservation wrote
    assert diag(unauthenticated, gold) is False
    assert diag(good, None) is None
