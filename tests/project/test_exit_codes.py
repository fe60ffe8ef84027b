"""docs/cli.md's exit-code table says what the code does: its columns are the CLI's exit-code
constants (``engine.util.errors.EXIT_CODES``), its rows every verb of the CLI with the codes
``engine.commands.VERB_EXIT_CODES`` gives it, and the run's exit codes are those constants."""

from __future__ import annotations

import re
from pathlib import Path

import cli
from engine.commands import VERB_EXIT_CODES
from engine.results.run_report import RunReport
from engine.util.errors import (
    BAD_INPUT_EXIT,
    EXIT_CODES,
    INFRASTRUCTURE_EXIT,
    INTERRUPTED_EXIT,
    InfrastructureError,
    UsageError,
)

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def _table() -> tuple[list[int], dict[str, set[int]]]:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    header = [c.strip() for c in rows[0].strip("|").split("|")]
    assert header[0] == "verb"
    codes = [int(re.match(r"\d+", c).group()) for c in header[1:]]  # type: ignore[union-attr]
    verbs: dict[str, set[int]] = {}
    for line in rows[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert all(c == "-" or c.startswith("yes") for c in cells[1:]), line
        verbs[cells[0]] = {code for code, c in zip(codes, cells[1:], strict=True) if c.startswith("yes")}
    return codes, verbs


def test_the_columns_are_the_exit_code_constants() -> None:
    codes, _ = _table()
    assert codes == sorted(EXIT_CODES)


def test_the_rows_are_every_verb_with_its_codes() -> None:
    _, verbs = _table()
    assert set(verbs) == set(cli.group.commands) == set(VERB_EXIT_CODES)
    for verb, codes in VERB_EXIT_CODES.items():
        assert verbs[verb] == set(codes), verb
        assert set(codes) <= set(EXIT_CODES), verb


def test_the_errors_and_the_run_exit_with_the_constants(tmp_path: Path) -> None:
    assert UsageError("x").exit_code == BAD_INPUT_EXIT
    assert InfrastructureError("x").exit_code == INFRASTRUCTURE_EXIT
    assert RunReport(tmp_path, interrupted=True).exit_code() == INTERRUPTED_EXIT
    assert cli.main(["list", str(tmp_path / "nope")]) == BAD_INPUT_EXIT
    assert cli.main(["report", str(tmp_path), "--markdown", "--html"]) == BAD_INPUT_EXIT


def test_a_run_without_scipy_writes_its_summary_and_exits_3(tmp_path: Path, data_root: Path) -> None:
    """Before: the preload thread printed a traceback, the summary raised a second one, no
    summary was written and the run exited 1 (the code of "below the bar")."""
    import json
    import os
    import subprocess
    import sys

    broken = tmp_path / "broken" / "scipy"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text('raise ImportError("scipy broken for test")\n')
    repo = DOC.parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(broken.parent), str(repo)])}
    out = tmp_path / "run"
    names = "eva_airline__1_1_3,eva_airline__1_1_4,eva_airline__7_2_2"
    done = subprocess.run(
        [
            *(sys.executable, str(repo / "cli.py"), "run", str(repo / "specs" / "eva_airline")),
            *("--data-root", str(data_root), "--scenarios", names, "--trials", "2", "--output-dir", str(out)),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == INFRASTRUCTURE_EXIT, done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    line = "evalctl: statistics unavailable: scipy cannot be imported (ImportError: scipy broken for test)"
    assert next(x for x in done.stderr.splitlines() if "statistics unavailable" in x).startswith(line)
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["overall"]["passed"], summary["overall"]["total"], summary["overall"]["ci"]) == (
        6,
        6,
        None,
    )
    assert "Overall" in (out / "all_summary.txt").read_text()
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == names.split(",")
    assert RunReport(tmp_path, statistics_unavailable="scipy cannot be imported").exit_code(0.5) == 3
