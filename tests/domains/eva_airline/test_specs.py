"""The eva_airline specs load on the real eva data into frozen, typed records."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import yaml

from engine.domains.registry import plugins
from engine.spec.loader import LoadedDomain, load_domain
from tests.conftest import SPEC_DIR

SEEDS = {
    "1.1.2": "eva_airline__voluntary_date_change",
    "2.1.1": "eva_airline__irrops_cancellation",
    "3.1.3": "eva_airline__missed_flight_standby",
    "5.1.1": "eva_airline__cancellation_refund",
    "7.2.1": "eva_airline__escalation_edge_case",
}


def _dataset(data_root: Path) -> list[dict]:
    path = data_root / "eva-0.1.3/data/airline_dataset.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_fifty_scenarios_one_per_eva_id(loaded: LoadedDomain, data_root: Path) -> None:
    records = _dataset(data_root)
    assert len(loaded.scenarios) == 50
    assert sorted(s.record_id for s in loaded.scenarios) == sorted(r["id"] for r in records)
    for s in loaded.scenarios:
        expected = SEEDS.get(s.record_id, "eva_airline__" + s.record_id.replace(".", "_"))
        assert s.name == expected


def test_scenario_files_are_three_lines_of_our_own(loaded: LoadedDomain, data_root: Path) -> None:
    files = sorted((SPEC_DIR / "scenarios").glob("*.yaml"))
    assert len(files) == 50
    record_text = (data_root / "eva-0.1.3/data/airline_dataset.jsonl").read_text(encoding="utf-8")
    descriptions = set()
    for path in files:
        lines = path.read_text(encoding="utf-8").splitlines()
        assert lines[0] == "# yaml-language-server: $schema=../../../schemas/scenario.schema.json"
        data = yaml.safe_load("\n".join(lines))
        assert list(data) == ["name", "eva_id", "description"], path
        assert path.stem == data["eva_id"]
        assert "\n" not in data["description"] and data["description"] not in record_text
        descriptions.add(data["description"])
    assert len(descriptions) == 50


def test_every_spec_file_carries_its_schema_line() -> None:
    for name, schema in (("domain.yaml", "domain"), ("tools.yaml", "tools")):
        first = (SPEC_DIR / name).read_text(encoding="utf-8").splitlines()[0]
        assert first == f"# yaml-language-server: $schema=../../schemas/{schema}.schema.json"
        assert (SPEC_DIR / first.split("$schema=")[1]).resolve().is_file()


def test_seed_scenario_derives_from_data(loaded: LoadedDomain, data_root: Path) -> None:
    s = loaded.scenario("eva_airline__voluntary_date_change")
    initial = json.loads((data_root / "eva-0.1.3/data/airline_scenarios/1.1.2.json").read_text())
    record = next(r for r in _dataset(data_root) if r["id"] == "1.1.2")
    assert s.current_date == "2026-03-17" == initial["_current_date"]
    assert s.initial_db == initial
    assert s.expected_db == record["ground_truth"]["expected_scenario_db"]
    assert s.success_signals == ("db_state_match", "clean_exit")
    assert s.max_duration == 900.0
    assert s.user.name == "Samantha Rodriguez"
    assert s.user.starting_utterance == record["user_goal"]["starting_utterance"]
    assert s.user.decision_tree == record["user_goal"]["decision_tree"]
    assert s.user.extra["information_required"]["Booking confirmation number"] == "ZK3FFW"
    assert s.gold_trace is not None and s.gold_trace.steps[0].kind == "user"
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.name = "x"  # type: ignore[misc]
    fresh = s.fresh_db()
    fresh["reservations"].clear()
    assert s.initial_db["reservations"]


def test_domain_record(loaded: LoadedDomain, data_root: Path) -> None:
    d = loaded.domain
    config = yaml.safe_load((data_root / "eva-0.1.3/configs/agents/airline_agent.yaml").read_text())
    assert d.name == "eva_airline" and d.language == "en" and d.user_speaks_first
    assert d.policy_instructions == config["instructions"] and d.policy_role == config["role"]
    assert d.hash_rules.excluded_keys == ("session",)
    assert "standby_list" in d.hash_rules.unordered_lists and len(d.hash_rules.unordered_lists) == 6
    assert d.templates["agent"] == "agent.md.j2"


def test_tool_table_mirrors_upstream(loaded: LoadedDomain, data_root: Path) -> None:
    table = loaded.domain.tools
    config = yaml.safe_load((data_root / "eva-0.1.3/configs/agents/airline_agent.yaml").read_text())
    upstream = {t["id"]: t for t in config["tools"]}
    assert len(table.tools) == 16 and table.names[-1] == "end_conversation"
    kinds = {t.name: t.kind for t in table.tools}
    assert sorted(n for n, k in kinds.items() if k == "read") == sorted(
        ["get_reservation", "get_flight_status", "get_disruption_info", "search_rebooking_options"]
    )
    assert sum(k == "write" for k in kinds.values()) == 10
    assert kinds["transfer_to_agent"] == "system" and kinds["end_conversation"] == "harness"
    for tool in table.tools:
        assert tool.handler == tool.name
        if tool.kind == "write":
            assert tool.action_type == tool.name
        if tool.name in upstream:
            decl = upstream[tool.name]
            assert tool.description == decl["description"].strip()
            req = [p["name"] for p in decl.get("required_parameters", [])]
            opt = [p["name"] for p in decl.get("optional_parameters", [])]
            assert tool.parameters["required"] == req
            assert list(tool.parameters["properties"]) == req + opt
    enums = [(t.name, p) for t in table.tools for p, s in t.parameters["properties"].items() if "enum" in s]
    upstream_enums = [
        (t["id"], p["name"])
        for t in config["tools"]
        for p in t.get("required_parameters", []) + t.get("optional_parameters", [])
        if "enum" in p
    ]
    assert enums == upstream_enums and len(enums) >= 8
    issue_credit = table.get("issue_travel_credit")
    assert issue_credit is not None and issue_credit.parameters["properties"]["amount"]["type"] == "number"
    standby = table.get("add_to_standby")
    assert standby is not None
    assert standby.parameters["properties"]["passenger_ids"] == {
        "type": "array",
        "items": {"type": "string"},
        "description": upstream["add_to_standby"]["required_parameters"][2]["description"],
    }
    rebook = table.get("rebook_flight")
    assert rebook is not None and rebook.options == {"carry_over_fields": ["bags_checked", "meal_request"]}
    assert rebook.source.file.endswith("tools.yaml") and rebook.source.line > 1


def test_validate_specs_real(data_root: Path) -> None:
    from engine.domains.registry import plugins
    from engine.spec.validate import validate_specs

    report = validate_specs(SPEC_DIR, data_root, replay=True, plugins=plugins())
    assert report.ok and report.scenarios == 50 and report.prompts == 100
    assert len(report.replay) == 50 and report.summary().endswith("gold replay 50/50")
    # eva is scored without a judge: its judge prompts render, but no judge prompt count is claimed
    assert report.judge_prompts == 50 and report.judged == 0
    assert "100 prompts rendered (scored without a judge), gold replay" in report.summary()


def test_scenarios_are_chosen_by_name_or_record_id(data_root: Path) -> None:
    """Moved from tests/unit/specs/test_spec_checks.py (the mock version stays there)."""
    from engine.results.rundir import select_scenarios
    from engine.util.errors import UsageError

    loaded = load_domain(SPEC_DIR, data_root, plugins=plugins())
    chosen = select_scenarios(loaded.scenarios, ("1.1.2", "eva_airline__3_1_5", "1.1.2"), None)
    assert [s.name for s in chosen] == ["eva_airline__voluntary_date_change", "eva_airline__3_1_5"]
    assert loaded.scenario("1.1.2").name == "eva_airline__voluntary_date_change"
    # before: eva_airline__1_1_2 suggested eva_airline__5_1_2; it is 1.1.2's scenario
    with pytest.raises(UsageError) as info:
        select_scenarios(loaded.scenarios, ("eva_airline__1_1_2",), None)
    assert str(info.value) == (
        "no scenario named 'eva_airline__1_1_2' "
        "(did you mean 'eva_airline__voluntary_date_change', record '1.1.2'?)"
    )
