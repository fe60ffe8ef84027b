"""``evalctl serve`` stops on SIGTERM (a service manager, ``kill``) as on Ctrl-C: the server
closes and the command exits 0, where SIGTERM used to kill it without a word (exit -15). Each
stop is sent once the server says it is listening (its own line), never after a sleep."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR, REPO

SPEC = ["--port", "0", "--spec-dir", str(MOCK_SPEC_DIR), "--data-root", str(MOCK_DATA_ROOT)]
COMMANDS = {"agent": ["serve", "agent", *SPEC], "model": ["serve", "model", *SPEC]}


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
@pytest.mark.parametrize("what", sorted(COMMANDS))
def test_serve_stops_on_a_signal_with_exit_0(what: str, sig: signal.Signals) -> None:
    # started as `evalctl serve ... &` from a script is: SIGINT ignored (the shell's `trap "" INT`)
    argv = ["sh", "-c", 'trap "" INT; exec "$0" "$@"', sys.executable, "-m", "cli", *COMMANDS[what]]
    proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert line.startswith("serving the "), line
        proc.send_signal(sig)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
