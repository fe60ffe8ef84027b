"""The rule of the layout: the tests under tests/unit/ run on the mock domain alone, without the
downloaded data (`pytest tests/unit` works on a fresh clone before `make data`); a test that reads
the real data lives under tests/domains/ (or tests/project/ for the releases themselves).

A static check of every file under tests/unit/, cheap enough to run with the suite: no test or
fixture asks for the ``data_root`` or ``sample_run_dir`` fixture, nothing names eva's spec folder
(``SPEC_DIR``) or the helpers that read eva's data, and no string or path points into a data
release or a real spec folder. tests/conftest.py lets `pytest tests/unit` start without the data;
.ci/run runs the unit tests once against an empty data root, which catches what a static check
cannot see (a command line that falls back to ./data)."""

from __future__ import annotations

import ast
from pathlib import Path

from engine.core.dataroot import pins

REPO = Path(__file__).resolve().parents[2]
UNIT = REPO / "tests" / "unit"

#: Fixtures that hand a test the real data root or a run made from it.
DATA_FIXTURES = frozenset({"data_root", "sample_run_dir"})
#: Names that stand for eva's spec folder or for helpers that read the real data, by module.
DATA_NAMES = {
    "tests.conftest": frozenset({"SPEC_DIR"}),
    "tests.report_helpers": frozenset({"sample_run"}),
    "tests.mock_domain.eva_fixtures": frozenset({"eva_scenario", "eva_domain", "eva_ids"}),
}


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string nodes that are docstrings (prose may name a data path)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def data_uses(source: str, name: str = "<test>") -> list[str]:
    """Where ``source`` (a test module) reaches for the real data: ``name:line: what`` lines."""
    tree = ast.parse(source, name)
    releases = tuple(pins())
    specs = tuple(p.name for p in (REPO / "specs").iterdir() if p.is_dir())
    docs = _docstrings(tree)
    found: list[str] = []

    def say(node: ast.AST, what: str) -> None:
        found.append(f"{name}:{getattr(node, 'lineno', 0)}: {what}")

    imported = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module in DATA_NAMES
        for alias in node.names
        if alias.name in DATA_NAMES[node.module]
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = node.args
            for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
                if arg.arg in DATA_FIXTURES:
                    say(node, f"{node.name}() asks for the {arg.arg} fixture")
        elif isinstance(node, ast.ImportFrom) and node.module in DATA_NAMES:
            for alias in node.names:
                if alias.name in DATA_NAMES[node.module]:
                    say(node, f"imports {alias.name} from {node.module}")
        elif isinstance(node, ast.Name) and (node.id in imported or node.id == "SPEC_DIR"):
            say(node, f"uses {node.id}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            text = node.value
            if any(text == r or text.startswith(r + "/") for r in releases):
                say(node, f"names the data release path {text!r}")
            if any(text == f"specs/{s}" or text.startswith(f"specs/{s}/") for s in specs):
                say(node, f"names the real spec folder {text!r}")
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            left, right = node.left, node.right
            if (
                isinstance(left, ast.Name)
                and left.id == "REPO"
                and isinstance(right, ast.Constant)
                and right.value in ("data", "specs")
            ):
                say(node, f"builds REPO / {right.value!r}")
    return found


def test_no_unit_test_reaches_for_the_real_data() -> None:
    files = sorted(UNIT.rglob("*.py"))
    assert len(files) > 50  # the walk found the tests
    found = [
        line
        for path in files
        for line in data_uses(path.read_text(encoding="utf-8"), str(path.relative_to(REPO)))
    ]
    assert found == [], "tests/unit must run without the data; move these to tests/domains/:\n" + "\n".join(
        found
    )


def test_the_check_sees_each_way_to_the_data() -> None:
    source = '''"""Docstrings may say eva-0.1.3/data/airline_dataset.jsonl."""
from tests.conftest import REPO, SPEC_DIR
from tests.report_helpers import sample_run
from tests.mock_domain.eva_fixtures import eva_scenario, session


def test_a(data_root):
    return load_domain(SPEC_DIR, data_root)


async def test_b(tmp_path, sample_run_dir):
    return "eva-0.1.3/data/airline_dataset.jsonl", "specs/eva_airline", REPO / "data"
'''
    found = [line.split(": ", 1)[1] for line in data_uses(source)]
    assert found == [
        "imports SPEC_DIR from tests.conftest",
        "imports sample_run from tests.report_helpers",
        "imports eva_scenario from tests.mock_domain.eva_fixtures",
        "test_a() asks for the data_root fixture",
        "test_b() asks for the sample_run_dir fixture",
        "uses SPEC_DIR",
        "names the data release path 'eva-0.1.3/data/airline_dataset.jsonl'",
        "names the real spec folder 'specs/eva_airline'",
        "builds REPO / 'data'",
    ], found
    assert data_uses("from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR, REPO\n") == []
