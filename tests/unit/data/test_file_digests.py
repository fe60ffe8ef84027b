"""File digests (engine.core.dataroot.sha256_file): a run hashes its data root when it starts and again
when it writes its summary, so a file seen unchanged is answered from memory; any change to it (its
bytes, its size, its times, a new file in its place) is hashed anew, and so is a file changed so
recently that a write could still land within the same timestamp."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from engine.core import dataroot
from engine.core.dataroot import sha256_file

OLD_NS = 1_600_000_000 * 10**9  # 2020: long settled


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the hashes computed from a file's bytes (hashlib.sha256 objects made)."""
    made: list[int] = []
    real = hashlib.sha256

    def counting(*args: object) -> object:
        made.append(1)
        return real(*args)

    monkeypatch.setattr(dataroot.hashlib, "sha256", counting)
    monkeypatch.setattr(dataroot, "_DIGESTS", {})
    return made


def _settled(path: Path, data: bytes, mtime_ns: int = OLD_NS) -> Path:
    path.write_bytes(data)
    os.utime(path, ns=(mtime_ns, mtime_ns))
    return path


def test_an_unchanged_file_is_hashed_once(tmp_path: Path, reads: list[int], monkeypatch) -> None:
    monkeypatch.setattr(dataroot, "_SETTLED_NS", -(10**20))  # the utime below leaves a fresh ctime
    path = _settled(tmp_path / "a.json", b'{"a": 1}')
    first = sha256_file(path)
    assert first == hashlib.new("sha256", b'{"a": 1}').hexdigest()
    assert sha256_file(path) == first and len(reads) == 1


def test_a_changed_file_is_hashed_again(tmp_path: Path, reads: list[int], monkeypatch) -> None:
    monkeypatch.setattr(dataroot, "_SETTLED_NS", -(10**20))
    path = _settled(tmp_path / "a.json", b'{"a": 1}')
    sha256_file(path)
    _settled(path, b'{"a": 2}', OLD_NS + 10**9)  # same size and inode, a later modification time
    assert sha256_file(path) == hashlib.new("sha256", b'{"a": 2}').hexdigest()
    replacement = _settled(tmp_path / "b.json", b'{"a": 3}')
    os.replace(replacement, path)  # another file (inode) in its place
    assert sha256_file(path) == hashlib.new("sha256", b'{"a": 3}').hexdigest()
    assert len(reads) == 3


def test_a_file_changed_just_now_is_always_hashed(tmp_path: Path, reads: list[int]) -> None:
    path = tmp_path / "fresh.json"
    path.write_bytes(b"[]")  # its change time is now: not settled for 2 s
    assert sha256_file(path) == sha256_file(path) == hashlib.new("sha256", b"[]").hexdigest()
    assert len(reads) == 2


def test_a_missing_file_raises(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        sha256_file(tmp_path / "nope.json")
