"""Ctrl-C in a run whose agent is the user's own code (``python:``), in its supervised worker
(``engine.run.workers.isolated``), pressed as a terminal does (SIGINT to the run's process group)
and synchronised on the run's own progress lines, never on a sleep.

Once every session has been reported, the worker may still wait at its end for a thread the
agent's code left running (``engine.util.aio.exit_process``): a Ctrl-C then used to mark the
complete run ``interrupted`` (exit 130). It now cuts that wait and the run ends as complete; a
Ctrl-C before the sessions are all reported still interrupts the run (exit 130)."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

from engine.run.runner import CtrlC
from engine.run.workers import CUT_END_WAIT
from tests.conftest import REPO
from tests.unit.scale.helpers import NAMES, SHOP_RUN

#: ``$AGENT_MODE=leave``: the first turn starts a thread (not a daemon) that never ends and
#: registers its join as an exit handler (a library flushing from its thread at exit), so the
#: worker's end lasts until the run kills it (its last session's STOP_GRACE_S, 20 s, later): the
#: Ctrl-C lands in that end wait however slow the machine. ``$AGENT_MODE=hold``: the first session
#: ends the call, every later one waits (awaiting: a Ctrl-C cuts it) for ever.
AGENT = """
import asyncio
import atexit
import os
import threading

LEFT = []
SEEN = []


def make(session, tools):
    SEEN.append(session.scenario["name"])
    hold = os.environ["AGENT_MODE"] == "hold" and len(SEEN) > 1

    async def turn(line):
        while hold:
            await asyncio.sleep(0.05)
        if os.environ["AGENT_MODE"] == "leave" and not LEFT:
            LEFT.append(threading.Thread(target=threading.Event().wait, name="agents-forever"))
            LEFT[0].start()
            atexit.register(LEFT[0].join)
        await tools.call("end_conversation", "{}", say="Goodbye.")
        return ""

    return turn
"""

SESSIONS = len(NAMES)
#: Generous bounds on answers that take milliseconds to seconds: a safety net, not the sync.
TIMEOUT_S = 120


def _sigint_default() -> None:
    """The default SIGINT action in the child: a suite started in the background ignores SIGINT,
    and an ignored signal stays ignored across exec."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _ctrl_c_after(
    tmp_path: Path, mode: str, reported: int, sig: signal.Signals = signal.SIGINT
) -> tuple[int, list[str], Path]:
    """``evalctl run`` of the mock shop with the agent in ``mode`` (:data:`AGENT`), in a session of
    its own, sent Ctrl-C (SIGINT to its process group, as a terminal does) once its progress shows
    ``reported`` sessions done; its exit code, its stderr lines and its run folder. With ``sig``
    SIGTERM, that signal goes to evalctl's own process only (as ``kill`` or a CI timeout sends it)."""
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    out = tmp_path / "run"
    argv = [sys.executable, "-m", "cli", *SHOP_RUN, "--agent", f"python:{agent}:make", "--no-progress"]
    argv += ["--concurrency", "1", "--output-dir", str(out)]
    path = os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])
    env = {**os.environ, "PYTHONPATH": path, "AGENT_MODE": mode}
    proc = subprocess.Popen(
        argv, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        start_new_session=True, preexec_fn=_sigint_default,
    )  # fmt: skip
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    said: list[str] = []
    try:
        while True:  # the run's progress line for its session number ``reported``
            line = lines.get(timeout=TIMEOUT_S)
            assert line is not None, f"the run ended before Ctrl-C (exit {proc.wait()}): {said}"
            said.append(line)
            if re.match(rf"\[{reported}/{SESSIONS} ", line):
                break
        if sig == signal.SIGINT:
            os.killpg(proc.pid, signal.SIGINT)
        else:
            proc.send_signal(sig)
        code = proc.wait(timeout=TIMEOUT_S)
        while (line := lines.get(timeout=TIMEOUT_S)) is not None:  # the rest, to its end
            said.append(line)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return code, said, out


def test_ctrl_c_once_every_session_is_reported_cuts_the_workers_end_wait(tmp_path: Path) -> None:
    """Before: exit 130 and ``interrupted`` in the summary, every session complete. The press's
    own line then said ``the sessions in flight are cut`` with none in flight; it now says the
    end-of-run wait is cut (``CtrlC.FIRST_REPORTED``)."""
    code, said, out = _ctrl_c_after(tmp_path, "leave", SESSIONS)
    text = "\n".join(said)
    assert code == 0, text  # the complete run's own code (its FAILs are not below a bar)
    assert f"evalctl: {CtrlC.FIRST_REPORTED}" in said and f"evalctl: {CtrlC.FIRST}" not in said, text
    cut = [line for line in said if line.startswith(f"evalctl: {CUT_END_WAIT} 1 (pid ")]
    assert len(cut) == 1 and cut[0].endswith("every session had been reported, nothing is lost"), text
    assert "interrupted" not in text and "did not end within" not in text and "Traceback" not in text
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["interrupted"] is False
    assert summary["results"] == SESSIONS and summary["missing"] == [] and summary["errors"] == 0
    assert "Run was interrupted" not in (out / "all_summary.txt").read_text(encoding="utf-8")


