"""The voice pool's workers (engine/session/voice/pool.py) end when the run's process is killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

#: A stand-in run's process: starts the voice pool (every worker busy once), says it is ready,
#: then waits to be killed.
CHILD = """
import asyncio, os, sys, time
from engine.session.voice.pool import in_worker, worker_count

async def main():
    return await asyncio.gather(*(in_worker(time.sleep, 0.3) for _ in range(2 * worker_count())))

asyncio.run(main())
print("ready", flush=True)
time.sleep(600)
"""


def _stat(pid: int) -> list[str] | None:
    """``/proc/PID/stat``'s fields after the command name (state, ppid, ...), or None."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()


def _children(parent: int) -> dict[int, str]:
    """The processes whose parent is ``parent``: pid -> start time (field 22, ticks since boot)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))) and int(fields[1]) == parent:
            found[int(entry.name)] = fields[19]
    return found


def _alive(pid: int, started: str) -> bool:
    """True while ``pid`` is the same process and not a zombie (PID 1 may not reap it here)."""
    fields = _stat(pid)
    return fields is not None and fields[19] == started and fields[0] != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_kill_9_of_the_run_ends_its_pool_workers_and_the_resource_tracker() -> None:
    """Before: the workers (and multiprocessing's resource tracker) were re-parented to PID 1 and
    ran on forever."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path.cwd()), *sys.path])}
    run = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert run.stdout is not None and run.stdout.readline().strip() == "ready"
        kids = _children(run.pid)
        assert len(kids) >= 2  # the workers (one per core, at least one) and the resource tracker
    finally:
        run.send_signal(signal.SIGKILL)
        run.wait()
    deadline = time.monotonic() + 60  # generous: a shared machine; normally well under a second
    while any(_alive(p, s) for p, s in kids.items()) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [p for p, s in kids.items() if _alive(p, s)]
    for pid in left:  # do not leave them behind even when the test fails
        os.kill(pid, signal.SIGKILL)
    assert left == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_parent_watch_ends_a_child_whose_parent_died() -> None:
    """The path a pool started from another thread than the main one relies on (no
    PR_SET_PDEATHSIG there: the kernel would signal when that thread ends)."""
    read, write = os.pipe()
    middle = os.fork()
    if middle == 0:  # the "run's process": starts a worker that watches it, then dies
        try:
            me = os.getpid()  # taken before the fork, as the pool's initargs are
            worker = os.fork()
            if worker == 0:
                from engine.util.parent import watch_parent

                watch_parent(me, interval_s=0.05)
                time.sleep(600)
            os.write(write, f"{worker}\n".encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        worker = int(pipe.readline())
    os.waitpid(middle, 0)
    fields = _stat(worker)
    started = fields[19] if fields else ""
    deadline = time.monotonic() + 60
    while _alive(worker, started) and time.monotonic() < deadline:
        time.sleep(0.05)
    alive = _alive(worker, started)
    if alive:
        os.kill(worker, signal.SIGKILL)
    assert not alive
