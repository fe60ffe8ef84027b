"""A domain is a spec folder + a data release + a handler package, with no engine edit.

This test writes all three into a temporary folder: a tiny phone-support domain whose caller has a
device with a tool of its own and a user-side DB, a sync step that ties the line's status to the
device's signal, a ``side: user`` assertion, gold actions in the ``actions`` format with both
requestors and an expected DB computed from them. It validates the spec and runs it end to end over
the protocol with the built-in replay sides.
"""

from __future__ import annotations

import importlib
import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from engine.core.render import render_agent_prompt, render_user_prompt
from engine.run.runner import RunOptions, run
from engine.spec.loader import load_domain
from engine.spec.validate import validate_specs
from engine.util.errors import SpecError

PLUGIN_CODE = """
from engine.core.plugin import DomainPlugin
from engine.core.tools.context import error


def reset_line(db, args, ctx):
    line = db["lines"].get(args["line_id"])
    if line is None:
        return error("not_found", "no such line")
    line["status"] = "active"
    return {"status": "success", "line": dict(line)}


def toggle_airplane(db, args, ctx):
    db["device"]["airplane"] = bool(args["on"])
    return {"status": "success", "airplane": db["device"]["airplane"]}


def sync(agent_db, user_db):
    line = agent_db["lines"][user_db["device"]["line_id"]]
    ok = line["status"] == "active" and not user_db["device"]["airplane"]
    user_db["device"]["signal"] = "ok" if ok else "none"


PLUGIN = DomainPlugin(
    name="phone",
    handlers={"reset_line": reset_line, "toggle_airplane": toggle_airplane},
    predicates={
        "signal": lambda db: db["device"]["signal"],
        "line_status": lambda db, line_id: db["lines"][line_id]["status"],
    },
    sync=sync,
)
"""

DOMAIN = """
name: phone
description: A caller whose phone has no signal; the line must be reactivated and airplane mode off.
max_duration: 60
success_signals: [db_state_match, db_state_assertion, clean_exit]
dataset: {path: phone-1.0/tasks.json, key: id}
initial_db: {file: phone-1.0/carrier.json}
user_db: {file: phone-1.0/device.json}
expected_db: {from: gold_replay}
gold_trace: {pointer: /actions, format: actions}
record_fields: {db_state_assertions: /assertions}
user: {persona: /persona, goal: /goal, starting_utterance: /opening}
policy: {role: You are a carrier's support agent., instructions: Reactivate suspended lines.}
tool_table: tools.yaml
user_tool_table: user_tools.yaml
templates: {agent: agent.md.j2, user: user.md.j2, judge: judge.md.j2}
"""

TOOLS = """
tools:
  - name: reset_line
    kind: write
    handler: reset_line
    action_type: reset_line
    writes: ["/lines/{line_id}"]
    description: Reactivate a line.
    parameters: {type: object, properties: {line_id: {type: string}}, required: [line_id]}
  - name: end_conversation
    kind: harness
    handler: end_conversation
    ends_call: exit
    description: Hang up.
    parameters: {type: object, properties: {}, required: []}
"""

USER_TOOLS = """
tools:
  - name: toggle_airplane
    kind: write
    handler: toggle_airplane
    action_type: toggle_airplane
    writes: [/device]
    description: Turn airplane mode on or off.
    parameters: {type: object, properties: {"on": {type: boolean}}, required: ["on"]}
"""

TASKS = [
    {
        "id": "P1",
        "persona": "Brief.",
        "goal": "Get a signal back.",
        "opening": "My phone has no signal.",
        "actions": [
            {"requestor": "user", "name": "toggle_airplane", "arguments": {"on": False}},
            {"requestor": "assistant", "name": "reset_line", "arguments": {"line_id": "L1"}},
        ],
        "assertions": [
            {"side": "user", "func_name": "signal", "arguments": {}, "assert_value": "ok"},
            {
                "side": "agent",
                "func_name": "line_status",
                "arguments": {"line_id": "L1"},
                "assert_value": "active",
            },
        ],
    }
]


