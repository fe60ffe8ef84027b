"""A scripted OpenAI-compatible chat-completions server on loopback, for the judge tests.

Each POST to ``/v1/chat/completions`` takes the next entry of ``script``: a dict is sent as the
assistant message content (JSON-encoded), a str as is, an int as an HTTP error status with an
error body, and a callable is called with the request body and its return value used as one of
those (a judge that reads the prompt). When the script runs out the last entry repeats. Requests
are kept in ``requests``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class ScriptedJudge:
    def __init__(self, script: list[Any]):
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def next_reply(self, body: dict[str, Any]) -> Any:
        with self._lock:
            self.requests.append(body)
            entry = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        return entry(body) if callable(entry) else entry


def _handler(judge: ScriptedJudge) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # keep test output quiet
            pass

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            if not self.path.endswith("/chat/completions"):
                self._send(404, {"error": {"message": "not found"}})
                return
            reply = judge.next_reply(body)
            if isinstance(reply, int):
                self._send(reply, {"error": {"message": f"scripted failure {reply}", "type": "server_error"}})
                return
            content = reply if isinstance(reply, str) else json.dumps(reply)
            self._send(
                200,
                {
                    "id": "chatcmpl-test",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body.get("model"),
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {"role": "assistant", "content": content},
                        }
                    ],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
                },
            )

    return Handler


@contextmanager
def scripted_judge(script: list[Any]) -> Iterator[tuple[str, ScriptedJudge]]:
    """Start the server on 127.0.0.1 (ephemeral port); yields ``(base_url, judge)``."""
    judge = ScriptedJudge(script)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(judge))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", judge
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