def test_ctrl_c_before_every_session_is_reported_still_interrupts(tmp_path: Path) -> None:
    code, said, out = _ctrl_c_after(tmp_path, "hold", 1)
    text = "\n".join(said)
    assert code == 130, text
    assert f"evalctl: {CtrlC.FIRST}" in said and f"interrupted; finished results kept in {out}" in text
    assert f"evalctl: {CtrlC.FIRST_REPORTED}" not in said, text
    assert not any(CUT_END_WAIT in line for line in said), text
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["interrupted"] is True and summary["results"] == 1 and summary["missing"], summary


def test_sigterm_says_the_first_ctrl_c_line(tmp_path: Path) -> None:
    """Before: a SIGTERM stopped the run without a word until its closing ``interrupted`` line;
    it now says what the first Ctrl-C says (sessions in flight cut, the finished ones kept)."""
    code, said, out = _ctrl_c_after(tmp_path, "hold", 1, signal.SIGTERM)
    text = "\n".join(said)
    assert code == 130, text
    assert said.count(f"evalctl: {CtrlC.FIRST}") == 1, text
    assert f"interrupted; finished results kept in {out}" in text
    assert f"evalctl: {CtrlC.FIRST_REPORTED}" not in said and "Traceback" not in text, text
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["interrupted"] is True and summary["results"] == 1 and summary["missing"], summary


def test_sigterm_once_every_session_is_reported_says_so(tmp_path: Path) -> None:
    """Every session reported: a SIGTERM says it cuts the end-of-run wait (as the Ctrl-C does),
    not that sessions in flight are cut; before, it said nothing."""
    code, said, out = _ctrl_c_after(tmp_path, "leave", SESSIONS, signal.SIGTERM)
    text = "\n".join(said)
    assert f"evalctl: {CtrlC.FIRST_REPORTED}" in said and f"evalctl: {CtrlC.FIRST}" not in said, text
    assert code == 0 and "Traceback" not in text, text
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["interrupted"] is False and summary["results"] == SESSIONS, summary


#: With ``--workers 1`` the end wait is the run's own process's: a task of the agent's that
#: ignores cancellation (5 s of the tasks' wait), then a thread that never ends (5 s of the
#: threads'). The task marks the file ``$MARK`` when its cancellation reaches it: the clean-up has
#: begun, the run's own signal handlers are gone, so the test's signal lands in the end wait.
STUBBORN = """
import asyncio
import os
import threading

LEFT = []


async def stubborn():
    while True:
        try:
            await asyncio.sleep(0.05)
        except asyncio.CancelledError:
            open(os.environ["MARK"], "w").close()


def make(session, tools):
    if not LEFT:
        LEFT.append(threading.Thread(target=threading.Event().wait, name="agents-forever"))
        LEFT[0].start()
        LEFT.append(asyncio.get_running_loop().create_task(stubborn()))

    async def turn(line):
        await tools.call("end_conversation", "{}", say="Goodbye.")
        return ""

    return turn
"""


def test_sigterm_in_the_end_wait_of_a_single_process_run_cuts_both_waits(tmp_path: Path) -> None:
    """Before: the default SIGTERM action ended evalctl there (exit 143, no table printed), and a
    Ctrl-C cut the tasks' wait only, the threads' then ran its full 5 s."""
    agent, mark, out = tmp_path / "agent.py", tmp_path / "cleanup-began", tmp_path / "run"
    agent.write_text(STUBBORN)
    argv = [sys.executable, "-m", "cli", *SHOP_RUN, "--agent", f"python:{agent}:make", "--no-progress"]
    argv += ["--workers", "1", "--concurrency", "1", "--output-dir", str(out)]
    path = os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])
    env = {**os.environ, "PYTHONPATH": path, "MARK": str(mark)}
    proc = subprocess.Popen(
        argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        for _ in range(TIMEOUT_S * 20):  # until the clean-up has begun (a safety bound, not the sync)
            if mark.exists() or proc.poll() is not None:
                break
            threading.Event().wait(0.05)
        assert mark.exists(), f"the clean-up never began (exit {proc.poll()})"
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, stderr  # the complete run's own code, not 143
    assert f"results: {out}" in stdout  # its table was printed
    assert "1 thread still running when the stop cut the wait left behind: agents-forever" in stderr, stderr
    assert "Traceback" not in stderr
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["interrupted"] is False and summary["results"] == SESSIONS