@pytest.fixture
def phone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, dict]:
    pkg = tmp_path / "site" / "phone_domain"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(PLUGIN_CODE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    module = importlib.import_module("phone_domain")
    monkeypatch.delitem(sys.modules, "phone_domain")
    spec = tmp_path / "specs" / "phone"
    (spec / "scenarios").mkdir(parents=True)
    (spec / "domain.yaml").write_text(DOMAIN, encoding="utf-8")
    (spec / "tools.yaml").write_text(TOOLS, encoding="utf-8")
    (spec / "user_tools.yaml").write_text(USER_TOOLS, encoding="utf-8")
    (spec / "agent.md.j2").write_text("{{ policy_role }} {{ policy_instructions }}\n", encoding="utf-8")
    (spec / "user.md.j2").write_text("{{ user.persona }} {{ user.goal }}\n", encoding="utf-8")
    scenario = "name: phone__no_signal\nid: P1\ndescription: Airplane mode on and a suspended line.\n"
    (spec / "scenarios" / "p1.yaml").write_text(scenario, encoding="utf-8")
    data = tmp_path / "data" / "phone-1.0"
    data.mkdir(parents=True)
    (data / "tasks.json").write_text(json.dumps(TASKS), encoding="utf-8")
    (data / "carrier.json").write_text(
        json.dumps({"lines": {"L1": {"status": "suspended"}}}), encoding="utf-8"
    )
    device = {"device": {"line_id": "L1", "airplane": True, "signal": "none"}}
    (data / "device.json").write_text(json.dumps(device), encoding="utf-8")
    return spec, tmp_path / "data", {"phone": module.PLUGIN}


def test_the_domain_validates_with_its_own_plugin(phone) -> None:
    spec, data, plugins = phone
    scenario = load_domain(spec, data, plugins=plugins).scenario("phone__no_signal")
    assert scenario.user_tools is not None and scenario.user_tools.names == ("toggle_airplane",)
    assert [(s.side, s.tool) for s in scenario.gold_trace] == [
        ("user", "toggle_airplane"),
        ("agent", "reset_line"),
    ]
    assert scenario.expected_db == {"lines": {"L1": {"status": "active"}}}  # the gold actions' end state
    report = validate_specs(spec, data, plugins=plugins)
    assert report.ok and len(report.replay) == 1, report.lines()
    with pytest.raises(SpecError, match="no domain plugin named 'phone'"):
        load_domain(spec, data, plugins={})


def test_list_shows_the_record_id_under_id(phone, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    from engine.commands import library
    from engine.commands import list as list_verb

    spec, data, plugins = phone
    monkeypatch.setattr(library, "plugins", lambda: plugins)  # as if the package were registered
    assert list_verb.list_scenarios(spec, data, as_json=True) == 0
    assert json.loads(capsys.readouterr().out) == [
        {"name": "phone__no_signal", "id": "P1", "description": "Airplane mode on and a suspended line."}
    ]
    assert list_verb.list_scenarios(spec, data) == 0
    assert capsys.readouterr().out.split()[:2] == ["phone__no_signal", "P1"]


async def test_a_dual_side_session_runs_end_to_end(phone, tmp_path: Path) -> None:
    spec, data, plugins = phone
    out = tmp_path / "run"
    report = await run(RunOptions(spec, data, plugins=plugins, output_dir=out, progress=False, quiet=True))
    assert report.summary is not None
    sdir = out / "phone__no_signal"
    metrics = json.loads((sdir / "metrics.json").read_text())
    assert metrics["is_successful"] is True and metrics["stop_reason"] == "exit", metrics["success_breakdown"]
    assert metrics["record_id"] == "P1" and "eva_id" not in metrics  # the spec says `id:`, not `eva_id:`
    assert [v["passed"] for v in metrics["db_state_assertion_verdicts"]] == [True, True]
    calls = json.loads((sdir / "tool_calls.json").read_text())
    assert [(c["name"], c.get("side", "agent")) for c in calls] == [
        ("toggle_airplane", "user"),
        ("reset_line", "agent"),
        ("end_conversation", "agent"),
    ]
    user_db = json.loads((sdir / "final_user_db.json").read_text())
    assert user_db["device"] == {"line_id": "L1", "airplane": False, "signal": "ok"}  # synced after the reset
    config = json.loads((sdir / "scenario_config" / "tools.json").read_text())
    assert [t["function"]["name"] for t in config] == ["reset_line", "end_conversation"]


def test_generated_scenarios_extends_toml_and_text_policy(phone) -> None:
    """A variant spec folder that extends the phone domain, generates its scenarios from the
    dataset (ids from a TOML file), and reads its policy from Markdown files."""
    spec, data, plugins = phone
    release = data / "phone-1.0"
    (release / "tasks.json").write_text(json.dumps([*TASKS, {**TASKS[0], "id": "P-2", "goal": "Second."}]))
    (release / "split.toml").write_text('base = ["P-2", "P1"]\n', encoding="utf-8")
    (release / "policy.md").write_text("# Policy\nBe brief.\n", encoding="utf-8")
    (release / "manual.md").write_text("Reset lines first.\n", encoding="utf-8")
    variant = spec.parent / "phone_manual"
    variant.mkdir()
    (variant / "domain.yaml").write_text(
        "extends: ../phone\n"
        "name: phone_manual\n"
        "plugin: phone\n"
        "description: The phone domain with its policy read from the manual.\n"
        "policy: {files: [phone-1.0/policy.md, phone-1.0/manual.md]}\n"
        "scenarios: {name: 'phone_manual__{id}', description: /goal,\n"
        "            ids: {file: phone-1.0/split.toml, pointer: /base}}\n",
        encoding="utf-8",
    )
    loaded = load_domain(variant, data, plugins=plugins)
    assert loaded.names == ("phone_manual__P_2", "phone_manual__P1")
    assert [s.description for s in loaded.scenarios] == ["Second.", "Get a signal back."]
    assert loaded.domain.policy_instructions == "# Policy\nBe brief.\n\nReset lines first."
    assert loaded.domain.tools.names == ("reset_line", "end_conversation")  # the parent's table
    assert loaded.domain.parent_dirs == (spec.resolve(),)
    (variant / "domain.yaml").write_text(
        (variant / "domain.yaml").read_text().replace("pointer: /base", "pointer: /nope"), encoding="utf-8"
    )
    with pytest.raises(SpecError, match=r"split.toml has no list at /nope"):
        load_domain(variant, data, plugins=plugins)


def _checks(record):
    """A derive function: the record's ``{on: phone|carrier, func_name, arguments, expect}`` checks
    as db_state_assertions on the side they read."""
    sides = {"phone": "user", "carrier": "agent"}
    return [
        {
            "func_name": c["func_name"],
            "arguments": c["arguments"],
            "assert_value": c["expect"],
            "side": sides[c["on"]],
        }
        for c in record["checks"]
    ]


def test_derived_assertions_of_both_sides_are_counted_on_the_gold(phone) -> None:
    spec, data, plugins = phone
    plugins = {"phone": replace(plugins["phone"], derive={"checks": _checks})}
    checks = [
        {"on": "phone", "func_name": "signal", "arguments": {}, "expect": "ok"},
        {"on": "carrier", "func_name": "line_status", "arguments": {"line_id": "L1"}, "expect": "active"},
    ]
    tasks = data / "phone-1.0" / "tasks.json"
    tasks.write_text(json.dumps([{**TASKS[0], "checks": checks}]), encoding="utf-8")
    domain = spec / "domain.yaml"
    domain.write_text(
        domain.read_text().replace(
            "record_fields: {db_state_assertions: /assertions}",
            "record_fields: {db_state_assertions: {derive: checks}}",
        ),
        encoding="utf-8",
    )
    scenario = load_domain(spec, data, plugins=plugins).scenario("phone__no_signal")
    assert [(a["func_name"], a["side"], a["assert_value"]) for a in scenario.db_state_assertions] == [
        ("signal", "user", "ok"),
        ("line_status", "agent", "active"),
    ]
    report = validate_specs(spec, data, plugins=plugins)
    assert report.ok and (report.assertions_held, report.assertions) == (2, 2), report.lines()
    assert report.summary().endswith("gold replay 1/1, 2/2 assertions hold on the gold")
    tasks.write_text(
        json.dumps([{**TASKS[0], "checks": [{**checks[0], "expect": "none"}]}]), encoding="utf-8"
    )
    report = validate_specs(spec, data, plugins=plugins)
    assert not report.ok and report.lines()[-1].endswith("gold replay 0/1, 0/1 assertions hold on the gold")
    assert (
        "  the gold's end state fails db_state_assertion signal: got 'ok', expected 'none'" in report.lines()
    )


def test_generated_ids_of_any_text_and_text_files_as_template_variables(phone) -> None:
    """tau2-like records: ids with '|' (never a file name), a null persona, no opening line; the
    templates compose the policy files and quote a text file of the data root, each a template
    variable of its own."""
    spec, data, plugins = phone
    release = data / "phone-1.0"
    second = {**TASKS[0], "id": "P|3", "persona": None}
    del second["opening"]
    (release / "tasks.json").write_text(json.dumps([TASKS[0], second]), encoding="utf-8")
    (release / "policy.md").write_text("Main rules.\n", encoding="utf-8")
    (release / "manual.md").write_text("Manual.", encoding="utf-8")
    (release / "guide.md").write_text("Play a caller.", encoding="utf-8")
    variant = spec.parent / "phone_gen"
    variant.mkdir()
    (variant / "agent.md.j2").write_text("<a>{{ rules }}</a><b>{{ manual }}</b>\n")
    (variant / "user.md.j2").write_text("{{ guide }}|{{ user.persona }}|{{ user.starting_utterance }}\n")
    yaml_text = (
        "extends: ../phone\n"
        "name: phone_gen\n"
        "plugin: phone\n"
        "scenarios: {name: '{domain}__{id}'}\n"
        "user: {persona: /persona, goal: /goal}\n"
        "policy: {files: [phone-1.0/policy.md, phone-1.0/manual.md]}\n"
        "template_variables:\n"
        "  agent: {rules: {file: phone-1.0/policy.md}, manual: {file: phone-1.0/manual.md}}\n"
        "  user: {guide: {file: phone-1.0/guide.md}}\n"
    )
    (variant / "domain.yaml").write_text(yaml_text, encoding="utf-8")
    loaded = load_domain(variant, data, plugins=plugins)
    assert loaded.names == ("phone_gen__P1", "phone_gen__P_3")
    scenario = loaded.scenario("phone_gen__P_3")
    assert scenario.record_id == "P|3" and (scenario.user.persona, scenario.user.starting_utterance) == (
        "",
        "",
    )
    assert render_agent_prompt(scenario) == "<a>Main rules.\n</a><b>Manual.</b>\n"  # the files as they are
    assert render_user_prompt(scenario) == "Play a caller.||\n"
    assert loaded.domain.policy_instructions == "Main rules.\n\nManual."
    missing = yaml_text.replace("guide.md}}", "guides.md}}")
    (variant / "domain.yaml").write_text(missing, encoding="utf-8")
    with pytest.raises(SpecError) as err:
        load_domain(variant, data, plugins=plugins)
    assert {str(p).split(": ", 1)[1] for p in err.value.problems} == {
        "$.template_variables.user: template_variables.user.guide file "
        f"phone-1.0/guides.md not found in data root {data} [{name}]"
        for name in ("phone_gen__P1", "phone_gen__P_3")
    }
    clash = yaml_text.replace("{guide: {file:", "{tools: {file:")
    (variant / "domain.yaml").write_text(clash, encoding="utf-8")
    with pytest.raises(SpecError, match="the user template variables may not replace the engine's: tools"):
        load_domain(variant, data, plugins=plugins)
    (variant / "domain.yaml").write_text(yaml_text + "initial_db: {file: 'phone-1.0/{id}.json'}\n")
    with pytest.raises(SpecError) as err:
        load_domain(variant, data, plugins=plugins)
    assert [p.message for p in err.value.problems if p.subject == "phone_gen__P_3"] == [
        "initial_db file: record id 'P|3' cannot name a file (letters, digits, '.', '_' and '-', "
        "starting with a letter or digit)"
    ]
