"""Sibling result folders share equal files by hard links (engine/util/shared_files.py)."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from engine.spec.loader import LoadedDomain
from engine.util.artifacts import FolderWrite
from engine.util.shared_files import SharedFiles


def _put(shared: SharedFiles, folder: Path, name: str, data: bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    batch = FolderWrite(folder, incomplete=True, shared=shared)
    return batch.put_bytes(name, data)


def test_equal_bytes_are_linked_and_different_bytes_written(tmp_path: Path) -> None:
    shared = SharedFiles()
    a = _put(shared, tmp_path / "s" / "trial_1", "sub/x.json", b"same\n")
    b = _put(shared, tmp_path / "s" / "trial_2", "sub/x.json", b"same\n")
    c = _put(shared, tmp_path / "s" / "trial_3", "sub/x.json", b"other\n")
    assert os.stat(a).st_ino == os.stat(b).st_ino != os.stat(c).st_ino
    assert b.read_bytes() == b"same\n" and c.read_bytes() == b"other\n"
    assert (shared.linked, shared.written) == (1, 2)
    # the last file written is the source for the next sibling
    d = _put(shared, tmp_path / "s" / "trial_4", "sub/x.json", b"other\n")
    assert os.stat(d).st_ino == os.stat(c).st_ino


def test_other_names_and_groups_are_never_linked(tmp_path: Path) -> None:
    shared = SharedFiles()
    a = _put(shared, tmp_path / "s1" / "trial_1", "x.json", b"same")
    b = _put(shared, tmp_path / "s1" / "trial_2", "y.json", b"same")
    c = _put(shared, tmp_path / "s2" / "trial_1", "x.json", b"same")
    assert len({os.stat(p).st_ino for p in (a, b, c)}) == 3


def test_a_changed_or_removed_source_is_not_linked(tmp_path: Path) -> None:
    shared = SharedFiles()
    a = _put(shared, tmp_path / "s" / "trial_1", "x.json", b"same")
    os.utime(a, ns=(1, 1))  # touched since written: no longer the very file
    b = _put(shared, tmp_path / "s" / "trial_2", "x.json", b"same")
    assert os.stat(a).st_ino != os.stat(b).st_ino
    os.unlink(b)
    c = _put(shared, tmp_path / "s" / "trial_3", "x.json", b"same")
    assert c.read_bytes() == b"same" and os.stat(c).st_nlink == 1
    assert shared.linked == 0


def test_a_complete_folder_never_links(tmp_path: Path) -> None:
    shared = SharedFiles()
    a = _put(shared, tmp_path / "s" / "trial_1", "x.json", b"same")
    (tmp_path / "s" / "trial_2").mkdir()
    b = FolderWrite(tmp_path / "s" / "trial_2", incomplete=False, shared=shared).put_bytes("x.json", b"same")
    assert os.stat(a).st_ino != os.stat(b).st_ino and shared.linked == 0


def test_large_files_are_not_kept_and_memory_is_bounded(tmp_path: Path) -> None:
    shared = SharedFiles(max_file=8, max_bytes=16)
    big = _put(shared, tmp_path / "s" / "trial_1", "big", b"x" * 9)
    big2 = _put(shared, tmp_path / "s" / "trial_2", "big", b"x" * 9)
    assert os.stat(big).st_ino != os.stat(big2).st_ino
    for i in range(4):  # four groups of 8 bytes: the oldest are dropped
        _put(shared, tmp_path / f"g{i}" / "trial_1", "f", b"12345678")
    assert shared._kept <= 16
    again = _put(shared, tmp_path / "g0" / "trial_2", "f", b"12345678")
    assert os.stat(again).st_nlink == 1
    kept = _put(shared, tmp_path / "g3" / "trial_2", "f", b"12345678")
    assert os.stat(kept).st_nlink == 2


def test_trials_share_their_equal_files_byte_for_byte(loaded: LoadedDomain, tmp_path: Path) -> None:
    """Two trials of the same session: the files they share are one inode (never a marker), and
    every file holds exactly what a run without sharing writes."""
    from engine.core.options import ScoringOptions
    from engine.results import session_files
    from engine.results.scoring_stage import store_and_score
    from tests.mock_domain.eva_fixtures import expected_copy, session

    sc = loaded.scenario("mock__cancel_order")
    result = session(sc, expected_copy(sc))
    for trial in (1, 2):
        store_and_score(tmp_path / "shared", sc, replace(result, trial=trial), 2, ScoringOptions(), "x")
    saved = session_files.SIBLING_FILES
    session_files.SIBLING_FILES = None
    try:
        store_and_score(tmp_path / "plain", sc, replace(result, trial=2), 2, ScoringOptions(), "x")
    finally:
        session_files.SIBLING_FILES = saved
    one, two = tmp_path / "shared" / sc.name / "trial_1", tmp_path / "shared" / sc.name / "trial_2"
    plain = tmp_path / "plain" / sc.name / "trial_2"
    names = sorted(str(p.relative_to(two)) for p in two.rglob("*") if p.is_file())
    assert names == sorted(str(p.relative_to(plain)) for p in plain.rglob("*") if p.is_file())
    linked = {n for n in names if os.stat(two / n).st_ino == os.stat(one / n).st_ino}
    assert {"expected_db.json", "final_db.json", "scenario_config/tools.json"} <= linked
    assert not linked & {"session.json", "metrics.json"}
    for name in names:
        assert (two / name).read_bytes() == (plain / name).read_bytes(), name
