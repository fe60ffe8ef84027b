"""A verb whose reader of standard output went away (``evalctl report RUN | head -1``) exits 141,
as a shell reports a program a closed pipe ended. Before: rich's and click's exit code 1, which
``run`` documents as "below --fail-under", silently (a CI step read a quality failure)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from engine.util.errors import BROKEN_PIPE_EXIT
from tests.conftest import REPO


def test_report_into_a_closed_pipe_exits_141(mock_sample_run_dir: Path) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first byte: every write fails, no race
    try:
        done = subprocess.run(
            [sys.executable, str(REPO / "cli.py"), "report", str(mock_sample_run_dir)],
            cwd=REPO, stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=120,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )  # fmt: skip
    finally:
        os.close(write_end)
    assert done.returncode == BROKEN_PIPE_EXIT == 141, done.stderr
    assert "Traceback" not in done.stderr
