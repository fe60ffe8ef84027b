"""Spec checks that used to let mistakes through (issue #10 §3, §4): YAML 1.1 keys, single-brace
placeholders, a data root one folder off, and a test run before the data exists."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engine.domains.registry import plugins
from engine.spec.loader import load_domain
from engine.util.errors import SpecError
from engine.util.yamlload import parse_yaml
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR, REPO


@pytest.mark.parametrize(
    ("key", "becomes"),
    [("yes", "True"), ("no", "False"), ("on", "True"), ("Off", "False"), ("12:30", "750"), ("017", "15")],
)
def test_unquoted_yaml11_keys_are_problems(key: str, becomes: str) -> None:
    doc = parse_yaml(f"decision_tree:\n  {key}: go\n  'quoted': fine\n  3: same text\n", "s.yaml")
    (problem,) = doc.problems
    assert problem.line == 2 and becomes in doc.data["decision_tree"]
    assert f"unquoted key {key!r} is not text in YAML (the key becomes {becomes!r})" in problem.message


def test_a_yes_no_decision_tree_fails_validation(tmp_path: Path) -> None:
    spec = tmp_path / "mock"
    shutil.copytree(MOCK_SPEC_DIR, spec)
    scenario = spec / "scenarios" / "cancel.yaml"
    text = scenario.read_text()
    assert "\nuser:" not in text
    scenario.write_text(text + "user:\n  decision_tree:\n    yes: accept the refund\n    no: ask again\n")
    first = text.count("\n") + 3
    with pytest.raises(SpecError) as info:
        load_domain(spec, MOCK_DATA_ROOT, plugins=plugins())
    found = [p for p in info.value.problems if "decision_tree" in p.json_path]
    assert [p.line for p in found] == [first, first + 1] and all(
        "is not text in YAML" in p.message for p in found
    )


@pytest.mark.parametrize("name", ["current_date", "policy_instructions", "user", "agent_notes"])
def test_single_brace_placeholders_of_context_variables_are_problems(tmp_path: Path, name: str) -> None:
    spec = tmp_path / "mock"
    shutil.copytree(MOCK_SPEC_DIR, spec)
    body = (spec / "mock_agent.md.j2").read_text()
    lines = body.count("\n")
    (spec / "mock_agent.md.j2").write_text(body + f'Today: {{{name}}}. JSON: {{"a": {{b}}, "x": 1}}\n')
    with pytest.raises(SpecError) as info:
        load_domain(spec, MOCK_DATA_ROOT, plugins=plugins())
    (problem,) = info.value.problems
    assert problem.file.endswith("agent.md.j2") and problem.line == lines + 1
    assert f"'{{{name}}}' is a single-brace placeholder, rendered literally" in problem.message


@pytest.mark.parametrize(
    "paths", [[], ["tests/domains/eva_airline/test_predicates.py"], ["tests/unit/gold", "tests/project"]],
    ids=["whole-suite", "a-domain-file", "unit-and-more"],
)  # fmt: skip
def test_make_test_without_data_is_one_line(tmp_path: Path, paths: list[str]) -> None:
    """The whole suite, or any selection beyond tests/unit/, stops at once without the data (the unit
    tests alone run: tests/project/test_unit_tests_need_no_data.py)."""
    env = {**os.environ, "EVAL_DATA_ROOT": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *paths],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,  # generous: a pytest start that exits at once
    )
    assert out.returncode == 2
    assert f"no eva data under {tmp_path.resolve()}: run `make setup` first" in out.stdout + out.stderr
    assert "error" not in (out.stdout + out.stderr).lower().replace("errors", "")


@pytest.fixture
def mock_copy(tmp_path: Path) -> Path:
    spec = tmp_path / "spec"
    shutil.copytree(REPO / "tests" / "mock_domain" / "spec", spec)
    return spec


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


MOCK_DATA = REPO / "tests" / "mock_domain" / "dataroot"


@pytest.mark.parametrize(
    ("old", "new", "where", "message"),
    [
        (
            "order_id: O-100}",
            "order_idd: O-100}",
            "$.reference_answer[0].order_idd",
            "tool 'cancel_order' has no argument 'order_idd' (did you mean 'order_id'?)",
        ),
        (
            "{action_type: cancel_order,",
            "{action_type: cancel_ordr,",
            "$.reference_answer[0].action_type",
            "no tool records action_type 'cancel_ordr' (did you mean 'cancel_order'?)",
        ),
    ],
)
def test_reference_answers_name_real_tools_and_arguments(mock_copy, old, new, where, message) -> None:
    _edit(mock_copy / "scenarios" / "cancel.yaml", old, new)
    with pytest.raises(SpecError) as info:
        load_domain(mock_copy, MOCK_DATA, plugins=plugins())
    (problem,) = info.value.problems
    assert (problem.json_path, problem.message) == (where, message)


@pytest.mark.parametrize(
    ("old", "new", "note"),
    [
        (
            "assert_value: cancelled}",
            "assert_value: canceled}",
            "fails db_state_assertion order_status: got 'cancelled', expected 'canceled'",
        ),
        (
            "order_id: O-100}\nmatch_options",
            "order_id: O-101}\nmatch_options",
            "do not match its reference_answer (is_action_match)",
        ),
    ],
)
def test_validate_scores_each_gold_on_its_own_signals(mock_copy, old, new, note) -> None:
    from engine.domains.registry import plugins
    from engine.spec.validate import validate_specs

    _edit(mock_copy / "scenarios" / "cancel.yaml", old, new)
    report = validate_specs(mock_copy, MOCK_DATA, plugins=plugins())
    assert not report.ok and [r.scenario_name for r in report.replay_failures] == ["mock__cancel_order"]
    (failure,) = report.replay_failures
    assert failure.actual_hash == failure.expected_hash and note in (failure.error or "")
    assert any("gold replay failed its own checks [mock__cancel_order]" in line for line in report.lines())


def test_scenarios_are_chosen_by_name_or_record_id() -> None:
    from engine.results.rundir import select_scenarios
    from engine.util.errors import UsageError

    loaded = load_domain(MOCK_SPEC_DIR, MOCK_DATA_ROOT, plugins=plugins())
    chosen = select_scenarios(loaded.scenarios, ("M1", "mock__shipped_refusal", "M1"), None)
    assert [s.name for s in chosen] == ["mock__cancel_order", "mock__shipped_refusal"]
    assert loaded.scenario("M1").name == "mock__cancel_order"
    # a name made of the domain and a record id suggests that record's scenario
    with pytest.raises(UsageError) as info:
        select_scenarios(loaded.scenarios, ("mock__M2",), None)
    assert (
        str(info.value)
        == "no scenario named 'mock__M2' (did you mean 'mock__late_delivery_credit', record 'M2'?)"
    )


def test_diff_paths_are_positions_in_the_files() -> None:
    from engine.core.dbdiff import db_diff
    from engine.core.model import HashRules

    rules = HashRules(("session",), ("bookings",))
    a = {"journey_id": "A", "status": "confirmed", "seat": "21A"}
    b = {"journey_id": "B", "status": "confirmed", "seat": "14C"}
    expected = {"res": {"Z": {"bookings": [a, b]}}}
    final = {"res": {"Z": {"bookings": [b, {**a, "status": "cancelled"}]}}}
    (line,) = db_diff(expected, final, rules)
    # before: paths indexed the sorted lists; A is bookings[0] in expected_db.json, [1] in final_db.json
    assert (line.path, line.final_path) == ("res.Z.bookings[0].status", "res.Z.bookings[1].status")
    assert str(line) == (
        "res.Z.bookings[0].status (final_db.json: res.Z.bookings[1].status): "
        "expected 'confirmed', got 'cancelled'"
    )
    assert expected["res"]["Z"]["bookings"][0]["status"] == line.expected
    assert db_diff(expected, {"res": {"Z": {"bookings": [b, a]}}}, rules) == []  # moved, never "missing"


def test_predicate_on_the_user_side_is_a_spec_problem(tmp_path: Path) -> None:
    import shutil

    from engine.domains.registry import plugins
    from engine.spec.loader import load_domain
    from engine.util.errors import SpecError

    mock = REPO / "tests" / "mock_domain"
    spec = tmp_path / "spec"
    shutil.copytree(mock / "spec", spec)
    cancel = spec / "scenarios" / "cancel.yaml"
    text = cancel.read_text(encoding="utf-8")
    cancel.write_text(text.replace("side: agent}", "side: user}"), encoding="utf-8")
    # before: valid; every run failed the assertion with 'no user DB for this session'
    with pytest.raises(SpecError) as info:
        load_domain(spec, mock / "dataroot", plugins=plugins())
    (problem,) = info.value.problems
    assert problem.json_path == "$.db_state_assertions[credit_balance].side"
    assert "domain mock has no user-side DB" in problem.message
