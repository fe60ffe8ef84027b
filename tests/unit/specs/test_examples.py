"""Data-driven spec examples: every case under tests/examples/valid/ must validate, every case
under tests/examples/invalid/ must fail with exactly the lines pinned in its ``expected.txt``.

A case is either a whole spec directory (it has a ``domain.yaml``; a ``data/`` folder in it is its
data root, else the mock shop's) or an overlay: its files are copied over a temp copy of the mock
shop's spec folder ``tests/mock_domain/spec`` (so ``scenarios/x.yaml`` adds a scenario, ``tools.yaml``
replaces the tool table, ``mock_agent.md.j2`` replaces the agent template, ``judge.md.j2`` shadows the
repository's). The spec copy is called ``spec`` and the data root appears as ``<data-root>`` in
expected lines. No case needs the eva data.

Regenerate the pinned files after an intended message change (then review the diff):
``REGEN_EXAMPLES=1 .venv/bin/python -m pytest tests/unit/specs/test_examples.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import cli
from engine.domains.registry import plugins
from engine.spec.loader import load_domain
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR, REPO

EXAMPLES = REPO / "tests" / "examples"
REGEN = bool(os.environ.get("REGEN_EXAMPLES"))


def _cases(kind: str) -> list[Path]:
    return sorted(p for p in (EXAMPLES / kind).iterdir() if p.is_dir())


def _prepare(case: Path, tmp: Path, root: Path = MOCK_DATA_ROOT) -> tuple[Path, Path]:
    """Build the spec dir for ``case`` at ``tmp/spec``; returns (spec dir, data root)."""
    spec = tmp / "spec"
    if (case / "domain.yaml").is_file():
        shutil.copytree(case, spec, ignore=shutil.ignore_patterns("expected.txt", "data"))
        return spec, (case / "data" if (case / "data").is_dir() else root)
    shutil.copytree(MOCK_SPEC_DIR, spec)
    for src in case.rglob("*"):
        if src.is_file() and src.name != "expected.txt":
            dest = spec / src.relative_to(case)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(src, dest)
    return spec, root


def _validate(case: Path, tmp: Path, capsys, monkeypatch) -> tuple[int, list[str]]:
    _spec, root = _prepare(case, tmp)
    monkeypatch.chdir(tmp)
    code = cli.main(["validate", "spec", "--no-replay", "--data-root", str(root)])
    out = capsys.readouterr()
    text = (out.out + out.err).replace(str(root), "<data-root>")
    return code, text.splitlines()


@pytest.mark.parametrize("case", _cases("valid"), ids=lambda p: p.name)
def test_valid_example(case: Path, tmp_path: Path, capsys, monkeypatch) -> None:
    code, lines = _validate(case, tmp_path, capsys, monkeypatch)
    assert code == 0, "\n".join(lines)
    assert lines[-1].startswith("validated ") and "schemas ok, cross-checks ok" in lines[-1]


@pytest.mark.parametrize("case", _cases("invalid"), ids=lambda p: p.name)
def test_invalid_example(case: Path, tmp_path: Path, capsys, monkeypatch) -> None:
    code, lines = _validate(case, tmp_path, capsys, monkeypatch)
    expected_file = case / "expected.txt"
    if REGEN:
        expected_file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert code == 1
    assert lines == expected_file.read_text(encoding="utf-8").splitlines()


def test_examples_cover_the_required_cases() -> None:
    names = {p.name for p in _cases("invalid")}
    required = {
        "unknown_key",
        "yaml_syntax",
        "wrong_type",
        "unknown_eva_id",
        "duplicate_name",
        "empty_success_signals",
        "no_clean_exit",
        "unknown_handler",
        "template_undefined",
    }
    assert required <= names
    for case in _cases("invalid"):
        assert (case / "expected.txt").is_file(), f"{case.name} has no expected.txt"


def test_example_yaml_files_carry_schema_line() -> None:
    for path in EXAMPLES.rglob("*.yaml"):
        first = path.read_text(encoding="utf-8").splitlines()[0]
        assert first.startswith("# yaml-language-server: $schema="), path
        assert (path.parent / first.split("$schema=", 1)[1]).resolve().is_file(), path


def test_adding_a_scenario_is_yaml_only(tmp_path: Path) -> None:
    """Copy the domain, add one scenario file, and see it listed, validated and rendered (real CLI)."""
    spec = tmp_path / "mock_copy"
    shutil.copytree(MOCK_SPEC_DIR, spec)
    (spec / "scenarios" / "x.yaml").write_text(
        "# yaml-language-server: $schema=../../../schemas/scenario.schema.json\n"
        "name: mock__cancel_variant\n"
        "eva_id: M1\n"
        "description: The M1 caller again, with another note for the agent.\n"
        "agent_notes: [Offer to keep the order on hold first.]\n",
        encoding="utf-8",
    )
    seeds = load_domain(MOCK_SPEC_DIR, MOCK_DATA_ROOT, plugins=plugins()).scenarios
    n = len(seeds) + 1
    env = {**os.environ, "EVAL_DATA_ROOT": str(MOCK_DATA_ROOT)}
    exe = [sys.executable, "-c", "import sys, cli; sys.exit(cli.main())"]

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*exe, *args], cwd=REPO, env=env, capture_output=True, text=True, check=False)

    listed = run("list", str(spec), "--json")
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert len(rows) == n
    assert {
        "name": "mock__cancel_variant",
        "eva_id": "M1",
        "description": "The M1 caller again, with another note for the agent.",
    } in rows

    checked = run("validate", str(spec), "--no-replay")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"validated {n} scenarios" in checked.stdout
    assert f"{2 * n} prompts and {n} judge prompts rendered" in checked.stdout

    shown = run("render", str(spec), "--scenario", "mock__cancel_variant")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.rstrip().endswith("- Offer to keep the order on hold first.")
    assert f"Today is {seeds[0].current_date}." in shown.stdout
