"""Issue 30 item 8 (the breaker): ``list`` printed bidi control characters from specs as they
were, so a description could reorder what the terminal shows; now they are shown as ``<U+XXXX>``
(text) or JSON escapes (``--json``: the same strings to a JSON reader)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import cli
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR

EVIL = "Refund \u202eevil\u202c done \u2066x\u2069"


def test_list_strips_bidi_control_characters(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "spec"
    shutil.copytree(MOCK_SPEC_DIR, spec)
    late = spec / "scenarios" / "late.yaml"
    text = late.read_text(encoding="utf-8")
    late.write_text(
        "\n".join(
            f"description: {json.dumps(EVIL)}" if line.startswith("description:") else line
            for line in text.splitlines()
        )
        + "\n",
        encoding="utf-8",
    )
    capsys.readouterr()
    assert cli.main(["list", str(spec), "--data-root", str(MOCK_DATA_ROOT)]) == 0
    out = capsys.readouterr().out
    assert "Refund <U+202E>evil<U+202C> done <U+2066>x<U+2069>" in out
    assert not any(c in out for c in "\u202e\u202c\u2066\u2069")
    assert cli.main(["list", str(spec), "--data-root", str(MOCK_DATA_ROOT), "--json"]) == 0
    raw = capsys.readouterr().out
    assert not any(c in raw for c in "\u202e\u202c\u2066\u2069") and "\\u202e" in raw
    assert EVIL in [row["description"] for row in json.loads(raw)]  # the same string to a JSON reader
