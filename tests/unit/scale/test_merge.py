"""``evalctl merge``: shard runs make the run one process would have made; mismatches are refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import cli
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR
from tests.unit.scale.helpers import NAMES, SHOP_RUN, hashes, verdicts


def _run(out: Path, *extra: str, spec: list[str] = SHOP_RUN) -> int:
    return cli.main([*spec, "--output-dir", str(out), "--no-progress", "--workers", "1", *extra])


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    """One run of the mock shop with two trials, and its three shard runs."""
    base = tmp_path_factory.mktemp("merge")
    assert _run(base / "single", "--trials", "2") == 0
    parts = [base / f"part{i}" for i in (1, 2, 3)]
    for i, part in enumerate(parts, start=1):
        assert _run(part, "--trials", "2", "--shard", f"{i}/3") == 0
    return base / "single", parts


def test_merged_shards_equal_one_run(shards: tuple[Path, list[Path]], tmp_path: Path) -> None:
    single, parts = shards
    out = tmp_path / "all"
    assert cli.main(["merge", *map(str, parts), "--output-dir", str(out)]) == 0
    assert verdicts(out) == verdicts(single)  # counts, rates, pass^k, stop reasons, failures...
    assert hashes(out) == hashes(single) and len(hashes(out)) == 6
    record = json.loads((out / "run.json").read_text())
    merge = record["invocations"][-1]
    assert merge["command"] == "merge" and merge["args"]["sources"] == [str(p) for p in parts]
    assert merge["args"]["shards"] == ["1/3", "2/3", "3/3"]
    assert [i["command"] for i in record["invocations"]] == ["run", "run", "run", "merge"]
    assert record["settings"]["shard"] is None and sorted(record["scenarios"]) == sorted(NAMES)
    for part in parts:  # the sources are left as they were
        assert json.loads((part / "summary.json").read_text())["results"] == 2
    assert "Overall Success Rate: 100.0% (6/6 sessions; 0 errors)" in (out / "all_summary.txt").read_text()


def _refused(capsys: pytest.CaptureFixture[str], out: Path, *runs: Path) -> str:
    capsys.readouterr()
    existed = out.exists()
    code = cli.main(["merge", *map(str, runs), "--output-dir", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert existed or not out.exists()  # nothing written
    return err


def test_mismatched_runs_are_refused(
    shards: tuple[Path, list[Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    single, parts = shards
    out = tmp_path / "out"
    assert "both hold" in _refused(capsys, out, parts[0], single)  # overlapping scenario folders
    one_trial = tmp_path / "one_trial"
    _run(one_trial, "--shard", "2/3")
    assert "--trials 1" in _refused(capsys, out, parts[0], one_trial)
    other_agent = tmp_path / "noop"
    _run(other_agent, "--trials", "2", "--agent", "noop", "--shard", "2/3")
    assert "was run with --agent noop" in _refused(capsys, out, parts[0], other_agent)
    short = tmp_path / "short"
    _run(short, "--trials", "2", "--max-turns", "4", "--shard", "2/3")
    said = _refused(capsys, out, parts[0], short)
    assert f"{short} was run with --max-turns 4, {parts[0]} with no --max-turns;" in said  # not "None"
    specs = tmp_path / "spec"  # the same shop with one scenario file changed: other spec files
    shutil.copytree(MOCK_SPEC_DIR, specs)
    changed = next((specs / "scenarios").glob("*.yaml"))
    changed.write_text(changed.read_text() + "\n# changed\n")
    other_spec = tmp_path / "other_spec"
    _run(other_spec, "--trials", "2", "--shard", "2/3",
         spec=["run", str(specs), "--data-root", str(MOCK_DATA_ROOT)])  # fmt: skip
    err = _refused(capsys, out, parts[0], other_spec)
    assert "other spec files" in err and str(specs) in err
    assert "not an evalctl run directory" in _refused(capsys, out, parts[0], tmp_path)
    assert "is one of the runs merged" in _refused(capsys, parts[0], parts[0], parts[1])
    # before: two shards of three merged into a "complete" run (missing: [], 100%)
    err = _refused(capsys, out, parts[0], parts[2])
    assert "shard 2/3 is missing (given 1/3, 3/3)" in err
    plain = tmp_path / "plain"  # not a shard run, and holding a scenario of shard 2/3 only
    _run(plain, "--trials", "2", "--scenarios", sorted(NAMES)[1])
    assert "is a shard run and" in _refused(capsys, out, parts[0], plain)
    other_split = tmp_path / "halves"
    _run(other_split, "--trials", "2", "--shard", "2/2")
    assert "different splits" in _refused(capsys, out, parts[0], other_split)


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_resume_of_the_merged_run_leaves_its_sources_as_they_were(
    shards: tuple[Path, list[Path]], tmp_path: Path
) -> None:
    _, parts = shards
    sources = tmp_path / "sources"  # copies: the module's shard runs stay as they were
    copies = [sources / p.name for p in parts]
    for part, copy in zip(parts, copies, strict=True):
        shutil.copytree(part, copy)
    out = tmp_path / "all"
    assert cli.main(["merge", *map(str, copies), "--output-dir", str(out)]) == 0
    before = {copy.name: _files(copy) for copy in copies}
    redone = next(p.parent for p in out.rglob("metrics.json") if p.parent.name.startswith("trial_"))
    for marker in ("metrics.json", "session.json"):  # a result to run again (as an error's would be)
        (redone / marker).unlink()
    assert _run(out, "--resume", str(out)) == 0
    assert (redone / "metrics.json").is_file()
    assert {copy.name: _files(copy) for copy in copies} == before  # nothing written through the links


def test_merge_refuses_a_shard_run_made_on_an_edited_data_root(
    shards: tuple[Path, list[Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 30 item 8: a shard run on an edited data root was merged, and compare then called
    the merged run comparable with a run on the real data."""
    single, parts = shards
    root = tmp_path / "dataroot"
    shutil.copytree(MOCK_DATA_ROOT, root)
    dataset = root / "mock_shop" / "dataset.json"
    dataset.write_text(dataset.read_text(encoding="utf-8") + "\n", encoding="utf-8")  # same records
    edited = tmp_path / "edited"
    _run(
        edited, "--trials", "2", "--shard", "2/3", spec=["run", str(MOCK_SPEC_DIR), "--data-root", str(root)]
    )
    err = _refused(capsys, tmp_path / "out", parts[0], edited, parts[2])
    assert f"{edited} was run on other data than {parts[0]}" in err
    assert "data-root file(s) differ, first: mock_shop/dataset.json" in err
    capsys.readouterr()
    assert cli.main(["compare", str(single), str(edited)]) == 0
    said = capsys.readouterr().out
    assert "comparable: NO" in said and "dataset.json" in said


def test_merge_output_dir_inside_a_source_run_is_refused(
    shards: tuple[Path, list[Path]], capsys: pytest.CaptureFixture[str]
) -> None:
    _, parts = shards
    before = sorted(p.name for p in parts[1].iterdir())
    err = _refused(capsys, parts[1] / "merged", *parts)
    assert f"{parts[1] / 'merged'} is inside {parts[1]}" in err
    assert sorted(p.name for p in parts[1].iterdir()) == before  # no folder made in the source
    err = _refused(capsys, parts[0].parent, *parts)  # a folder that holds the sources
    assert "is inside" in err
