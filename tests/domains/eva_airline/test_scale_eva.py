"""The scale options on eva's 50 real scenarios (issue #18): two workers, and two shards merged,
give one process's verdicts, final DB hashes and summary. tests/unit/scale tests the same options
(and their failure paths) on the mock shop."""

from __future__ import annotations

from pathlib import Path

import pytest

import cli
from tests.conftest import SPEC_DIR
from tests.unit.scale.helpers import hashes, verdicts


@pytest.fixture(scope="module")
def single(data_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One process, two trials of every scenario (100 sessions)."""
    out = tmp_path_factory.mktemp("eva_scale") / "single"
    assert _run(data_root, out, "--workers", "1") == 0
    return out


def _run(data_root: Path, out: Path, *extra: str) -> int:
    argv = ["run", str(SPEC_DIR), "--data-root", str(data_root), "--trials", "2", "--no-progress"]
    return cli.main([*argv, "--output-dir", str(out), *extra])


def test_two_workers_give_one_process_results(data_root: Path, single: Path, tmp_path: Path) -> None:
    out = tmp_path / "workers"
    assert _run(data_root, out, "--workers", "2") == 0  # 100 sessions: two workers (40+ jobs each)
    assert len(hashes(single)) == 100
    assert hashes(out) == hashes(single)
    assert verdicts(out) == verdicts(single)
    assert verdicts(out)["stop_reasons"] == {"exit": 86, "transfer": 14}


def test_two_shards_merged_give_one_process_results(data_root: Path, single: Path, tmp_path: Path) -> None:
    parts = [tmp_path / "part1", tmp_path / "part2"]
    for i, part in enumerate(parts, start=1):
        assert _run(data_root, part, "--workers", "1", "--shard", f"{i}/2") == 0
    assert len(hashes(parts[0])) == 50 and not set(hashes(parts[0])) & set(hashes(parts[1]))
    out = tmp_path / "merged"
    assert cli.main(["merge", *map(str, parts), "--output-dir", str(out)]) == 0
    assert hashes(out) == hashes(single)
    assert verdicts(out) == verdicts(single)
