"""A run's own report (``evalctl run`` printing it as it ends) is the text ``evalctl report``
prints for the same folder, without reading every ``metrics.json`` back unless it needs them
(token costs, ``--failed-every-trial``): the run has just written them (issue #31 item 1)."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
from rich.console import Console

import engine.commands.report as report_module
from engine.commands.report import report
from tests.conftest import REPO

FROZEN = REPO / "tests" / "records" / "v3"  # a run of today's version: one failure, one success


def _text(run: Path, **options: object) -> str:
    buf = io.StringIO()
    report(run, Console(file=buf, width=120, soft_wrap=True, emoji=False), **options)  # type: ignore[arg-type]
    return buf.getvalue()


@pytest.fixture
def run(tmp_path: Path) -> Path:
    shutil.copytree(FROZEN, tmp_path / "run")
    return tmp_path / "run"


def test_the_runs_own_report_is_the_report_verbs_text(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[Path] = []
    real = report_module.load_run_metrics
    monkeypatch.setattr(report_module, "load_run_metrics", lambda d: reads.append(d) or real(d))
    verb = _text(run)
    assert reads == [run]
    own = _text(run, just_written=True)
    assert reads == [run]  # not read again
    assert own == verb
    assert "Not successful (1):" in own and "evalctl diff" in own


def test_what_needs_the_results_still_reads_them(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[Path] = []
    real = report_module.load_run_metrics
    monkeypatch.setattr(report_module, "load_run_metrics", lambda d: reads.append(d) or real(d))
    assert _text(run, just_written=True, failed_every_trial=True) == _text(run, failed_every_trial=True)
    assert reads == [run, run]
