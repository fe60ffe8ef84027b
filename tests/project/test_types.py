"""The type check: mypy over engine/ and cli.py (``[tool.mypy]`` in pyproject.toml) reports nothing.

mypy keeps its incremental cache in the repository's ``.mypy_cache`` (as ``make lint`` does), so a
run after a small change re-checks only the changed modules and what depends on them: about 20 s
from an empty cache on 2 cores, 1-3 s once it is warm.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mypy import api

REPO = Path(__file__).resolve().parents[2]


def test_mypy_reports_no_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)  # the configuration's ``files`` are relative to the working directory
    stdout, stderr, status = api.run(["--config-file", "pyproject.toml", "--cache-dir", ".mypy_cache"])
    assert (status, stderr) == (0, ""), stdout
    assert stdout.startswith("Success: no issues found")
