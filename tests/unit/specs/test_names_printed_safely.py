"""A name from a spec is printed with its invisible and bidi characters shown as ``<U+XXXX>``:
found by a breaker, a scenario named with U+202E (right-to-left override) and NUL reached the
terminal raw inside the ``[...]`` tag of ``validate``'s and ``run``'s error lines."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import cli
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    spec = tmp_path / "spec"
    shutil.copytree(MOCK_SPEC_DIR, spec)
    scenario = spec / "scenarios" / "cancel.yaml"
    text = scenario.read_text(encoding="utf-8")
    scenario.write_text(text.replace("name: mock__cancel_order", 'name: "mock__cancel\\u202e\\0_order"'))
    return spec


@pytest.mark.parametrize("verb", ["validate", "run"])
def test_a_hostile_name_is_shown_not_obeyed(
    spec: Path, verb: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli.main([verb, str(spec), "--data-root", str(MOCK_DATA_ROOT)])
    out, err = capsys.readouterr()
    assert code != 0
    assert "mock__cancel<U+202E>" in out + err
    assert "\u202e" not in out + err and "\0" not in out + err
