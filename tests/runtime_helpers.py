"""Helpers for the runtime tests: scripted backends, a session between in-process sides, and a
scripted OpenAI-compatible HTTP server on loopback (stdlib ``http.server`` in a thread)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from engine.core.gold import GoldStep, GoldTrace
from engine.core.model import Scenario, SessionResult
from engine.domains.registry import plugins
from engine.run.runner import RunOptions, session_setup
from engine.session.backends import (
    BackendFactory,
    BackendReply,
    SessionInfo,
    ToolCallRequest,
    TurnInfo,
    Usage,
)
from engine.session.conversation import SessionLimits, run_session
from engine.session.sides import builtin_side


@dataclass
class ScriptedBackend:
    """Replies from ``script(turn) -> BackendReply | None`` on round 0; nothing afterwards.
    Records every TurnInfo it was asked for in ``seen``."""

    script: Callable[[TurnInfo], BackendReply | None]
    name: str = "scripted"
    seen: list[TurnInfo] = field(default_factory=list)

    async def respond(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], turn: TurnInfo):
        self.seen.append(turn)
        reply = self.script(turn) if turn.round == 0 else None
        return reply or BackendReply(usage=Usage(calls=1))


def scripted_factory(
    script: Callable[[TurnInfo], BackendReply | None], sink: list | None = None
) -> BackendFactory:
    def make(info: SessionInfo) -> ScriptedBackend:
        backend = ScriptedBackend(script)
        if sink is not None:
            sink.append(backend)
        return backend

    return make


def say(text: str, *calls: tuple[str, str]) -> BackendReply:
    """A reply saying ``text`` and calling ``(name, raw_arguments)`` tools."""
    return BackendReply(
        text=text,
        tool_calls=[ToolCallRequest(f"c{i}", name, args) for i, (name, args) in enumerate(calls)],
        usage=Usage(calls=1),
    )


async def session_between(
    scenario: Scenario,
    agent: BackendFactory | str,
    user: BackendFactory | str,
    limits: SessionLimits | None = None,
) -> SessionResult:
    """Run one session; ``agent`` / ``user`` are factories (served on loopback as built-in sides,
    as a run serves them) or ws:// URIs (external sides)."""
    limits = limits or SessionLimits(max_duration_s=30, turn_timeout_s=5)
    setup = session_setup(scenario)
    builtin = frozenset(
        role for role, side in (("agent", agent), ("user", user)) if not isinstance(side, str)
    )
    if isinstance(agent, str) and isinstance(user, str):
        return await run_session(scenario, setup, agent, user, limits)
    if isinstance(agent, str):
        async with builtin_side(user) as user_uri:  # type: ignore[arg-type]
            return await run_session(scenario, setup, agent, user_uri, limits, builtin=builtin)
    if isinstance(user, str):
        async with builtin_side(agent) as agent_uri:
            return await run_session(scenario, setup, agent_uri, user, limits, builtin=builtin)
    async with builtin_side(agent) as agent_uri, builtin_side(user) as user_uri:
        return await run_session(scenario, setup, agent_uri, user_uri, limits, builtin=builtin)


# --- a scripted OpenAI-compatible chat-completions server -------------------------------------


def completion(
    text: str | None = None, calls: list[tuple[str, str, str]] = (), usage: tuple[int, int] = (10, 5)
):
    """A chat.completion body: ``text`` and tool ``calls`` as (id, name, raw_arguments)."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
            for cid, name, args in calls
        ]
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": "scripted",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if calls else "stop",
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)},
    }


@dataclass
class Step:
    """One scripted HTTP answer: ``status``, JSON ``body``, extra ``headers``, ``delay_s`` first."""

    body: dict[str, Any] | None = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


class ScriptedOpenAI:
    """Answers POST ``/v1/chat/completions`` with ``steps`` in order (the last one repeats), or
    with ``route(body)`` when given (a step chosen from the request). ``requests`` holds
    ``(monotonic time, parsed JSON body)`` of every request received. A GET (the run's endpoint
    check asks ``/v1/models``) is answered with ``models`` when given, else 501 (a server without a
    model list: reachable)."""

    def __init__(
        self,
        steps: list[Step],
        route: Callable[[dict[str, Any]], Step] | None = None,
        models: Step | None = None,
    ):
        self.steps = steps
        self.route = route
        self.models = models
        self.requests: list[tuple[float, dict[str, Any]]] = []
        #: The Authorization header of each request in ``requests``, in the same order.
        self.auth: list[str | None] = []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                step = outer.models
                if step is None:
                    self.send_error(501)
                    return
                self._answer(step)

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with outer.lock:
                    index = len(outer.requests)
                    outer.requests.append((time.monotonic(), body))
                    outer.auth.append(self.headers.get("authorization"))
                    step = outer.steps[min(index, len(outer.steps) - 1)] if outer.route is None else None
                self._answer(step or outer.route(body))  # type: ignore[misc]

            def _answer(self, step: Step) -> None:
                if step.delay_s:
                    time.sleep(step.delay_s)
                payload = json.dumps(step.body or {"error": {"message": "scripted failure"}}).encode()
                try:
                    self.send_response(step.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    for key, value in step.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:
                    pass  # the client gave up (timeout test)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.block_on_close = False
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> ScriptedOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


def run_options(*args: Any, **kwargs: Any) -> RunOptions:
    """:class:`engine.run.runner.RunOptions` with every registered domain plugin (as the CLI passes them)."""
    kwargs.setdefault("plugins", plugins())
    return RunOptions(*args, **kwargs)


def alter_gold_call(trace: GoldTrace, tool: str, edit: Callable[[GoldStep], GoldStep]) -> GoldTrace:
    """``trace`` with its first call of ``tool`` replaced by ``edit(step)``; AssertionError when the
    trace has no such call."""
    steps = list(trace.steps)
    for i, step in enumerate(steps):
        if step.kind == "tool_call" and step.tool == tool:
            steps[i] = edit(step)
            return GoldTrace(tuple(steps), trace.format)
    raise AssertionError(f"no {tool} call to alter")


@contextmanager
def raw_server(body: bytes, content_type: str = "application/json", status: int = 200) -> Iterator[str]:
    """A loopback server answering every POST with ``body``; yields its base URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", 0)))
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
