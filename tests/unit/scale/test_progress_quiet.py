"""Plain progress lines (a log, CI): a run that shows nothing for a while says it is still running
(``engine.run.progress.QUIET_LINE_S``), so a long session never reads as a hung run."""

from __future__ import annotations

import asyncio
import contextlib
import io
from pathlib import Path

import pytest

from engine.run import progress
from engine.run.progress import Progress
from engine.run.runner import run
from tests.runtime_helpers import run_options
from tests.unit.scale.helpers import NAMES, SHOP


async def _until(buffer: io.StringIO, text: str) -> None:
    for _ in range(400):
        if text in buffer.getvalue():
            return
        await asyncio.sleep(0.025)
    raise AssertionError(f"{text!r} not printed within 10 s: {buffer.getvalue()!r}")


async def test_a_silent_stretch_prints_one_still_running_line_each_time() -> None:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), Progress(3, enabled=False, quiet_line_s=0.05) as shown:
        await _until(err, "still running: no session has ended yet")
        assert err.getvalue().startswith("[0/3 ")
        shown.show(progress.Finished("a", 1, True, "PASS", "exit", 3, 0.1, ""))
        await _until(err, "[1/3 ")
        await _until(err, "still running: none ended for 0s")
        lines = err.getvalue().splitlines()
        first_pass = next(i for i, line in enumerate(lines) if " PASS a " in line)
        assert all("no session has ended yet" in line for line in lines[:first_pass])
        assert all("none ended for" in line for line in lines[first_pass + 1 :])
    after = err.getvalue()
    await asyncio.sleep(0.2)
    assert err.getvalue() == after  # the timer ends with the display


async def test_no_still_running_line_when_quiet_live_or_every_session_has_ended() -> None:
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        with Progress(1, enabled=False, quiet=True, quiet_line_s=0.01):
            await asyncio.sleep(0.1)
        with Progress(1, enabled=False, quiet_line_s=0.05) as shown:
            shown.show(progress.Finished("a", 1, True, "PASS", "exit", 3, 0.1, ""))
            await asyncio.sleep(0.2)  # done == total: the summary comes next, nothing to report
    assert "still running" not in err.getvalue()
    assert err.getvalue().count("\n") == 1


async def test_a_run_whose_first_session_takes_long_says_it_is_still_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(progress, "QUIET_LINE_S", 0.2)  # a replayed turn below takes 0.5 s
    opts = run_options(*SHOP, scenarios=NAMES[:1], workers=1, replay_latency_s=0.5, output_dir=tmp_path,
                       progress=False)  # fmt: skip
    report = await run(opts)
    err = capfd.readouterr().err
    assert report.exit_code() == 0
    lines = err.splitlines()
    quiet = [i for i, line in enumerate(lines) if "still running: no session has ended yet" in line]
    done = [i for i, line in enumerate(lines) if line.startswith("[1/1 ") and " PASS " in line]
    assert quiet and done and max(quiet) < done[0], err
