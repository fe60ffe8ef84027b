"""`make data` failing in one clear line (no download reachable, no source folder). Copying and
downloading the real pinned releases: tests/project/test_data_releases.py (needs `make data`)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from engine.core.datafetch import fill, main
from engine.core.dataroot import pins


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
    monkeypatch.setattr("engine.core.datafetch.ARCHIVE_URL", "http://127.0.0.1:9/{repo}/{commit}")  # discard port
    code = main(["--source", str(tmp_path / "nope"), "--dest", str(tmp_path / "root")])
    out = capsys.readouterr()
    assert code == 1 and f"source folder {tmp_path / 'nope'} does not exist" in out.out
