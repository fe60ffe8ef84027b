"""A gold-playing OpenAI-compatible chat-completions server on loopback (``evalctl serve model``):
point an agent built on any framework (pipecat, LiveKit, your own loop with the ``openai``
client) at it instead of a real model, and a run shows whether the agent's wiring is right
without a key or a cost: every tool registered and called with its arguments as the model sent
them, each tool result handed back, the call ended. The user's LLM client talks to it over real
HTTP (streamed answers as server-sent events, or one JSON body); the adapters' tests and
benchmarks use it the same way.

:class:`GoldLLM` plays each scenario's gold agent turns as a model would (the replay backend's
turns, ``engine.session.backends.replay.split_trace``): it finds the scenario from the request
(the caller lines so far), answers a request ending with a caller line with that turn's words
and tool calls (the hang-up tool added on the last turn, as replay does) and a request ending
with tool results with an empty answer. ``steps`` replaces that with a scripted list of answers
(:class:`Answer`), one per request, for the faithfulness tests. ``heard=True`` is for a bot that
hears the caller through speech recognition (a voice run): its caller lines are what the
recogniser made of the gold lines, so a request is matched to the gold whose caller lines are
closest (difflib's ratio over the words, summed) with as many lines. Every answer reports
:data:`USAGE` (a streamed one on its last chunk, as ``include_usage`` asks); ``usage=False``
leaves it out, as a server that counts no tokens. A request that matches no scenario gets "I am
sorry, I did not follow." (an agent that rephrased the caller, or a scenario not served).
"""

from __future__ import annotations

import difflib
import json
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from engine.core.model import Scenario
from engine.session.backends.replay import gold_script

#: The token use each answer reports.
USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


@dataclass(frozen=True)
class Answer:
    """One completion: ``text`` and tool ``calls`` as ``(id, name, raw_arguments)``."""

    text: str = ""
    calls: tuple[tuple[str, str, str], ...] = ()


@dataclass
class _Gold:
    user_lines: list[str]
    turns: list[Answer]


def _gold(scenario: Scenario) -> _Gold:
    script = gold_script(scenario)
    ending = {t.name for t in scenario.tools.tools if t.ends_call}
    hangup = next((t.name for t in scenario.tools.tools if t.ends_call == "exit"), "end_conversation")
    turns = []
    for k, turn in enumerate(script.agent_turns):
        calls = [
            (f"g{k}-{i}", name, json.dumps(p, ensure_ascii=False)) for i, (name, p) in enumerate(turn.calls)
        ]
        if k == len(script.agent_turns) - 1 and not any(name in ending for name, _ in turn.calls):
            calls.append((f"g{k}-end", hangup, "{}"))
        turns.append(Answer(turn.text, tuple(calls)))
    return _Gold(list(script.user_lines), turns)


class GoldLLM:
    """The server (module doc) on ``host``:``port`` (0: any free port). ``requests`` holds the
    request bodies answered; use as a context manager; ``base_url`` is its
    ``http://HOST:PORT/v1``. Raises OSError when the port cannot be bound."""

    def __init__(
        self,
        scenarios: Iterable[Scenario] = (),
        steps: list[Answer] | None = None,
        heard: bool = False,
        usage: bool = True,
        host: str = "127.0.0.1",
        port: int = 0,
    ):
        self.golds = {s.name: _gold(s) for s in scenarios if s.gold_trace is not None}
        self.steps = steps
        self.heard = heard
        self.usage = usage
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # one segment per answer, sent at once: headers and body written separately would
            # meet the client's delayed ACK (~40 ms a request on Linux loopback)
            disable_nagle_algorithm = True
            wbufsize = 1 << 16

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                with outer.lock:
                    index = len(outer.requests)
                    outer.requests.append(body)
                answer = outer.answer(body, index)
                if body.get("stream"):
                    payload = b"".join(_sse(answer, body.get("model", "gold"), outer.usage))
                    content_type = "text/event-stream"
                else:
                    payload = json.dumps(_completion(answer, body.get("model", "gold"), outer.usage)).encode()
                    content_type = "application/json"
                self.send_response(200)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer((host, port), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def __enter__(self) -> GoldLLM:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()

    def answer(self, body: dict[str, Any], index: int) -> Answer:
        """The answer to request number ``index`` (0-based) with JSON ``body``."""
        if self.steps is not None:
            return self.steps[min(index, len(self.steps) - 1)]
        messages = body.get("messages", [])
        if messages and messages[-1].get("role") == "tool":
            return Answer()
        users = [_text(m) for m in messages if m.get("role") == "user"]
        for gold in self.golds.values():
            if gold.user_lines[: len(users)] == users:
                return _turn(gold, len(users) - 1)
        if self.heard and users:
            near = [g for g in self.golds.values() if len(g.user_lines) >= len(users)]
            if near:
                return _turn(max(near, key=lambda g: _closeness(g.user_lines, users)), len(users) - 1)
        return Answer("I am sorry, I did not follow.")


def _turn(gold: _Gold, turn: int) -> Answer:
    return gold.turns[turn] if 0 <= turn < len(gold.turns) else Answer()


def _closeness(lines: list[str], heard: list[str]) -> float:
    def words(text: str) -> list[str]:
        return re.findall(r"[a-z0-9']+", text.lower())

    return sum(
        difflib.SequenceMatcher(None, words(a), words(b)).ratio() for a, b in zip(lines, heard, strict=False)
    )


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):  # content parts
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def _completion(answer: Answer, model: str, usage: bool = True) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": answer.text or None}
    if answer.calls:
        message["tool_calls"] = [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
            for cid, name, args in answer.calls
        ]
    finish = "tool_calls" if answer.calls else "stop"
    return {
        "id": "chatcmpl-gold",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        **({"usage": dict(USAGE)} if usage else {}),
    }


def _sse(answer: Answer, model: str, usage: bool = True) -> Iterable[bytes]:
    def event(delta: dict[str, Any], finish: str | None = None) -> bytes:
        chunk = {
            "id": "chatcmpl-gold",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return f"data: {json.dumps(chunk)}\n\n".encode()

    yield event({"role": "assistant", "content": ""})
    if answer.text:
        yield event({"content": answer.text})
    for i, (cid, name, args) in enumerate(answer.calls):
        head = {"index": i, "id": cid, "type": "function", "function": {"name": name, "arguments": ""}}
        yield event({"tool_calls": [head]})
        if args:
            yield event({"tool_calls": [{"index": i, "function": {"arguments": args}}]})
    yield event({}, "tool_calls" if answer.calls else "stop")
    if usage:
        tail = {
            "id": "chatcmpl-gold",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": [],
            "usage": dict(USAGE),
        }
        yield f"data: {json.dumps(tail)}\n\n".encode()
    yield b"data: [DONE]\n\n"
