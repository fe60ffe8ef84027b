"""How an ``evalctl`` process ends (``engine.util.aio.exit_process``): once its threads have
ended, the exit handlers run, the output is flushed and the process ends with its code, without
the interpreter's own teardown (module by module, object by object: 0.1-0.2 s once scipy is
loaded, docs/performance.md). A thread still working is waited for first, so nothing it writes
is lost."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

SCRIPT = """
import atexit
import sys
import threading

from engine.util.aio import exit_process

marker = sys.argv[1]


class TornDown:
    def __del__(self):  # runs only in the interpreter's teardown
        with open(marker, "w") as fh:
            fh.write("torn down")


KEPT = TornDown()
go = threading.Event()


def late_writer():
    go.wait()
    sys.stdout.write("the thread's line\\n")


thread = threading.Thread(target=late_writer)  # not a daemon: the end waits for it
thread.start()
atexit.register(lambda: sys.stdout.write("exit handler ran\\n"))
sys.stdout.write("buffered, no newline;")
go.set()
exit_process(3)
"""


def test_the_end_waits_for_threads_runs_exit_handlers_flushes_and_keeps_the_code(tmp_path: Path) -> None:
    marker = tmp_path / "teardown.txt"
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(marker)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout.startswith("buffered, no newline;")
    assert "the thread's line\n" in proc.stdout
    assert proc.stdout.endswith("exit handler ran\n")
    assert not marker.exists(), "the interpreter's teardown ran"
    assert proc.stderr == ""


POOL_SCRIPT = """
import concurrent.futures

from engine.util.aio import exit_process

POOL = concurrent.futures.ThreadPoolExecutor(max_workers=2)  # an agent's module-level pool
assert POOL.submit(sum, [1, 2]).result() == 3  # its threads now idle, waiting for work
exit_process(0, grace_s=120)
"""


def test_an_idle_thread_pool_does_not_hold_the_end() -> None:
    # the interpreter's exit tells idle pool threads to end; exit_process did not, so an idle
    # pool held it for the whole grace and was named as left behind
    proc = subprocess.run(
        [sys.executable, "-c", POOL_SCRIPT], cwd=REPO, capture_output=True, text=True, timeout=100
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # no "threads still running ... left behind" line
