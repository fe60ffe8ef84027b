"""Spec loading against a data root: missing or partial data roots, datasets and agent configs of
the wrong shape, scenario files that would be skipped, schema checks and the validation report.
The facts of the eva_airline spec folder itself are tested in tests/domains/eva_airline/. Cases
that need no real data use the mock shop; those about eva's releases, agent config and JSONL
dataset need the eva data."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import cli
from engine.domains.registry import load_domain
from engine.errors import DataRootError, SpecError, UsageError
from engine.specs import LoadedDomain
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR, SPEC_DIR


@pytest.fixture(scope="module")
def loaded() -> LoadedDomain:
    return load_domain(MOCK_SPEC_DIR, MOCK_DATA_ROOT)


def test_unknown_scenario_suggests(loaded: LoadedDomain) -> None:
    with pytest.raises(UsageError, match="did you mean 'mock__cancel_order'"):
        loaded.scenario("mock__cancel_ordr")


def test_missing_data_root_is_a_data_root_error(tmp_path: Path) -> None:
    with pytest.raises(DataRootError, match="make data"):
        load_domain(MOCK_SPEC_DIR, tmp_path / "nowhere")


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


def _spec_copy(tmp_path: Path) -> Path:
    target = tmp_path / "spec"
    shutil.copytree(MOCK_SPEC_DIR, target)
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
    "moved", ["scenarios/cancel.yml", "scenarios/extra/cancel.yaml"], ids=["yml_suffix", "subfolder"]
)
def test_scenario_file_that_would_be_skipped_is_reported(tmp_path: Path, moved: str) -> None:
    spec = _spec_copy(tmp_path)
    (spec / moved).parent.mkdir(parents=True, exist_ok=True)
    (spec / "scenarios/cancel.yaml").rename(spec / moved)
    with pytest.raises(SpecError) as info:
        load_domain(spec, MOCK_DATA_ROOT)
    (problem,) = info.value.problems
    assert problem.file.endswith(moved) and "not loaded" in problem.message


def test_nan_max_duration_fails_validation(tmp_path: Path) -> None:
    # max_duration .nan passed the schema (NaN <= 0 is false) and timed out every session at once
    spec = _spec_copy(tmp_path)
    domain = spec / "domain.yaml"
    domain.write_text(domain.read_text(encoding="utf-8").replace("max_duration: 60", "max_duration: .nan"))
    with pytest.raises(SpecError) as info:
        load_domain(spec, MOCK_DATA_ROOT)
    assert [p.json_path for p in info.value.problems] == ["$.max_duration"]


def test_data_root_that_is_a_file_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a_file = tmp_path / "data.tar"
    a_file.write_bytes(b"")
    assert cli.main(["validate", str(MOCK_SPEC_DIR), "--data-root", str(a_file)]) == 1
    assert capsys.readouterr().err.strip() == (
        f"evalctl: data root {a_file} (from --data-root) is not a directory; "
        "run `make data` or pass --data-root DIR"
    )
