"""Spec checks that used to let mistakes through (issue #10 §3, §4): YAML 1.1 keys, single-brace
placeholders, a data root one folder off, and a test run before the data exists."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engine.domains.registry import load_domain
from engine.errors import SpecError
from engine.yamlload import parse_yaml
from tests.conftest import REPO, SPEC_DIR


@pytest.mark.parametrize(
    ("key", "becomes"),
    [("yes", "True"), ("no", "False"), ("on", "True"), ("Off", "False"), ("12:30", "750"), ("017", "15")],
)
def test_unquoted_yaml11_keys_are_problems(key: str, becomes: str) -> None:
    doc = parse_yaml(f"decision_tree:\n  {key}: go\n  'quoted': fine\n  3: same text\n", "s.yaml")
    (problem,) = doc.problems
    assert problem.line == 2 and becomes in doc.data["decision_tree"]
    assert f"unquoted key {key!r} is not text in YAML (the key becomes {becomes!r})" in problem.message


def test_a_yes_no_decision_tree_fails_validation(tmp_path: Path, data_root: Path) -> None:
    spec = tmp_path / "eva"
    shutil.copytree(SPEC_DIR, spec)
    scenario = spec / "scenarios" / "1.1.2.yaml"
    text = scenario.read_text()
    scenario.write_text(text + "user:\n  decision_tree:\n    yes: accept the rebook\n    no: ask again\n")
    first = text.count("\n") + 3
    with pytest.raises(SpecError) as info:
        load_domain(spec, data_root)
    found = [p for p in info.value.problems if "decision_tree" in p.json_path]
    assert [p.line for p in found] == [first, first + 1] and all(
        "is not text in YAML" in p.message for p in found
    )


@pytest.mark.parametrize("name", ["current_date", "policy_instructions", "user", "agent_notes"])
def test_single_brace_placeholders_of_context_variables_are_problems(
    tmp_path: Path, data_root: Path, name: str
) -> None:
    spec = tmp_path / "eva"
    shutil.copytree(SPEC_DIR, spec)
    body = (REPO / "templates" / "agent.md.j2").read_text()
    lines = body.count("\n")
    (spec / "agent.md.j2").write_text(body + f'Today: {{{name}}}. JSON: {{"a": {{b}}, "x": 1}}\n')
    with pytest.raises(SpecError) as info:
        load_domain(spec, data_root)
    (problem,) = info.value.problems
    assert problem.file.endswith("agent.md.j2") and problem.line == lines + 1
    assert f"'{{{name}}}' is a single-brace placeholder, rendered literally" in problem.message


def test_make_test_without_data_is_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "EVAL_DATA_ROOT": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_gold.py"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,  # generous: a pytest start that exits at once
    )
    assert out.returncode == 2
    assert f"no eva data under {tmp_path.resolve()}: run `make setup` first" in out.stdout + out.stderr
    assert "error" not in (out.stdout + out.stderr).lower().replace("errors", "")
