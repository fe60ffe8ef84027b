"""The synthesiser's programs end with their step: a step cancelled (Ctrl-C, or the engine closing
the voice side's connection mid-turn: engine.session.sides.server.TurnGuard) kills and reaps its program
instead of leaving it running and its pipes to be closed after the event loop."""

from __future__ import annotations

import asyncio
import sys

import pytest

from engine.session.voice import tts


async def test_a_cancelled_synthesis_step_ends_its_program(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[asyncio.subprocess.Process] = []
    real = asyncio.create_subprocess_exec

    async def spy(*args: str, **kwargs: object) -> asyncio.subprocess.Process:
        proc = await real(*args, **kwargs)  # type: ignore[arg-type]
        started.append(proc)
        return proc

    monkeypatch.setattr(asyncio, "create_subprocess_exec", spy)
    # a program that never ends on its own (as espeak-ng --stdin waiting for the end of its input)
    forever = [sys.executable, "-c", "import time; time.sleep(600)"]
    step = asyncio.create_task(tts._run(forever, b"Hello there.", 600))
    while not started:  # no clock: until the program runs and the step waits for it
        await asyncio.sleep(0)
    step.cancel()
    with pytest.raises(asyncio.CancelledError):
        await step
    assert started[0].returncode is not None  # killed and reaped, not left running


async def test_the_synthesiser_is_out_of_reach_of_a_terminals_ctrl_c() -> None:
    """A terminal's Ctrl-C is sent to the foreground process group: an espeak-ng or sox in evalctl's
    group died of it and its turn failed with a traceback ("side session crashed") before the run
    cancelled its sessions. The program runs in a process group of its own; the run ends it."""
    import os

    code = "import os, sys; sys.stdout.write(str(os.getpgid(0)))"
    out = await tts._run([sys.executable, "-c", code], b"", 30.0)
    assert int(out) != os.getpgid(0)
