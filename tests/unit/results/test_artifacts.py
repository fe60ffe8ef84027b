"""Artifacts on disk: text that is not valid Unicode is still written."""

from __future__ import annotations

from pathlib import Path


def test_artifact_text_with_a_lone_surrogate_is_still_written(tmp_path: Path) -> None:
    from engine.util.artifacts import read_jsonl, write_jsonl

    # before: UnicodeEncodeError, and the scenario lost metrics.json (the result was 'missing')
    write_jsonl(tmp_path / "t.jsonl", [{"content": "a\ud800b", "n": "Ñ"}])
    assert read_jsonl(tmp_path / "t.jsonl") == [{"content": "a?b", "n": "Ñ"}]
