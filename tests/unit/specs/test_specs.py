"""The eva_airline specs load on the real eva data into frozen, typed records."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
import yaml

import cli
from engine.domains.registry import load_domain
from engine.errors import DataRootError, SpecError, UsageError
from engine.specs import LoadedDomain
from engine.yamlload import YamlSyntaxError, format_json_path, parse_yaml
from tests.conftest import SPEC_DIR

SEEDS = {
    "1.1.2": "eva_airline__voluntary_date_change",
    "2.1.1": "eva_airline__irrops_cancellation",
    "3.1.3": "eva_airline__missed_flight_standby",
    "5.1.1": "eva_airline__cancellation_refund",
    "7.2.1": "eva_airline__escalation_edge_case",
}


@pytest.fixture(scope="module")
def loaded(data_root: Path) -> LoadedDomain:
    return load_domain(SPEC_DIR, data_root)


def _dataset(data_root: Path) -> list[dict]:
    path = data_root / "eva-0.1.3/data/airline_dataset.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_fifty_scenarios_one_per_eva_id(loaded: LoadedDomain, data_root: Path) -> None:
    records = _dataset(data_root)
    assert len(loaded.scenarios) == 50
    assert sorted(s.eva_id for s in loaded.scenarios) == sorted(r["id"] for r in records)
    for s in loaded.scenarios:
        expected = SEEDS.get(s.eva_id, "eva_airline__" + s.eva_id.replace(".", "_"))
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


def test_unknown_scenario_suggests(loaded: LoadedDomain) -> None:
    with pytest.raises(UsageError, match="did you mean 'eva_airline__irrops_cancellation'"):
        loaded.scenario("eva_airline__irops_cancellation")


def test_missing_data_root_is_a_data_root_error(tmp_path: Path) -> None:
    with pytest.raises(DataRootError, match="make data"):
        load_domain(SPEC_DIR, tmp_path / "nowhere")


def test_a_data_root_without_the_releases_is_one_line(tmp_path: Path, data_root: Path) -> None:
    from engine.errors import DataRootError

    with pytest.raises(DataRootError) as info:  # before: one problem per file the domain reads
        load_domain(SPEC_DIR, tmp_path)
    assert str(info.value) == (
        f"data root {tmp_path} holds none of the releases eva_airline reads (eva-0.1.3, eva-2.1.0)"
    )
    with pytest.raises(DataRootError, match=f"{data_root} holds them: use --data-root {data_root}$"):
        load_domain(SPEC_DIR, data_root / "eva-0.1.3")  # one folder too deep


def test_empty_release_reports_each_missing_file_once(tmp_path: Path) -> None:
    (tmp_path / "eva-0.1.3").mkdir()
    with pytest.raises(SpecError) as info:
        load_domain(SPEC_DIR, tmp_path)
    lines = str(info.value).splitlines()
    assert len(lines) == 3
    assert lines[0].endswith(
        f"domain.yaml:41: $.policy.file: eva-0.1.3/configs/agents/airline_agent.yaml "
        f"not found in data root {tmp_path}"
    )
    assert "tools.yaml:5: $.tool_descriptions_from:" in lines[1]
    assert "domain.yaml:14: $.dataset.path: eva-0.1.3/data/airline_dataset.jsonl not found" in lines[2]


def test_modified_data_root_warns_once(tmp_path: Path, data_root: Path, capsys) -> None:
    import shutil

    root = tmp_path / "data"
    shutil.copytree(data_root, root)
    cfg = root / "eva-0.1.3/configs/agents/airline_agent.yaml"
    cfg.write_text(cfg.read_text(encoding="utf-8") + "\n# local note\n", encoding="utf-8")
    load_domain(SPEC_DIR, root)
    load_domain(SPEC_DIR, root)
    err = capsys.readouterr().err
    assert err.count("differs from the pinned upstream eva-0.1.3") == 1


def test_yaml_lines_and_paths() -> None:
    doc = parse_yaml("a: 1\ntools:\n  - name: x\n    kind: read\n  - name: y\n    kind: [oops]\n", "f.yaml")
    assert doc.line(("tools", 1, "kind")) == 6
    assert doc.line(("tools", 1, "kind", 0)) == 6
    assert doc.line(("missing",)) == 1
    assert format_json_path(("tools", 1, "kind"), doc.data) == "$.tools[y].kind"
    assert format_json_path(("a", "b c"), None) == "$.a['b c']"
    dup = parse_yaml("a: 1\na: 2\n", "d.yaml")
    assert [str(p) for p in dup.problems] == ["d.yaml:2: $.a: duplicate key 'a' (first at line 1)"]
    with pytest.raises(YamlSyntaxError) as info:
        parse_yaml("a: [1\n", "bad.yaml")
    assert str(info.value).startswith("bad.yaml:1: $: YAML syntax error")
    with pytest.raises(YamlSyntaxError):
        parse_yaml("!!python/object:os.system {}\n", "unsafe.yaml")


def _object_schemas(node: object, path: str = "$"):
    """Yield (path, schema) for every schema in a JSON Schema document that declares properties."""
    if isinstance(node, dict):
        props = node.get("properties")
        is_object = "type" in node or "additionalProperties" in node or "required" in node
        if isinstance(props, dict) and all(isinstance(v, dict) for v in props.values()) and is_object:
            yield path, node
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                for name, sub in value.items():
                    yield from _object_schemas(sub, f"{path}.{name}")
            elif key not in ("if", "then"):
                yield from _object_schemas(value, f"{path}/{key}")
    elif isinstance(node, list):
        for i, item in enumerate(node):
            yield from _object_schemas(item, f"{path}[{i}]")


@pytest.mark.parametrize("kind", ["domain", "tools", "scenario"])
def test_schemas_closed_and_documented(kind: str) -> None:
    import jsonschema

    from engine.model import SCHEMA_DIR

    schema = json.loads((SCHEMA_DIR / f"{kind}.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    open_by_design = {"$/$defs/tool.options"}  # handler-specific knobs, documented in its description
    seen = 0
    for path, node in _object_schemas(schema):
        seen += 1
        if path not in open_by_design:
            assert node.get("additionalProperties") is False, path
        for name, sub in node["properties"].items():
            assert "description" in sub, f"{path}.{name}"
    assert seen >= 3


def test_validation_report_lines() -> None:
    from engine.errors import Problem
    from engine.replay import ReplayOutcome
    from engine.validate import ValidationReport

    ok = ValidationReport("specs/x", scenarios=2, prompts=4)
    ok.replay = [ReplayOutcome("x__a", True, "h", "h")] * 2
    assert ok.ok and ok.lines() == [
        "validated 2 scenarios in specs/x: schemas ok, cross-checks ok, 4 prompts rendered, gold replay 2/2"
    ]
    bad = ValidationReport("specs/x", scenarios=2, prompts=4, sources={"x__b": "specs/x/scenarios/b.yaml:1"})
    bad.replay = [
        ReplayOutcome("x__a", True, "h", "h"),
        ReplayOutcome("x__b", False, "h1", "h2", ("refunds.R1: missing",)),  # type: ignore[arg-type]
    ]
    assert not bad.ok
    assert bad.lines()[:2] == [
        "specs/x/scenarios/b.yaml:1: $: gold replay failed, the final DB differs from the expected one"
        " [x__b]",
        "  refunds.R1: missing",
    ]
    assert bad.lines()[-1].endswith("gold replay 1/2")
    spec_bad = ValidationReport("specs/x", problems=[Problem("f.yaml", 3, "$.a", "boom", "x__a")])
    assert spec_bad.lines() == ["f.yaml:3: $.a: boom [x__a]", "specs/x: 1 problem(s) found; specs not valid"]


def test_validate_specs_real(data_root: Path) -> None:
    from engine.domains.registry import plugins
    from engine.validate import validate_specs

    report = validate_specs(SPEC_DIR, data_root, replay=True, plugins=plugins())
    assert report.ok and report.scenarios == 50 and report.prompts == 100
    assert len(report.replay) == 50 and report.summary().endswith("gold replay 50/50")


def _spec_copy(tmp_path: Path) -> Path:
    target = tmp_path / "spec"
    shutil.copytree(SPEC_DIR, target)
    return target


def _data_copy(tmp_path: Path, data_root: Path) -> Path:
    target = tmp_path / "data"
    shutil.copytree(data_root, target)
    return target


AGENT_CONFIG = "eva-0.1.3/configs/agents/airline_agent.yaml"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("- just\n- a list\n", "holds a list, not a mapping with a 'tools' list"),
        ("tools: [\n", "is not valid YAML: while parsing"),
    ],
    ids=["config_is_a_list", "config_bad_yaml"],
)
def test_agent_config_of_the_wrong_shape_is_one_line_problem(
    tmp_path: Path, data_root: Path, content: str, expected: str
) -> None:
    root = _data_copy(tmp_path, data_root)
    (root / AGENT_CONFIG).write_text(content, encoding="utf-8")
    with pytest.raises(SpecError) as info:
        load_domain(SPEC_DIR, root)
    lines = [str(p) for p in info.value.problems]
    assert any("tools.yaml:" in s and "$.tool_descriptions_from" in s and expected in s for s in lines), lines
    assert all("\n" not in s for s in lines)


def test_truncated_jsonl_dataset_names_json_and_the_line(tmp_path: Path, data_root: Path) -> None:
    root = _data_copy(tmp_path, data_root)
    dataset = root / "eva-0.1.3/data/airline_dataset.jsonl"
    lines = dataset.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[2] = lines[2][: len(lines[2]) // 2] + "\n"
    dataset.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(SpecError) as info:
        load_domain(SPEC_DIR, root)
    (problem,) = [str(p) for p in info.value.problems if "$.dataset.path" in str(p)]
    assert "is not valid JSON: " in problem and "line 3 column" in problem, problem


@pytest.mark.parametrize(
    "moved", ["scenarios/1.1.2.yml", "scenarios/extra/1.1.2.yaml"], ids=["yml_suffix", "subfolder"]
)
def test_scenario_file_that_would_be_skipped_is_reported(tmp_path: Path, data_root: Path, moved: str) -> None:
    spec = _spec_copy(tmp_path)
    (spec / moved).parent.mkdir(parents=True, exist_ok=True)
    (spec / "scenarios/1.1.2.yaml").rename(spec / moved)
    with pytest.raises(SpecError) as info:
        load_domain(spec, data_root)
    (problem,) = info.value.problems
    assert problem.file.endswith(moved) and "not loaded" in problem.message


def test_nan_max_duration_fails_validation(tmp_path: Path, data_root: Path) -> None:
    # max_duration .nan passed the schema (NaN <= 0 is false) and timed out every session at once
    spec = _spec_copy(tmp_path)
    domain = spec / "domain.yaml"
    domain.write_text(domain.read_text(encoding="utf-8").replace("max_duration: 900", "max_duration: .nan"))
    with pytest.raises(SpecError) as info:
        load_domain(spec, data_root)
    assert [p.json_path for p in info.value.problems] == ["$.max_duration"]


def test_data_root_that_is_a_file_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a_file = tmp_path / "data.tar"
    a_file.write_bytes(b"")
    assert cli.main(["validate", str(SPEC_DIR), "--data-root", str(a_file)]) == 1
    assert capsys.readouterr().err.strip() == (
        f"evalctl: data root {a_file} (from --data-root) is not a directory; "
        "run `make data` or pass --data-root DIR"
    )
