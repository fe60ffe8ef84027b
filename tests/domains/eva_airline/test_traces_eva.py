"""``evalctl run --otel --trace-file`` on one eva session whose agent is a scripted model on
loopback (one tool call, then text): a real OTLP/HTTP receiver on loopback (http.server taking
``POST /v1/traces`` protobuf, decoded with opentelemetry-proto) gets one trace with the span tree
of engine/session/tracing.py, and the JSON lines file holds the same trace."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

import cli
from tests.conftest import SPEC_DIR
from tests.runtime_helpers import ScriptedOpenAI, Step, completion

SCENARIO = "eva_airline__3_1_5"
LOOKUP = '{"confirmation_number": "M9M6FJ", "last_name": "price"}'


class Receiver:
    """An OTLP/HTTP trace receiver: every request's decoded ExportTraceServiceRequest."""

    def __init__(self) -> None:
        self.requests: list[ExportTraceServiceRequest] = []
        self.paths: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                outer.paths.append(self.path)
                outer.requests.append(ExportTraceServiceRequest.FromString(body))
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    @property
    def endpoint(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    r.thread.start()
    yield r
    r.server.shutdown()
    r.server.server_close()


def _attrs(span: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in span.attributes:
        which = kv.value.WhichOneof("value")
        value = getattr(kv.value, which)
        out[kv.key] = list(v.string_value for v in value.values) if which == "array_value" else value
    return out


def test_one_eva_session_as_a_trace(
    data_root: Path, tmp_path: Path, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    monkeypatch.setenv("EVALCTL_TEST_KEY", "sk-test")
    prices = tmp_path / "prices.yaml"
    prices.write_text("fake-agent: {input: 2.0, output: 8.0}\n", encoding="utf-8")
    steps = [
        Step(completion(calls=[("call-1", "get_reservation", LOOKUP)], usage=(100, 20))),
        Step(completion("I found your booking. Goodbye.", usage=(50, 10))),
    ]
    trace_file = tmp_path / "traces.jsonl"
    with ScriptedOpenAI(steps) as agent:
        code = cli.main(
            [
                "run", str(SPEC_DIR), "--scenarios", SCENARIO, "--data-root", str(data_root),
                "--output-dir", str(tmp_path / "run"), "--agent", "openai:fake-agent",
                "--base-url", agent.base_url, "--api-key-env", "EVALCTL_TEST_KEY",
                "--min-agent-turns", "1", "--otel", "--trace-file", str(trace_file),
                "--prices", str(prices), "--no-progress",
            ]
        )  # fmt: skip
    assert code == 0
    assert receiver.paths == ["/v1/traces", "/v1/traces"]  # the collector's check, then the session
    assert not receiver.requests[0].resource_spans  # the check sends no span
    spans = [s for rs in receiver.requests[1].resource_spans for ss in rs.scope_spans for s in ss.spans]
    assert len({s.trace_id for s in spans}) == 1
    (root,) = [s for s in spans if not s.parent_span_id]
    assert root.name == f"session {SCENARIO}"
    assert _attrs(root)["evalctl.stop_reason"] and _attrs(root)["gen_ai.conversation.id"] == f"{SCENARIO}#1"
    by_id = {s.span_id: s for s in spans}
    children = [s for s in spans if s.parent_span_id == root.span_id]
    turns = [s for s in children if s.name.startswith("turn ")]
    assert turns and turns[0].name == "turn 1 user"
    assert all(t.start_time_unix_nano <= t.end_time_unix_nano for t in turns)
    tools = {s.name: s for s in spans if s.name.startswith("execute_tool")}
    assert set(tools) == {"execute_tool get_reservation", "execute_tool end_call"}  # the caller hangs up
    tool = tools["execute_tool get_reservation"]
    assert _attrs(tools["execute_tool end_call"])["evalctl.tool.side"] == "user"
    assert by_id[tool.parent_span_id].name.endswith(" agent")
    tool_attrs = _attrs(tool)
    assert tool_attrs["gen_ai.operation.name"] == "execute_tool"
    assert tool_attrs["gen_ai.tool.call.id"] == "call-1"
    (chat,) = [s for s in children if s.name.startswith("chat ")]
    chat_attrs = _attrs(chat)
    assert chat.name == "chat fake-agent"
    assert chat_attrs["gen_ai.request.model"] == "fake-agent"
    assert chat_attrs["gen_ai.usage.input_tokens"] >= 150
    assert chat_attrs["evalctl.model.requests"] == len(agent.requests)
    tokens_in, tokens_out = chat_attrs["gen_ai.usage.input_tokens"], chat_attrs["gen_ai.usage.output_tokens"]
    assert chat_attrs["evalctl.cost_usd"] == pytest.approx((2.0 * tokens_in + 8.0 * tokens_out) / 1e6)
    (verdict,) = [s for s in children if s.name == "verdict"]
    metrics = json.loads(next((tmp_path / "run").rglob("metrics.json")).read_text(encoding="utf-8"))
    want = {True: "pass", False: "fail"}.get(metrics["is_successful"], metrics["is_successful"])
    assert _attrs(verdict)["evalctl.verdict"] == want
    assert set(_attrs(verdict)["evalctl.failed_signals"]) == set(metrics["success_breakdown"]["failed"])
    (line,) = trace_file.read_text(encoding="utf-8").splitlines()
    file_spans = [
        s for rs in json.loads(line)["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]
    ]
    assert sorted(s["name"] for s in file_spans) == sorted(s.name for s in spans)
    assert {s["traceId"] for s in file_spans} == {root.trace_id.hex()}
