"""specs/tau2_telecom and specs/tau2_telecom_workflow on the real data: the generated scenarios, the
prompts, the tool tables, the record-derived scoring fields, validation, and the engine's gold
replay against the oracle (tau2 17e07b1's own results) in both sync placements.

The engine replays gold the way a session runs (the plugin's set-up step, then every gold action on
its side through the tool tables, a sync after every successful call): that is the oracle's
*synced* end state for all 114 tasks. Syncing only once at the end (tau2's evaluator) differs in the
6 tasks whose gold pays an overdue bill; docs/domains/tau2_telecom.md explains why.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import fields
from typing import Any

import pytest

from engine.core.model import Scenario
from engine.core.render import render_agent_prompt, render_user_prompt
from engine.domains.registry import plugins
from engine.domains.tau2_telecom import AGENT_WRITES, USER_WRITES, tau2_content, tau2_hash
from engine.domains.tau2_telecom.scenario import action_reference, env_assertions, nl_assertions
from engine.spec.gold_replay import replay_scenario, replay_trace
from engine.spec.validate import validate_specs
from engine.util.yamlload import load_yaml
from tests.domains.tau2_telecom.conftest import MANUAL_SPEC, WORKFLOW_SPEC, Specs, Telecom

TELECOM = "tau2-17e07b1/data/tau2/domains/telecom"


def _raw(telecom: Telecom, rel: str) -> str:
    return (telecom.root / rel).read_text(encoding="utf-8")


def _task(telecom: Telecom, scenario: Scenario) -> dict[str, Any]:
    return next(t for t in telecom.tasks if t["id"] == scenario.record_id)


def test_both_specs_generate_the_114_base_tasks(telecom: Telecom, specs: Specs) -> None:
    split = json.loads(_raw(telecom, f"{TELECOM}/split_tasks.json"))["base"]
    assert len(split) == 114 and set(split) == {t["id"] for t in telecom.tasks}
    for loaded, prefix in ((specs.manual, "tau2_telecom__"), (specs.workflow, "tau2_telecom_workflow__")):
        assert [s.record_id for s in loaded.scenarios] == split
        assert list(loaded.names) == [prefix + re.sub(r"[^A-Za-z0-9_]", "_", i) for i in split]
        assert len(set(loaded.names)) == 114
    first = specs.manual.scenarios[0]
    assert first.description == _task(telecom, first)["description"]["purpose"]


def test_the_workflow_variant_changes_only_the_policy(telecom: Telecom, specs: Specs) -> None:
    manual_doc, workflow_doc = (
        load_yaml(MANUAL_SPEC / "domain.yaml").data,
        load_yaml(WORKFLOW_SPEC / "domain.yaml").data,
    )
    assert set(workflow_doc) == {"extends", "name", "policy", "template_variables"}
    assert workflow_doc["template_variables"]["user"] == manual_doc["template_variables"]["user"]
    manual, workflow = specs.manual.domain, specs.workflow.domain
    own = {"name", "spec_dir", "source", "extra", "parent_dirs", "policy_instructions"}
    for f in fields(manual):
        if f.name not in own:
            assert getattr(manual, f.name) == getattr(workflow, f.name), f.name
    assert workflow.parent_dirs == (MANUAL_SPEC.resolve(),)
    main = _raw(telecom, f"{TELECOM}/main_policy.md")
    for loaded, second in (
        (specs.manual, "tech_support_manual.md"),
        (specs.workflow, "tech_support_workflow.md"),
    ):
        tech = _raw(telecom, f"{TELECOM}/{second}")
        assert loaded.domain.policy_instructions == f"{main}\n\n{tech}"
        for scenario in (loaded.scenarios[0], loaded.scenarios[-1]):
            assert scenario.template_variables["agent"] == {"main_policy": main, "tech_support_policy": tech}
    for mine, theirs in zip(specs.manual.scenarios, specs.workflow.scenarios, strict=True):
        assert (mine.record, mine.db_state_assertions, mine.reference_answer, mine.gold_trace) == (
            theirs.record,
            theirs.db_state_assertions,
            theirs.reference_answer,
            theirs.gold_trace,
        )
        assert mine.template_variables["user"] == theirs.template_variables["user"]


@pytest.mark.parametrize("variant", ["manual", "workflow"])
def test_the_agent_prompt_holds_the_policy_composed_as_tau2_composes_it(
    telecom: Telecom, specs: Specs, variant: str
) -> None:
    """tau2 17e07b1 telecom ``get_environment``: the main policy, then the manual or workflow, each in
    its own tag, one newline between them (the text files are read as they are)."""
    second = "tech_support_manual.md" if variant == "manual" else "tech_support_workflow.md"
    policy = (
        "<main_policy>\n"
        + _raw(telecom, f"{TELECOM}/main_policy.md")
        + "\n</main_policy>\n<tech_support_policy>\n"
        + _raw(telecom, f"{TELECOM}/{second}")
        + "\n</tech_support_policy>"
    )
    scenario = getattr(specs, variant).scenarios[0]
    prompt = render_agent_prompt(scenario)
    assert f"<policy>\n{policy}\n</policy>" in prompt
    assert "end_conversation" in prompt


def test_the_user_prompt_is_tau2s_tool_guidelines_then_the_task_scenario(
    telecom: Telecom, specs: Specs
) -> None:
    guidelines = _raw(telecom, "tau2-17e07b1/data/tau2/user_simulator/simulation_guidelines_tools.md")
    personas = 0
    for scenario in specs.manual.scenarios:
        task = _task(telecom, scenario)
        prompt = render_user_prompt(scenario)
        instructions = task["user_scenario"]["instructions"]
        assert prompt.startswith(guidelines)
        assert "end_call" in prompt[len(guidelines) :]
        assert instructions["reason_for_call"].strip() in prompt
        assert instructions["task_instructions"].strip() in prompt
        assert instructions["known_info"].strip() in prompt
        persona = task["user_scenario"]["persona"]
        assert ("Persona:" in prompt) == (persona is not None) and "None" not in prompt.split("<scenario>")[1]
        if persona is not None:
            personas += 1
            assert persona.strip() in prompt
    assert personas == 74


def _schemas(telecom: Telecom, domain: str) -> list[dict[str, Any]]:
    listing = json.loads(_raw(telecom, "tau2-17e07b1/derived/tool_schemas.json"))["domains"][domain]
    return [entry["function"] for entry in listing]


def test_tool_tables_are_tau2s_schemas_with_the_packages_writes(telecom: Telecom, specs: Specs) -> None:
    domain = specs.manual.domain
    assert domain.user_tools is not None
    for table, schemas, writes in (
        (domain.tools, _schemas(telecom, "telecom"), AGENT_WRITES),
        (domain.user_tools, _schemas(telecom, "telecom_user"), USER_WRITES),
    ):
        tools = [t for t in table.tools if t.kind != "harness"]
        assert [t.name for t in tools] == [s["name"] for s in schemas] == list(writes)
        for tool, schema in zip(tools, schemas, strict=True):
            parameters = {"required": [], **schema["parameters"]}  # the loader fills in `required`
            assert (tool.description, tool.parameters) == (schema["description"].strip(), parameters)
            assert tool.writes == writes[tool.name]
            assert tool.kind == ("system" if tool.ends_call else "write" if tool.writes else "read")
            assert tool.action_type == (None if tool.kind == "read" else tool.name)
    assert [(t.name, t.ends_call) for t in domain.tools.tools if t.ends_call] == [
        ("transfer_to_human_agents", "transfer"),
        ("end_conversation", "exit"),
    ]
    assert len(domain.tools.tools) == 14 and len(domain.user_tools.tools) == 30


def test_scoring_fields_come_from_the_tasks_evaluation_criteria(telecom: Telecom, specs: Specs) -> None:
    sides: Counter[tuple[str, str]] = Counter()
    references = 0
    for scenario in specs.manual.scenarios:
        criteria = _task(telecom, scenario)["evaluation_criteria"]
        assert [a["func_name"] for a in scenario.db_state_assertions] == [
            a["func_name"] for a in criteria["env_assertions"]
        ]
        for mine, theirs in zip(scenario.db_state_assertions, criteria["env_assertions"], strict=True):
            assert mine["arguments"] == theirs["arguments"] and mine["assert_value"] is True
            sides[theirs["env_type"], mine["side"]] += 1
        assert scenario.nl_assertions == ()
        if "ACTION" in criteria["reward_basis"]:
            references += 1
            assert scenario.reference_answer == [{"action_type": "transfer_to_human_agents"}]
        else:
            assert scenario.reference_answer is None
        assert scenario.success_signals == (
            "db_state_assertion",
            "is_action_match",
            "nl_assertion",
            "clean_exit",
        )
    assert sides == {("user", "user"): 150, ("assistant", "agent"): 59}
    assert references == 20


def _record(basis: list[str], **criteria: Any) -> dict[str, Any]:
    return {"evaluation_criteria": {"reward_basis": basis, **criteria}}


def test_the_derive_functions_refuse_what_evalctl_cannot_score() -> None:
    every = ["ENV_ASSERTION", "ACTION", "NL_ASSERTION"]
    with pytest.raises(ValueError, match="unknown env_type 'robot'"):
        env_assertions(
            _record(every, env_assertions=[{"env_type": "robot", "func_name": "assert_line_status"}])
        )
    with pytest.raises(ValueError, match="reads the user DB, not the agent DB"):
        env_assertions(
            _record(every, env_assertions=[{"env_type": "assistant", "func_name": "assert_service_status"}])
        )
    assert env_assertions(_record(every)) is None
    with pytest.raises(ValueError, match="toggle_data is the user's"):
        action_reference(
            _record(every, actions=[{"requestor": "user", "name": "toggle_data", "arguments": {}}])
        )
    gold = [
        {"requestor": "assistant", "name": "refuel_data", "arguments": {"line_id": "L1", "gb_amount": 2.0}}
    ]
    assert action_reference(_record(every, actions=gold)) == [
        {"action_type": "refuel_data", "line_id": "L1", "gb_amount": 2.0}
    ]
    assert action_reference(_record(every, actions=[{**gold[0], "compare_args": ["line_id"]}])) == [
        {"action_type": "refuel_data", "line_id": "L1"}
    ]
    assert action_reference(_record(["DB"], actions=gold)) is None
    claim = ["The agent apologised."]
    assert nl_assertions(_record(every, nl_assertions=claim)) == claim
    assert nl_assertions(_record([], nl_assertions=claim)) is None


@pytest.mark.parametrize("spec", [MANUAL_SPEC, WORKFLOW_SPEC], ids=["manual", "workflow"])
def test_validate_replays_every_gold_and_checks_every_assertion(telecom: Telecom, spec) -> None:
    report = validate_specs(spec, telecom.root, plugins=plugins())
    assert report.ok, report.lines()[:10]
    assert (len(report.replay), report.prompts) == (114, 228)
    assert (report.assertions_held, report.assertions) == (209, 209)
    assert report.summary().endswith("gold replay 114/114, 209/209 assertions hold on the gold")


def _oracle_hashes(telecom: Telecom, scenario: Scenario) -> tuple[str, str]:
    entry = telecom.oracle[scenario.record_id]
    return entry.get("synced_end_state_tau2_hash", entry["gold_end_state_tau2_hash"]), entry[
        "synced_end_state_tau2_user_hash"
    ]


def test_the_engines_gold_replay_is_the_oracles_synced_end_state(telecom: Telecom, specs: Specs) -> None:
    """Each scenario's expected DB and a fresh replay (set-up, gold actions through the tool tables,
    a sync after every call) end in the oracle's synced hashes, with every gold result tau2's."""
    ends = results = 0
    for scenario in specs.manual.scenarios:
        run = replay_scenario(scenario)
        assert run.user_db is not None and scenario.expected_db is not None
        agent, user = _oracle_hashes(telecom, scenario)
        ends += (tau2_hash(run.db, "agent"), tau2_hash(run.user_db, "user")) == (agent, user)
        assert tau2_hash(scenario.expected_db, "agent") == agent
        gold = telecom.oracle[scenario.record_id]["gold_responses"]
        assert [(s.tool, s.side) for s, _ in run.responses] == [
            (g["name"], "user" if g["requestor"] == "user" else "agent") for g in gold
        ]
        results += sum(
            tau2_content(result) == (g["error"], g["content"])
            for (_, result), g in zip(run.responses, gold, strict=True)
        )
    assert (ends, results) == (114, 516)


def test_a_sync_only_at_the_end_misses_the_six_payment_tasks(telecom: Telecom, specs: Specs) -> None:
    """The engine's other placement (``sync_each_call=False``: tau2's evaluator builds its gold
    environment that way) leaves the bill unpaid where the gold pays it: the phone never saw the
    payment request."""
    plugin = specs.manual.domain.plugin
    assert plugin is not None and plugin.sync is not None
    differing, results = set(), 0
    for scenario in specs.manual.scenarios:
        db, user_db = scenario.session_dbs()
        run = replay_trace(
            scenario.tools,
            db,
            scenario.gold_trace,
            user_table=scenario.user_tools,
            user_db=user_db,
            sync=plugin.sync,
            sync_each_call=False,
        )
        if (tau2_hash(run.db, "agent"), tau2_hash(run.user_db, "user")) != _oracle_hashes(telecom, scenario):
            differing.add(scenario.record_id)
        gold = telecom.oracle[scenario.record_id]["gold_responses"]
        results += sum(
            tau2_content(r) == (g["error"], g["content"])
            for (_, r), g in zip(run.responses, gold, strict=True)
        )
    payment = {
        t["id"]
        for t in telecom.tasks
        if any(a["name"] == "make_payment" for a in t["evaluation_criteria"]["actions"])
    }
    assert len(payment) == 6 and differing == payment
    assert results == 504
