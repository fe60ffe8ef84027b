"""Spec loading against a data root: missing or partial data roots, datasets and agent configs of
the wrong shape, scenario files that would be skipped, schema checks and the validation report.
All cases use the mock shop. The facts of the eva_airline spec folder itself, and the cases about
eva's releases, pins, agent config and JSONL dataset, are tested in tests/domains/eva_airline/."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import cli
from engine.domains.registry import plugins
from engine.spec.loader import LoadedDomain, load_domain
from engine.util.errors import DataRootError, SpecError, UsageError
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR


def test_unknown_scenario_suggests(loaded: LoadedDomain) -> None:
    with pytest.raises(UsageError, match="did you mean 'mock__cancel_order'"):
        loaded.scenario("mock__cancel_ordr")


def test_missing_data_root_is_a_data_root_error(tmp_path: Path) -> None:
    with pytest.raises(DataRootError, match="make data"):
        load_domain(MOCK_SPEC_DIR, tmp_path / "nowhere", plugins=plugins())


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

    from engine.core.model import SCHEMA_DIR

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
    from engine.spec.gold_replay import ReplayOutcome
    from engine.spec.validate import ValidationReport
    from engine.util.errors import Problem

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


def test_validate_claims_judge_prompts_only_for_a_judged_domain(tmp_path: Path) -> None:
    """The mock shop's late-delivery scenario gates on the judge: validate counts the judge prompts.
    Without judge_passed (nl_assertion gating no claims is no judge either) the domain is scored
    without a judge, and the line says so instead of counting judge prompts."""
    from engine.domains.registry import plugins
    from engine.spec.validate import validate_specs

    spec = _spec_copy(tmp_path)
    judged = validate_specs(spec, MOCK_DATA_ROOT, replay=False, plugins=plugins())
    assert (judged.ok, judged.judge_prompts, judged.judged) == (True, 3, 1)
    assert "6 prompts and 3 judge prompts rendered, gold replay skipped" in judged.summary()
    late = spec / "scenarios" / "late.yaml"
    text = late.read_text(encoding="utf-8")
    text = text.replace("judge_passed, nl_assertion,", "nl_assertion,").split("nl_assertions:")[0]
    late.write_text(text, encoding="utf-8")
    unjudged = validate_specs(spec, MOCK_DATA_ROOT, replay=False, plugins=plugins())
    assert (unjudged.ok, unjudged.judge_prompts, unjudged.judged) == (True, 3, 0), unjudged.lines()
    assert "6 prompts rendered (scored without a judge), gold replay skipped" in unjudged.summary()


@pytest.mark.parametrize(
    "moved", ["scenarios/cancel.yml", "scenarios/extra/cancel.yaml"], ids=["yml_suffix", "subfolder"]
)
def test_scenario_file_that_would_be_skipped_is_reported(tmp_path: Path, moved: str) -> None:
    spec = _spec_copy(tmp_path)
    (spec / moved).parent.mkdir(parents=True, exist_ok=True)
    (spec / "scenarios/cancel.yaml").rename(spec / moved)
    with pytest.raises(SpecError) as info:
        load_domain(spec, MOCK_DATA_ROOT, plugins=plugins())
    (problem,) = info.value.problems
    assert problem.file.endswith(moved) and "not loaded" in problem.message


def test_nan_max_duration_fails_validation(tmp_path: Path) -> None:
    # max_duration .nan passed the schema (NaN <= 0 is false) and timed out every session at once
    spec = _spec_copy(tmp_path)
    domain = spec / "domain.yaml"
    domain.write_text(domain.read_text(encoding="utf-8").replace("max_duration: 60", "max_duration: .nan"))
    with pytest.raises(SpecError) as info:
        load_domain(spec, MOCK_DATA_ROOT, plugins=plugins())
    assert [p.json_path for p in info.value.problems] == ["$.max_duration"]


def test_data_root_that_is_a_file_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a_file = tmp_path / "data.tar"
    a_file.write_bytes(b"")
    assert cli.main(["validate", str(MOCK_SPEC_DIR), "--data-root", str(a_file)]) == 2  # bad input
    assert capsys.readouterr().err.strip() == (
        f"evalctl: data root {a_file} (from --data-root) is not a directory; "
        "run `make data` or pass --data-root DIR"
    )


def test_run_exits_2_on_bad_input_and_validate_1_on_a_spec_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Bad input is exit 2 for a run (1 is --fail-under's code: a CI job must tell a broken spec
    from a low score); `evalctl validate` keeps 1 as its verdict on a spec with problems."""
    spec = _spec_copy(tmp_path)
    domain = spec / "domain.yaml"
    domain.write_text(domain.read_text(encoding="utf-8").replace("max_duration: 60", "max_duraton: 60"))
    out = ["--output-dir", str(tmp_path / "run"), "--no-progress"]
    assert cli.main(["run", str(spec), "--data-root", str(MOCK_DATA_ROOT), *out]) == 2
    assert "max_duraton" in capsys.readouterr().err
    assert cli.main(["run", str(MOCK_SPEC_DIR), "--data-root", str(tmp_path / "none"), *out]) == 2
    assert "data root" in capsys.readouterr().err
    assert cli.main(["validate", str(spec), "--data-root", str(MOCK_DATA_ROOT), "--no-replay"]) == 1
    assert "max_duraton" in capsys.readouterr().out
