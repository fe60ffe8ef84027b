"""``evalctl run specs/eva_airline --agent ws://HOST:PORT`` where PORT is a plain HTTP server (the
wrong port): the run stops before any session with one line and exit 3, as when nothing listens.
The real CLI in a process of its own, against ``http.server`` in a thread of the test."""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from engine.util.errors import INFRASTRUCTURE_EXIT
from tests.conftest import REPO, SPEC_DIR

SCENARIO = "eva_airline__1_1_3"


def test_a_plain_http_port_as_the_agent_stops_the_run_before_any_session(
    data_root: Path, tmp_path: Path
) -> None:
    requests: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):  # no GET: http.server answers 501
        protocol_version = "HTTP/1.1"

        def parse_request(self) -> bool:
            ok = super().parse_request()
            requests.append(str(self.headers.get("Upgrade")))
            return ok

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    uri = f"ws://127.0.0.1:{server.server_address[1]}"
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "cli", "run", str(SPEC_DIR), "--scenarios", SCENARIO, "--agent", uri]
    cmd += ["--data-root", str(data_root), "--output-dir", str(out), "--workers", "1", "--no-progress"]
    try:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=180)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    # before: the session FAILed (agent_disconnected, charged to the agent) and the run exited 0
    assert done.returncode == INFRASTRUCTURE_EXIT, done.stdout[-2000:] + done.stderr[-2000:]
    assert done.stderr.splitlines() == [
        f"evalctl: agent side {uri} is not a WebSocket server (it answered the upgrade request with "
        "HTTP 501 Unsupported method ('GET')); check --agent"
    ]
    assert done.stdout == ""
    assert requests == ["websocket"]  # the check's one upgrade request; no session connected
    assert not out.exists()  # no run folder: no result, nothing charged to the agent
