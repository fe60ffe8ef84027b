"""`make data` on the real pinned releases (moved from tests/unit/data/test_datafetch.py): the pins
cover every release, a copy from a local source and a download of each pinned archive give a data root
that matches the sums, a download repairs a damaged file and keeps the local-only ones."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from engine.core.datafetch import downloadable, fill
from engine.core.dataroot import check_release, pins

TAU2_RELEASES = ("tau2-17e07b1", "tau2-v0.2.0", "nemo-1a83139")


def _archive(data_root: Path, out: Path, release: str) -> None:
    """An archive laid out like a GitHub tarball of the pinned commit: one top folder, upstream's own
    files only. A README.md of upstream's own (different bytes) sits where a copy has its own README."""
    top = f"{pins()[release]['repo'].split('/')[1]}-{pins()[release]['commit']}"
    decoy = out / f"{release}-upstream-README.md"
    decoy.write_text("# upstream's own README, not the copy's\n", encoding="utf-8")
    with tarfile.open(out / f"{pins()[release]['commit']}.tar.gz", "w:gz", compresslevel=1) as tar:
        for rel in downloadable(release):
            tar.add(data_root / release / rel, arcname=f"{top}/{rel}")
        if "README.md" not in downloadable(release):
            tar.add(decoy, arcname=f"{top}/README.md")


def test_pins_cover_the_tau2_and_nemo_releases(data_root: Path) -> None:
    """The three releases are pinned with their licence and README files, the data root matches the
    sums, and exactly the files a download cannot supply are marked as such."""
    for release in TAU2_RELEASES:
        assert {"LICENSE", "README.md"} <= set(pins()[release]["files"])
        assert check_release(data_root, release) == [], f"{release}: run `make data`"
    assert "NOTICE.md" in pins()["nemo-1a83139"]["files"]
    assert set(pins()["tau2-17e07b1"]["not_upstream"]) == {"README.md", "derived/tool_schemas.json"}
    assert set(pins()["nemo-1a83139"]["not_upstream"]) == {"README.md", "NOTICE.md", "scenarios.json"}
    assert len(pins()["tau2-17e07b1"]["files"]) == 21 and len(pins()["tau2-v0.2.0"]["files"]) == 3
    assert pins()["tau2-17e07b1"]["commit"].startswith("17e07b1")
    assert pins()["tau2-v0.2.0"]["commit"].startswith("f8de30c")


def test_copy_from_a_local_source_verifies_every_file(data_root: Path, tmp_path: Path) -> None:
    assert fill(data_root, tmp_path / "root") == 0
    for release in pins():
        assert check_release(tmp_path / "root", release) == []


def test_download_extracts_the_pinned_files_and_names_what_it_cannot(
    data_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for release in pins():
        _archive(data_root, tmp_path, release)
    url = f"file://{tmp_path}/{{commit}}.tar.gz"
    code = fill(None, tmp_path / "root", url_template=url)
    err = capsys.readouterr().err
    for release in pins():
        local_only = sorted(pins()[release].get("not_upstream", ()))
        assert check_release(tmp_path / "root", release) == local_only
    # eva has nothing local-only; each of the three others warns in exactly one line; eva works
    assert code == 0 and "Traceback" not in err
    lines = [line for line in err.splitlines() if "cannot be downloaded" in line]
    assert len(lines) == 3
    assert any("tau2-17e07b1" in line and "README.md, derived/tool_schemas.json" in line for line in lines)
    assert not (tmp_path / "root" / "tau2-v0.2.0" / "README.md").exists()  # upstream's own README not taken


def test_download_keeps_local_only_files_already_there(data_root: Path, tmp_path: Path) -> None:
    """A root whose README/tool schemas are right but whose DB was damaged is repaired by a download."""
    release = "tau2-17e07b1"
    _archive(data_root, tmp_path, release)
    root = tmp_path / "root"
    assert fill(data_root, root) == 0
    damaged = root / release / "data/tau2/domains/retail/db.json"
    damaged.write_text("{}", encoding="utf-8")
    url = f"file://{tmp_path}/{{commit}}.tar.gz"
    assert fill(None, root, url_template=url) == 0
    assert check_release(root, release) == []
