"""The engine's layers: no import cycles among engine modules, and the import-linter contracts hold.

The import graph comes from grimp (import-linter's library); it counts every import, also those
inside functions and under ``TYPE_CHECKING``, so a cycle hidden by a late import is still a cycle.
"""

from __future__ import annotations

import itertools
import shutil
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grimp
import pytest
from importlinter.cli import lint_imports

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("engine", cache_dir=None)


def strongly_connected(graph: grimp.ImportGraph) -> list[list[str]]:
    """The import cycles: the strongly connected components of two or more modules, each sorted
    (Tarjan's algorithm, with an explicit stack instead of recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = []
        pending: str | None = root
        while pending is not None or work:
            if pending is not None:  # enter a module
                index[pending] = low[pending] = len(index)
                stack.append(pending)
                on_stack.add(pending)
                work.append((pending, iter(sorted(graph.find_modules_directly_imported_by(pending)))))
                pending = None
            module, successors = work[-1]
            for succ in successors:
                if succ not in index:
                    pending = succ
                    break
                if succ in on_stack:
                    low[module] = min(low[module], index[succ])
            if pending is not None:
                continue
            work.pop()  # every successor seen: leave the module
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[module])
            if low[module] == index[module]:
                component = stack[stack.index(module) :]
                del stack[stack.index(module) :]
                on_stack.difference_update(component)
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def describe_cycle(graph: grimp.ImportGraph, component: list[str]) -> str:
    """One shortest cycle through the component's first module, each import with its file:line."""
    start = component[0]
    chains = [
        (start, *chain)
        for succ in sorted(graph.find_modules_directly_imported_by(start))
        if succ in component and (chain := graph.find_shortest_chain(succ, start))
    ]
    cycle = min(chains, key=len)
    steps = []
    for importer, imported in itertools.pairwise(cycle):
        details = graph.get_import_details(importer=importer, imported=imported)
        where = f" (line {details[0]['line_number']}: {details[0]['line_contents']})" if details else ""
        steps.append(f"{importer} -> {imported}{where}")
    return "\n  ".join(steps)


def test_cycle_finder_finds_a_cycle_and_names_its_imports() -> None:
    g = grimp.ImportGraph()
    for module in ("pkg", "pkg.a", "pkg.b", "pkg.c", "pkg.d"):
        g.add_module(module)
    g.add_import(importer="pkg.a", imported="pkg.b", line_number=3, line_contents="import pkg.b")
    g.add_import(importer="pkg.b", imported="pkg.c", line_number=4, line_contents="import pkg.c")
    g.add_import(importer="pkg.c", imported="pkg.a", line_number=5, line_contents="import pkg.a")
    g.add_import(importer="pkg.c", imported="pkg.d", line_number=6, line_contents="import pkg.d")
    assert strongly_connected(g) == [["pkg.a", "pkg.b", "pkg.c"]]
    assert describe_cycle(g, ["pkg.a", "pkg.b", "pkg.c"]).splitlines()[0] == (
        "pkg.a -> pkg.b (line 3: import pkg.b)"
    )


def test_no_import_cycles_among_engine_modules(graph: grimp.ImportGraph) -> None:
    cycles = strongly_connected(graph)
    report = "\n".join(f"cycle among {', '.join(c)}:\n  {describe_cycle(graph, c)}" for c in cycles)
    assert not cycles, f"import cycles in engine (break them; a late import does not):\n{report}"


def test_import_linter_contracts_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    """The contracts of pyproject.toml ([tool.importlinter]) that `make lint` checks: core modules
    import neither engine.domains nor engine.commands, no engine module imports cli.py, and the
    modules and packages directly under engine import each other without a cycle."""
    monkeypatch.chdir(REPO)
    assert lint_imports(config_filename=str(REPO / "pyproject.toml"), no_cache=True, no_logo=True) == 0


# --- the structure the contracts rely on ---------------------------------------------------------

ENGINE = REPO / "engine"
#: Files allowed directly in engine/: the package marker and data files.
DATA_SUFFIXES = {".json"}


def _contracts() -> list[dict[str, Any]]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    return config["tool"]["importlinter"]["contracts"]


def _top_level_packages() -> set[str]:
    return {p.name for p in ENGINE.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}


def test_engine_top_level_holds_only_packages() -> None:
    stray = sorted(
        p.name
        for p in ENGINE.iterdir()
        if p.name != "__pycache__"
        and not (p.is_dir() and (p / "__init__.py").is_file())
        and not (p.is_file() and (p.name == "__init__.py" or p.suffix in DATA_SUFFIXES))
    )
    assert not stray, f"engine/ holds packages only (move these into one): {stray}"


def test_the_layers_contract_names_every_package_but_domains() -> None:
    (layers,) = [c for c in _contracts() if c["type"] == "layers"]
    assert layers["containers"] == ["engine"]
    named = {name.strip() for layer in layers["layers"] for name in layer.split("|")}
    assert named == _top_level_packages() - {"domains"}
    assert layers.get("exhaustive") is True and layers.get("exhaustive_ignores") == ["domains"]


def test_no_contract_ignores_imports() -> None:
    assert _contracts(), "pyproject.toml has no import-linter contracts"
    assert [c["name"] for c in _contracts() if "ignore_imports" in c] == []


def _lint_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plant: str | None) -> int:
    """``lint_imports`` on a copy of engine/ (and pyproject.toml) in ``tmp_path``, with ``plant``
    (a line of Python) appended to engine/util/heap.py when given."""
    shutil.copytree(ENGINE, tmp_path / "engine", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    if plant is not None:
        with (tmp_path / "engine" / "util" / "heap.py").open("a", encoding="utf-8") as f:
            f.write(f"\n{plant}\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m == "engine" or m.startswith("engine.")]:
        monkeypatch.delitem(sys.modules, name)  # grimp finds the package through the import system
    return lint_imports(config_filename=str(tmp_path / "pyproject.toml"), no_cache=True, no_logo=True)


def test_an_upward_import_breaks_the_layers_contract(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The contract still works: the copy passes as it is, and fails once util imports results."""
    assert _lint_copy(tmp_path / "clean", monkeypatch, None) == 0
    capsys.readouterr()
    assert _lint_copy(tmp_path / "planted", monkeypatch, "import engine.results.rundir  # noqa") == 1
    out = capsys.readouterr().out
    assert "The engine's layers, top to bottom BROKEN" in " ".join(out.split())
    assert "engine.util.heap -> engine.results.rundir" in out
