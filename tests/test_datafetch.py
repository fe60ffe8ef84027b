"""`make data`: copy from a local source, download an archive, and fail in one clear line."""

from __future__ import annotations

import socket
import tarfile
from pathlib import Path

import pytest

from engine.datafetch import fill, main
from engine.dataroot import check_release, pins


def _archive(data_root: Path, out: Path, release: str) -> None:
    """An archive laid out like a GitHub tarball of the pinned commit: one top folder."""
    top = f"eva-{pins()[release]['commit']}"
    with tarfile.open(out / f"{pins()[release]['commit']}.tar.gz", "w:gz") as tar:
        for rel in pins()[release]["files"]:
            tar.add(data_root / release / rel, arcname=f"{top}/{rel}")


def test_copy_from_a_local_source_verifies_every_file(data_root: Path, tmp_path: Path) -> None:
    assert fill(data_root, tmp_path / "root") == 0
    for release in pins():
        assert check_release(tmp_path / "root", release) == []


def test_download_extracts_the_pinned_files(data_root: Path, tmp_path: Path) -> None:
    for release in pins():
        _archive(data_root, tmp_path, release)
    url = f"file://{tmp_path}/{{commit}}.tar.gz"
    assert fill(None, tmp_path / "root", url_template=url) == 0
    assert all(check_release(tmp_path / "root", r) == [] for r in pins())


def test_unreachable_download_is_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = fill(None, tmp_path / "root", url_template=f"http://127.0.0.1:{port}/{{repo}}/{{commit}}")
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    assert err.count("cannot download") == len(pins()) and "EVA_SOURCE" in err


def test_missing_source_folder_is_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("engine.datafetch.ARCHIVE_URL", "http://127.0.0.1:9/{repo}/{commit}")  # discard port
    code = main(["--source", str(tmp_path / "nope"), "--dest", str(tmp_path / "root")])
    out = capsys.readouterr()
    assert code == 1 and f"source folder {tmp_path / 'nope'} does not exist" in out.out
