"""Issue #31 item 3: a run's scenarios are indexed by one streaming check, prepared when their first
session starts and released after their last (``engine.spec.index``, ``engine.run.prepared``)."""

from __future__ import annotations

import gc
import json
import weakref
from pathlib import Path

import pytest

import cli
from engine.core.datasources import DataFiles
from engine.core.dbhash import db_hash
from engine.domains.registry import plugins
from engine.spec import index as index_module
from engine.spec.index import ScenarioIndex, index_domain
from engine.spec.loader import load_domain
from engine.util.errors import SpecError
from tests.bench.distinct_specs import write

COUNT = 4


@pytest.fixture(scope="module")
def distinct(data_root: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return write(COUNT, tmp_path_factory.mktemp("distinct"), data_root)


def test_index_keeps_shells_and_prepares_the_scenario_load_domain_builds(distinct: tuple[Path, Path]) -> None:
    spec, data = distinct
    found = plugins()
    index = index_domain(spec, data, plugins=found, keep_whole=0)
    loaded = load_domain(spec, data, plugins=found)
    assert index.names == loaded.names and len(index.names) == COUNT
    shell = index.scenarios[0]
    with pytest.raises(RuntimeError, match="not prepared"):
        shell.initial_db["flights"]
    assert shell.gold_trace is None and shell.record_id == loaded.scenarios[0].record_id
    for whole in loaded.scenarios:
        entry = index.entries[whole.name]
        assert entry.gold_steps == len(whole.gold_trace or ()) > 0 and entry.gold_problem is None
        prepared = index.prepare(whole.name)
        rules = whole.domain.hash_rules
        assert prepared.expected_db is not None and whole.expected_db is not None
        assert prepared is not whole and prepared.initial_db == whole.initial_db
        assert db_hash(prepared.expected_db, rules) == db_hash(whole.expected_db, rules)
        assert prepared.gold_trace == whole.gold_trace and prepared.user == whole.user
        assert index.prepare(whole.name) is prepared  # held: the second session shares it
        ref = weakref.ref(prepared)
        del prepared
        index.release(whole.name)
        assert index.held(whole.name) is not None
        index.release(whole.name)
        gc.collect()
        assert index.held(whole.name) is None and ref() is None  # released: nothing keeps it


def test_a_run_prepares_each_scenario_once_and_releases_it(
    distinct: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec, data = distinct
    calls: list[tuple[str, str]] = []
    made: list[ScenarioIndex] = []
    prepare, release, real_index = ScenarioIndex.prepare, ScenarioIndex.release, index_module.index_domain

    def counting_prepare(self: ScenarioIndex, name: str):  # type: ignore[no-untyped-def]
        calls.append(("prepare", name))
        return prepare(self, name)

    def counting_release(self: ScenarioIndex, name: str) -> None:
        calls.append(("release", name))
        release(self, name)

    def keeping(*args, **kwargs):  # type: ignore[no-untyped-def]
        made.append(real_index(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(index_module, "KEEP_WHOLE", 0)
    monkeypatch.setattr(ScenarioIndex, "prepare", counting_prepare)
    monkeypatch.setattr(ScenarioIndex, "release", counting_release)
    monkeypatch.setattr("engine.run.runner.index_domain", keeping)
    out = tmp_path / "run"
    argv = ["run", str(spec), "--data-root", str(data), "--trials", "3", "--output-dir", str(out)]
    assert cli.main([*argv, "--no-progress", "--workers", "1"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["overall"]["passed"] == COUNT * 3
    names = made[0].names
    assert sorted(n for kind, n in calls if kind == "prepare") == sorted(names)  # once for its 3 trials
    assert sorted(n for kind, n in calls if kind == "release") == sorted(names)
    assert all(made[0].held(n) is None for n in names)


def test_a_bad_scenario_is_refused_before_any_session(distinct: tuple[Path, Path], tmp_path: Path) -> None:
    spec, data = distinct
    bad = tmp_path / "spec"
    bad.mkdir()
    for item in spec.iterdir():
        if item.is_file():
            (bad / item.name).write_bytes(item.read_bytes())
    (bad / "scenarios").mkdir()
    for i, path in enumerate(sorted((spec / "scenarios").glob("*.yaml"))):
        text = path.read_text()
        text = text.replace("eva_id: ", "eva_id: nope") if i == 2 else text
        (bad / "scenarios" / path.name).write_text(text)
    with pytest.raises(SpecError) as err:
        index_domain(bad, data, plugins=plugins(), keep_whole=0)
    [problem] = err.value.problems
    assert problem.file.endswith(sorted(p.name for p in (bad / "scenarios").iterdir())[2])
    assert problem.line == 2 and problem.json_path == "$.eva_id" and "not found in dataset" in problem.message
    out = tmp_path / "run"
    argv = ["run", str(bad), "--data-root", str(data), "--output-dir", str(out), "--no-progress"]
    assert cli.main(argv) == 2
    assert not any(out.glob("*/session.json"))


def test_a_small_folder_is_indexed_whole(distinct: tuple[Path, Path]) -> None:
    spec, data = distinct
    index = index_domain(spec, data, plugins=plugins())
    assert index.whole and isinstance(index.scenarios[0].initial_db, dict)
    assert index.prepare(index.names[0]) is index.scenarios[0]  # kept: its gold replayed once a run


def test_lean_jsonl_dataset_reads_records_by_range_and_locates_a_bad_line(tmp_path: Path) -> None:
    (tmp_path / "d.jsonl").write_text('{"id": "a", "x": 1}\n\n{"id": "b", "x": [2]}\n')
    lean, whole = DataFiles(tmp_path, lean=True), DataFiles(tmp_path)
    spec = {"path": "d.jsonl", "key": "id"}
    records = lean.dataset(spec)
    assert dict(records) == whole.dataset(spec) and records["b"] is not records["b"]  # parsed per lookup
    (tmp_path / "bad.jsonl").write_text('{"id": "a"}\n{"id": \n')
    with pytest.raises(ValueError) as lean_err:
        DataFiles(tmp_path, lean=True).dataset({"path": "bad.jsonl"})
    with pytest.raises(ValueError) as whole_err:
        DataFiles(tmp_path).dataset({"path": "bad.jsonl"})
    assert str(lean_err.value) == str(whole_err.value) and "line 3" in str(lean_err.value)
