"""docs/api.md's pytest example runs: its ``<!-- pytest -->`` block is written to a test file and
run by pytest (in this process: ``pytest.main``) with the ``evalctl.testing`` plugin, from a folder
holding ``specs/eva_airline`` and ``data`` (the real data root), so it runs exactly as written.
The API's functions are checked against the CLI's records too."""

from __future__ import annotations

import math
import re
from importlib.metadata import entry_points
from pathlib import Path

import pytest

import evalctl
from tests.conftest import REPO, SPEC_DIR

DOC = REPO / "docs" / "api.md"


def _block() -> str:
    text = DOC.read_text(encoding="utf-8")
    found = re.search(r"<!-- pytest -->\n```python\n(.*?)```", text, re.S)
    assert found, "docs/api.md has no <!-- pytest --> block"
    return found.group(1)


def test_the_docs_pytest_example_runs(
    data_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "eva_airline").symlink_to(SPEC_DIR)
    (tmp_path / "data").symlink_to(data_root)
    (tmp_path / "test_example.py").write_text(_block(), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("EVAL_DATA_ROOT", raising=False)
    # an installed evalctl registers the plugin itself (pytest11); this checkout may not be installed
    installed = any(ep.value == "evalctl.testing" for ep in entry_points(group="pytest11"))
    code = pytest.main(
        [
            "-q",
            *([] if installed else ["-p", "evalctl.testing"]),
            "-p",
            "no:cacheprovider",
            "-o",
            "asyncio_default_fixture_loop_scope=function",
            "--rootdir",
            str(tmp_path),
            "-c",
            "/dev/null",
            "test_example.py",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out[-3000:]
    assert "2 passed" in out
    assert not (tmp_path / "runs" / "noop").exists()  # the example writes under its own tmp_path: it reruns


def test_the_api_returns_the_records(data_root: Path, tmp_path: Path) -> None:
    assert "eva_airline__3_1_5" in {s.name for s in evalctl.load(SPEC_DIR, data_root).scenarios}
    result = evalctl.run(
        SPEC_DIR,
        agent="noop",
        scenarios=["eva_airline__3_1_5"],
        output_dir=tmp_path / "r",
        data_root=data_root,
    )
    assert isinstance(result, evalctl.RunReport) and result.composite_rate == 0.0
    assert result.exit_code(0.5) == 1
    summary = evalctl.report(result.run_dir)
    assert (summary.overall.passed, summary.overall.total) == (0, 1)
    assert not math.isnan(result.strict_success_rate)
    assert evalctl.compare(result.run_dir, result.run_dir).pass_to_fail == ()
    with pytest.raises(evalctl.UsageError, match="no such run directory"):
        evalctl.diff(tmp_path / "nope")
    with pytest.raises(TypeError, match="spec string or a callable"):
        evalctl.run(SPEC_DIR, agent=3)  # type: ignore[arg-type]
