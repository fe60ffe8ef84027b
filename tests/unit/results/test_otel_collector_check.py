"""``run --otel``: the OTLP collector is checked before the first session (before: every session
ran, then the SDK logged "Transient error" lines for ~12 s and said "traces: 1 sessions to OTLP"
next to "1 session trace(s) not exported"), and the closing line says how many were exported."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import cli
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR

ONE = "mock__cancel_order"


def _run(out: Path) -> int:
    args = ["run", str(MOCK_SPEC_DIR), "--data-root", str(MOCK_DATA_ROOT), "--scenarios", ONE]
    return cli.main([*args, "--otel", "--output-dir", str(out), "--no-progress"])


@pytest.fixture
def refusing_port() -> Iterator[int]:
    """A port bound but not listening: a connection to it is refused at once (no timing)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def test_otel_with_no_collector_stops_before_the_first_session_exit_3(
    tmp_path: Path, refusing_port: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{refusing_port}")
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    assert _run(tmp_path / "run") == 3
    err = capsys.readouterr().err.strip()
    url = f"http://127.0.0.1:{refusing_port}/v1/traces"
    assert err.startswith(f"evalctl: --otel: OTLP collector {url} is unreachable (") and "\n" not in err
    assert not (tmp_path / "run").exists()  # no session was spent


class _FirstOnly:
    """A collector that takes the check's empty request and refuses every export after it."""

    def __init__(self) -> None:
        self.posts = 0  # the requests it got: the check's, then each export's
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", 0)))
                collector.posts += 1
                self.send_response(200 if collector.posts == 1 else 400)  # 400: not retried
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)


@pytest.fixture
def first_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[_FirstOnly]:
    """A :class:`_FirstOnly` collector serving, the OTLP endpoint set to it; shut down after."""
    collector = _FirstOnly()
    collector.thread.start()
    host, port = collector.server.server_address[:2]
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://{host}:{port}")
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    try:
        yield collector
    finally:
        collector.server.shutdown()
        collector.server.server_close()


def test_otel_closing_line_says_exported_n_of_m(
    tmp_path: Path, first_only: _FirstOnly, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(tmp_path / "run") == 0
    captured = capsys.readouterr()
    assert "traces: exported 0 of 1 session(s) to OTLP" in captured.out
    said = "evalctl: not every session trace exported: 1 refused or lost by the OTLP collector"
    assert said in captured.err


def test_after_three_failed_exports_in_a_row_the_rest_are_not_sent(
    tmp_path: Path, first_only: _FirstOnly, capsys: pytest.CaptureFixture[str]
) -> None:
    # a collector that stops answering made each later export wait for the exporter's timeout:
    # 10 s a session, 500 s for 50 (a hostile tester's stalled collector)
    from engine.session.tracing import OTLP_GIVE_UP

    args = ["run", str(MOCK_SPEC_DIR), "--data-root", str(MOCK_DATA_ROOT), "--trials", "3", "--otel"]
    assert cli.main([*args, "--output-dir", str(tmp_path / "run"), "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert first_only.posts == 1 + OTLP_GIVE_UP  # the start-up check, then the failed exports
    assert "traces: exported 0 of 9 session(s) to OTLP" in captured.out
    assert (
        "evalctl: not every session trace exported: 9 refused or lost by the OTLP collector "
        f"(after {OTLP_GIVE_UP} failed exports in a row the rest were not sent)"
    ) in captured.err


def test_a_stop_cuts_the_export_to_a_collector_that_stopped_answering(tmp_path: Path) -> None:
    # a hostile tester's run, started in the background (Ctrl-C ignored by its shell), sat out
    # every export's timeout after a Ctrl-C; the stop now cuts the export, the results stand
    import signal
    import subprocess
    import sys

    from tests.conftest import REPO

    exporting, release = threading.Event(), threading.Event()

    class Stalled(BaseHTTPRequestHandler):
        posts = 0

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", 0)))
            Stalled.posts += 1
            if Stalled.posts > 1:  # the first export: it never gets an answer
                exporting.set()
                release.wait(120)
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Stalled)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    host, port = server.server_address[:2]
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = f"http://{host}:{port}"
    run = ["run", str(MOCK_SPEC_DIR), "--data-root", str(MOCK_DATA_ROOT), "--otel", "--no-progress"]
    argv = [
        "sh",
        "-c",
        'trap "" INT; exec "$0" "$@"',
        sys.executable,
        "-m",
        "cli",
        *run,
        "--output-dir",
        str(tmp_path / "run"),
    ]
    proc = subprocess.Popen(
        argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert exporting.wait(120), "no export reached the collector"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        release.set()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        server.shutdown()
        server.server_close()
    assert proc.returncode == 0, err  # the run's own outcome stands
    assert "evalctl: trace export stopped (Ctrl-C or SIGTERM); the run's results are all written" in err
    assert len(list((tmp_path / "run").glob("*/metrics.json"))) == 3 and "results:" in out
