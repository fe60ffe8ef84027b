"""One OpenTelemetry trace per session, built from what the session recorded (its transcript, tool
calls and token usage) and its verdict, exported over OTLP/HTTP and/or to an OTLP JSON lines file.

The span tree of a session (times are the session's own: ``started_at`` plus each transcript
event's ``t`` seconds)::

    session {scenario}                 evalctl.scenario, evalctl.trial, evalctl.stop_reason,
    │                                  gen_ai.conversation.id, gen_ai.agent.name
    ├── turn {n} {role}                one per utterance (user or agent), from the event before it;
    │   │                              evalctl.turn.role, evalctl.turn.index, evalctl.turn.chars;
    │   │                              an agent turn's duration is its response latency
    │   └── execute_tool {name}        GenAI semantic conventions: gen_ai.operation.name =
    │                                  execute_tool, gen_ai.tool.name, gen_ai.tool.call.id
    ├── chat {model}                   one per role that used a model: gen_ai.operation.name = chat,
    │                                  gen_ai.request.model, gen_ai.usage.input_tokens /
    │                                  output_tokens (the session's totals), evalctl.model.requests,
    │                                  evalctl.cost_usd when a price table priced it
    └── verdict                        evalctl.verdict (pass | fail | error | N/A),
                                       evalctl.failed_signals, evalctl.error_cause

The session records token totals per role, not each model request's timing, so a role's model
requests are one span over the session with the totals. opentelemetry-sdk and the OTLP/HTTP
exporter are the ``[otel]`` extra, imported only when a :class:`SessionTracer` is made.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from engine.core.model import SessionResult
from engine.util.errors import OutputError, UsageError

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import Span, Tracer

#: The longest utterance text put on a turn span (``evalctl.turn.text``).
TEXT_CHARS = 200
#: After this many exports in a row the OTLP collector refused or let time out, the rest of the
#: traces are not sent (counted as not exported): each attempt at a collector that has stopped
#: answering waits for the exporter's timeout (10 s), 500 s for a 50-session run.
OTLP_GIVE_UP = 3
_NS = 1_000_000_000


def _ns(started: float, t: float) -> int:
    return int((started + max(0.0, t)) * _NS)


def require_otel() -> None:
    """Raise UsageError (one line, exit 2) when the ``[otel]`` extra is not installed, so a run
    asked for traces fails before it starts rather than after."""
    try:
        import opentelemetry.exporter.otlp.proto.http.trace_exporter
        import opentelemetry.sdk.trace  # noqa: F401
    except ImportError:
        raise UsageError("--otel / --trace-file need OpenTelemetry: pip install 'evalctl[otel]'") from None


class SessionTracer:
    """Builds each session's spans and sends them to the sinks: OTLP over HTTP (``otlp``: the
    endpoint, headers and timeout of the standard ``OTEL_EXPORTER_OTLP_*`` variables) and/or an
    OTLP JSON lines file (``trace_file``: one ``ExportTraceServiceRequest`` per line and session).
    Raises UsageError when opentelemetry is not installed (``pip install 'evalctl[otel]'``).
    Use as a context manager: leaving it flushes and shuts the exporters down."""

    def __init__(self, *, otlp: bool = False, trace_file: Path | None = None) -> None:
        require_otel()
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        from engine import __version__

        self._memory: InMemorySpanExporter = InMemorySpanExporter()
        self._provider = TracerProvider(
            resource=Resource.create({"service.name": "evalctl", "service.version": __version__})
        )
        self._provider.add_span_processor(SimpleSpanProcessor(self._memory))
        self._tracer: Tracer = self._provider.get_tracer("evalctl.session", __version__)
        self._otlp: SpanExporter | None = None
        if otlp:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            self._otlp = OTLPSpanExporter()
        self._file: TextIO | None = None
        if trace_file is not None:
            self._trace_file = trace_file
            try:
                trace_file.parent.mkdir(parents=True, exist_ok=True)
                self._file = trace_file.open("a", encoding="utf-8")
            except OSError as err:
                self._provider.shutdown()
                raise OutputError(f"cannot write {trace_file}: {err.strerror or err}") from None
        self.sessions = 0
        self.failed_exports = 0
        self.failed_in_a_row = 0
        #: set once :data:`OTLP_GIVE_UP` exports in a row failed: the later traces were not sent
        self.gave_up = False

    def __enter__(self) -> SessionTracer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Flush and shut the sinks down."""
        if self._file is not None:
            self._file.close()
            self._file = None
        if self._otlp is not None:
            self._otlp.shutdown()
            self._otlp = None
        self._provider.shutdown()

    def export(
        self,
        result: SessionResult,
        verdict: bool | str,
        failed_signals: Sequence[str] = (),
        error_cause: str | None = None,
        costs: Mapping[str, float | None] | None = None,
    ) -> list[ReadableSpan]:
        """Build the trace of one session (see the module docstring) and send it to the sinks.
        ``verdict``: True, False, ``"error"`` or ``"N/A"``; ``costs``: role -> USD (None: not
        priced). Returns the spans sent (root first)."""
        self._spans(result, verdict, failed_signals, error_cause, costs or {})
        spans = sorted(self._memory.get_finished_spans(), key=lambda s: (s.parent is not None, s.start_time))
        self._memory.clear()
        if self._otlp is not None:
            from opentelemetry.sdk.trace.export import SpanExportResult

            if self.gave_up:
                self.failed_exports += 1
            elif self._otlp.export(spans) is not SpanExportResult.SUCCESS:
                self.failed_exports += 1
                self.failed_in_a_row += 1
                self.gave_up = self.failed_in_a_row >= OTLP_GIVE_UP
            else:
                self.failed_in_a_row = 0
        if self._file is not None:
            try:
                self._file.write(otlp_json(spans) + "\n")
                self._file.flush()
            except OSError as err:
                raise OutputError(f"cannot write {self._trace_file}: {err.strerror or err}") from None
        self.sessions += 1
        return spans

    def _child(self, parent: Span, name: str, start: int, attrs: Mapping[str, Any]) -> Span:
        from opentelemetry import trace

        return self._tracer.start_span(
            name, context=trace.set_span_in_context(parent), start_time=start, attributes=dict(attrs)
        )

    def _spans(
        self,
        result: SessionResult,
        verdict: bool | str,
        failed_signals: Sequence[str],
        error_cause: str | None,
        costs: Mapping[str, float | None],
    ) -> None:
        from opentelemetry.trace import Status, StatusCode

        started = _start_seconds(result)
        end = _ns(started, result.duration_s)
        root: Span = self._tracer.start_span(
            f"session {result.scenario_name}",
            start_time=_ns(started, 0.0),
            attributes={
                "evalctl.scenario": result.scenario_name,
                "evalctl.trial": result.trial,
                "evalctl.stop_reason": str(result.stop_reason),
                "evalctl.agent_turns": result.agent_turns,
                "evalctl.user_turns": result.user_turns,
                "gen_ai.conversation.id": f"{result.scenario_name}#{result.trial}",
                "gen_ai.agent.name": result.agent_backend,
            },
        )
        previous_t = 0.0
        turn: Span | None = None
        turn_role, spoken = "", False  # the open turn's side, and whether it has its utterance yet
        turn_end = 0.0
        index = 0
        calls: dict[str, tuple[Span, str]] = {}

        def open_turn(role: str, start: float) -> Span:
            nonlocal turn, turn_role, spoken, index
            if turn is not None:
                turn.end(end_time=_ns(started, turn_end))
            index += 1
            turn, turn_role, spoken = (
                self._child(
                    root,
                    f"turn {index} {role}",
                    _ns(started, start),
                    {"evalctl.turn.index": index, "evalctl.turn.role": role},
                ),
                role,
                False,
            )
            return turn

        for event in result.transcript:
            t = float(event.get("t") or 0.0)
            kind, role = event.get("type"), str(event.get("role"))
            if kind == "utterance":
                # a side's turn: its tool calls, then what it says (the turn may be open already)
                span = (
                    turn
                    if turn is not None and turn_role == role and not spoken
                    else open_turn(role, previous_t)
                )
                text = event.get("content")
                text = text if isinstance(text, str) else json.dumps(text, default=str)
                span.set_attribute("evalctl.turn.chars", len(text))
                span.set_attribute("evalctl.turn.text", text[:TEXT_CHARS])
                spoken = True
            elif kind == "tool_call" and isinstance(event.get("content"), dict):
                content = event["content"]
                call_id, name = str(content.get("call_id") or ""), str(content.get("name") or "?")
                parent = (
                    turn
                    if turn is not None and turn_role == role and not spoken
                    else open_turn(role, previous_t)
                )
                span = self._child(
                    parent,
                    f"execute_tool {name}",
                    _ns(started, t),
                    {
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": name,
                        "gen_ai.tool.call.id": call_id,
                        "gen_ai.tool.type": "function",
                        "evalctl.tool.side": role,
                    },
                )
                calls[call_id] = (span, name)
            elif kind == "tool_result" and isinstance(event.get("content"), dict):
                found = calls.pop(str(event["content"].get("call_id") or ""), None)
                if found is not None:
                    found[0].end(end_time=_ns(started, t))
            if kind in ("utterance", "tool_call", "tool_result"):
                previous_t = t
                turn_end = max(turn_end, t)
        for span, _ in calls.values():
            span.end(end_time=end)
        if turn is not None:
            turn.end(end_time=_ns(started, turn_end))
        for role, usage in result.usage.items():
            model = str(usage.get("model") or "")
            if not (usage.get("prompt_tokens") or usage.get("completion_tokens")):
                continue  # replay sides spend no tokens
            attrs: dict[str, Any] = {
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": "openai",
                "gen_ai.request.model": model.removeprefix("openai:"),
                "gen_ai.usage.input_tokens": int(usage.get("prompt_tokens") or 0),
                "gen_ai.usage.output_tokens": int(usage.get("completion_tokens") or 0),
                "evalctl.model.role": role,
                "evalctl.model.requests": int(usage.get("calls") or 0),
            }
            if costs.get(role) is not None:
                attrs["evalctl.cost_usd"] = float(costs[role])  # type: ignore[arg-type]
            self._child(root, f"chat {attrs['gen_ai.request.model']}", _ns(started, 0.0), attrs).end(
                end_time=end
            )
        shown = ("pass" if verdict else "fail") if isinstance(verdict, bool) else str(verdict)
        attrs = {"evalctl.verdict": shown, "evalctl.failed_signals": list(failed_signals)}
        if error_cause:
            attrs["evalctl.error_cause"] = error_cause
        verdict_span = self._child(root, "verdict", end, attrs)
        verdict_span.end(end_time=end)
        if verdict is False or verdict == "error":
            root.set_status(Status(StatusCode.ERROR, error_cause or ", ".join(failed_signals) or "fail"))
        root.end(end_time=end)


def _start_seconds(result: SessionResult) -> float:
    """The session's start, seconds since the epoch: its ``ended_at`` (milliseconds) less its
    duration, else its ``started_at`` (whole seconds)."""
    for stamp, back in ((result.ended_at, result.duration_s), (result.started_at, 0.0)):
        try:
            return datetime.fromisoformat(stamp).timestamp() - back
        except (TypeError, ValueError):
            continue
    return 0.0


def otlp_json(spans: Sequence[ReadableSpan]) -> str:
    """``spans`` as one OTLP/JSON ``ExportTraceServiceRequest`` on one line (the protobuf JSON
    mapping the OTLP/HTTP JSON encoding uses: hex trace and span ids, camelCase fields)."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    body = MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    for rs in body.get("resourceSpans", []):  # OTLP/JSON: ids are hex, not base64
        for ss in rs.get("scopeSpans", []):
            for span in ss.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = _b64_to_hex(span[key])
    return json.dumps(body, separators=(",", ":"))


def _b64_to_hex(value: str) -> str:
    import base64

    return base64.b64decode(value).hex()
