"""Artifacts on disk: text that is not valid Unicode is still written; what a reader refuses."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from engine.util.artifacts import MAX_READ_BYTES, UnreadableFile, read_bytes_bounded, read_json, read_record


def test_artifact_text_with_a_lone_surrogate_is_still_written(tmp_path: Path) -> None:
    from engine.util.artifacts import read_jsonl, write_jsonl

    # before: UnicodeEncodeError, and the scenario lost metrics.json (the result was 'missing')
    write_jsonl(tmp_path / "t.jsonl", [{"content": "a\ud800b", "n": "Ñ"}])
    assert read_jsonl(tmp_path / "t.jsonl") == [{"content": "a?b", "n": "Ñ"}]


def test_read_json_refuses_a_file_over_its_cap(tmp_path: Path) -> None:
    """A file larger than the cap is refused before it is read (the cap, 64 MiB by default, is
    what keeps a huge or endless file from being read whole)."""
    path = tmp_path / "metrics.json"
    path.write_text('{"pad": "' + "x" * 100 + '"}', encoding="utf-8")
    with pytest.raises(UnreadableFile, match=r"too large \(111 bytes; the limit is 50\)"):
        read_bytes_bounded(path, limit=50)
    assert read_bytes_bounded(path, limit=111) == path.read_bytes()
    assert MAX_READ_BYTES == 64 * 1024 * 1024


def test_read_json_refuses_devices_and_fifos_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(UnreadableFile, match=r"not a regular file \(a FIFO\)"):
        read_json(fifo)  # before: blocked for ever waiting for a writer
    zero = tmp_path / "zero.json"
    zero.symlink_to("/dev/zero")
    with pytest.raises(UnreadableFile, match=r"not a regular file \(a character device\)"):
        read_json(zero)  # before: read without end


def test_only_a_record_refuses_non_finite_numbers(tmp_path: Path) -> None:
    """A DB's file may hold NaN (``db_json_bytes`` keeps it); a record may not."""
    path = tmp_path / "final_db.json"
    path.write_text('{"x": NaN, "y": 1e999}', encoding="utf-8")
    body = read_json(path)
    assert math.isnan(body["x"]) and body["y"] == math.inf
    with pytest.raises(UnreadableFile, match=r"non-finite number \(NaN\)"):
        read_record(path)


def test_read_json_turns_deep_nesting_into_a_reason(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    with pytest.raises(UnreadableFile, match="nested too deeply"):
        read_json(path)  # before: RecursionError
