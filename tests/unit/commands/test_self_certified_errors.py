"""Issue #25 §5: the system under test cannot turn its own failures into left-out results. A scripted
agent plays the mock shop's gold conversations and fails ``mock__cancel_order``: honestly (it hangs
up without cancelling), or instead by sending an ``error`` frame, dropping its TCP connection,
closing it, or (an ``openai:`` agent) getting an HTTP 400 from its endpoint. Every variant must
score the same headline, the same strict rate and the same ``--fail-under`` exit codes. Real runs
through the CLI on loopback; the agent's server runs in its own thread and event loop. The honest
variant of each kind of agent is run once per module (a fixture each), and every variant is compared
with it."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import websockets

from cli import main
from engine.domains.registry import plugins
from engine.spec.loader import load_domain
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR
from tests.record_helpers import metrics_row
from tests.runtime_helpers import ScriptedOpenAI, Step, completion
from tests.unit.sessions.test_external_agent import turns_of

SPEC, DATA = MOCK_SPEC_DIR, MOCK_DATA_ROOT
FAILED = "mock__cancel_order"
#: Bound on waits for events a working engine sets within seconds.
PATIENCE_S = 60.0
HEADLINES = ("Overall Success Rate", "Strict Success Rate")


def _scripts() -> dict[str, list[tuple[list[tuple[str, dict]], str]]]:
    loaded = load_domain(SPEC, DATA, plugins=plugins())
    return {s.name: turns_of(list(s.gold_trace)) for s in loaded.scenarios}


class WsAgent:
    """An external agent (``websockets`` + ``json`` only, as docs/protocol.md has it) that plays
    each scenario's gold turns; on :data:`FAILED` it fails at its first turn the way ``how`` says:
    ``honest`` (ends the call without doing the task), ``backend_error`` / ``backend_timeout`` /
    ``internal_error`` (an ``error`` frame), ``drop`` (the TCP connection aborted, no close frame),
    ``close`` (a close frame), ``talk`` (~300 KB of words every turn)."""

    def __init__(self, how: str):
        self.how = how
        self.scripts = _scripts()
        self.ready = threading.Event()
        self.uri = ""
        self.thread = threading.Thread(target=lambda: asyncio.run(self._serve()), daemon=True)

    async def _serve(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.stop = self.loop.create_future()
        async with websockets.serve(self._handler, "127.0.0.1", 0) as server:
            self.uri = f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}"
            self.ready.set()
            await self.stop

    async def _handler(self, ws: Any) -> None:
        with contextlib.suppress(websockets.ConnectionClosed):
            await self._session(ws)

    async def _session(self, ws: Any) -> None:
        start = json.loads(await ws.recv())
        name = start["scenario"]["name"]
        await ws.send(json.dumps({"v": 1, "type": "session.ready", "id": "a0", "reply_to": start["id"]}))
        script, n = self.scripts[name], 0
        async for frame in ws:
            msg = json.loads(frame)
            if msg["type"] != "turn.request":
                return
            calls, line = script[msg["turn"]] if msg["turn"] < len(script) else ([], "")
            if name == FAILED and self.how == "talk":  # ~300 KB of words, to choke the user's model
                reply = {"v": 1, "type": "turn.response", "id": f"t{msg['turn']}", "reply_to": msg["id"]}
                await ws.send(json.dumps({**reply, "text": "Let me explain at length. " * 12_000}))
                continue
            if name == FAILED and self.how != "honest":
                if self.how == "drop":
                    ws.transport.abort()
                elif self.how == "close":
                    await ws.close()
                else:
                    error = {"v": 1, "type": "error", "id": "a1", "reply_to": msg["id"]}
                    await ws.send(json.dumps({**error, "code": self.how, "message": "model failed"}))
                return
            if name == FAILED:  # honest: goodbye, without the cancellation
                calls, line = [("end_conversation", {})], "Goodbye."
            elif msg["turn"] >= len(script) - 1 and not any(c == "transfer_to_agent" for c, _ in calls):
                calls = [*calls, ("end_conversation", {})]
            for tool, params in calls:
                n += 1
                call = {"v": 1, "type": "tool.call", "id": f"a{n}", "reply_to": msg["id"], "call_id": f"c{n}"}
                await ws.send(json.dumps({**call, "name": tool, "arguments": json.dumps(params)}))
                await ws.recv()  # the tool.result
            n += 1
            reply = {"v": 1, "type": "turn.response", "id": f"a{n}", "reply_to": msg["id"], "text": line}
            await ws.send(json.dumps(reply))

    def __enter__(self) -> str:
        self.thread.start()
        assert self.ready.wait(PATIENCE_S)
        return self.uri

    def __exit__(self, *exc: Any) -> None:
        self.loop.call_soon_threadsafe(self.stop.set_result, None)
        self.thread.join(PATIENCE_S)


def _run(out: Path, agent: tuple[str, ...], *extra: str) -> int:
    argv = ["run", str(SPEC), "--data-root", str(DATA), "--output-dir", str(out), "--no-progress"]
    return main([*argv, "--agent", *agent, *extra])


def _outcome(tmp_path: Path, agent: tuple[str, ...]) -> dict[str, Any]:
    """The headline lines (stdout and all_summary.txt), summary.json's rates and the exit codes of
    a run, ``--fail-under 0.9`` with and without ``--allow-errors``, and ``--resume`` of it."""
    codes = {}
    with contextlib.redirect_stdout(io.StringIO()) as stdout:
        for label, extra in (("plain", ()), ("fail_under", ("--fail-under", "0.9"))):
            codes[label] = _run(tmp_path / label, agent, *extra)
        codes["allow_errors"] = _run(tmp_path / "allow", agent, "--fail-under", "0.9", "--allow-errors")
    printed = stdout.getvalue()
    run = tmp_path / "plain"
    text = (run / "all_summary.txt").read_text(encoding="utf-8")
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    metrics = json.loads((run / FAILED / "metrics.json").read_text(encoding="utf-8"))
    before = (run / FAILED / "session.json").read_bytes()
    with contextlib.redirect_stdout(io.StringIO()):
        codes["resume"] = main(
            ["run", str(SPEC), "--data-root", str(DATA), "--resume", str(run), "--no-progress"]
        )
    return {
        "stdout": [line.split(" [95% CI")[0] for line in printed.splitlines() if line.startswith(HEADLINES)],
        # the headline lines, their intervals (the same counts give the same interval) cut off
        "text": [line.split(" [95% CI")[0] for line in text.splitlines() if line.startswith(HEADLINES)],
        "overall": summary["overall"],
        "strict": summary["strict"],
        "errors": summary["errors"],
        "codes": codes,
        "verdict": metrics["is_successful"],
        "stop_reason": metrics["stop_reason"],
        "error_cause": metrics["error_cause"],
        "resumed_again": (run / FAILED / "session.json").read_bytes() != before,
    }


def _same_headline(honest: dict[str, Any], got: dict[str, Any], passed: int = 2) -> None:
    rate = f"{100 * passed / 3:.1f}% ({passed}/3 scenarios; 0 errors)"
    expected = [f"Overall Success Rate: {rate}", f"Strict Success Rate (errors count as failures): {rate}"]
    assert honest["text"] == expected
    assert got["text"] == expected and got["stdout"] == expected * 3  # three runs printed them
    for key in ("overall", "strict", "errors", "codes", "verdict", "error_cause", "resumed_again"):
        assert got[key] == honest[key], key
    assert got["codes"] == {"plain": 0, "fail_under": 1, "allow_errors": 1, "resume": 0}
    assert got["verdict"] is False and got["error_cause"] is None and not got["resumed_again"]


@pytest.fixture(scope="module")
def honest_ws(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The outcome of the external agent that fails :data:`FAILED` honestly. Read it only."""
    with WsAgent("honest") as uri:
        return _outcome(tmp_path_factory.mktemp("honest_ws"), (uri,))


@pytest.mark.parametrize(
    ("how", "stop"),
    [
        ("backend_error", "agent_error"),
        ("backend_timeout", "agent_error"),
        ("internal_error", "agent_error"),
        ("drop", "agent_disconnected"),
        ("close", "agent_disconnected"),
    ],
)
def test_an_external_agent_that_errors_instead_of_failing_scores_the_same(
    how: str, stop: str, tmp_path: Path, honest_ws: dict[str, Any]
) -> None:
    honest = honest_ws
    assert honest["stop_reason"] == "exit"
    with WsAgent(how) as uri:
        got = _outcome(tmp_path / how, (uri,))
    # before: 100.0% (2/2 scenarios; 1 error left out), --allow-errors --fail-under 0.9 exited 0,
    # and --resume ran the "error" again
    _same_headline(honest, got)
    assert got["stop_reason"] == stop


#: What an endpoint can answer instead of a chat completion: an HTTP 400, or a 200 whose body is not one.
REFUSALS: dict[str, Step] = {
    "400": Step({"error": {"message": "maximum context length exceeded"}}, status=400),
    "200-no-choices": Step({"choices": []}),
    "200-error": Step({"error": {"message": "overloaded"}}),
    "200-null-message": Step({"choices": [{"index": 0, "message": None, "finish_reason": "stop"}]}),
}


def _openai_route(reject: bool | str) -> Any:
    """An OpenAI-compatible endpoint whose model plays the gold turns of each scenario (known by
    its first caller line); on :data:`FAILED` it hangs up at once, or with ``reject`` the
    endpoint answers HTTP 400 (the context is too long; or ``REFUSALS[reject]``) instead."""
    scripts = _scripts()
    scenarios = load_domain(SPEC, DATA, plugins=plugins()).scenarios
    first_lines = {s.name: s.gold_trace.lines("user")[0] for s in scenarios}

    def route(body: dict[str, Any]) -> Step:
        messages = body["messages"]
        said = [m["content"] for m in messages if m["role"] == "user"]
        name = next(n for n, line in first_lines.items() if said and said[0] == line)
        turn = len(said) - 1
        if name == FAILED:
            if reject:
                return REFUSALS[reject if isinstance(reject, str) else "400"]
            return Step(completion("Goodbye.", [("e1", "end_conversation", "{}")]))
        calls, line = scripts[name][turn] if turn < len(scripts[name]) else ([], "")
        if turn >= len(scripts[name]) - 1:
            calls = [*calls, ("end_conversation", {})]
        if messages[-1]["role"] == "tool" or not calls:  # the calls were made: say the line
            return Step(completion(line))
        return Step(completion(None, [(f"t{turn}_{i}", c, json.dumps(a)) for i, (c, a) in enumerate(calls)]))

    return route


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "local")


def _openai_outcome(tmp_path: Path, reject: bool | str) -> dict[str, Any]:
    with ScriptedOpenAI([], route=_openai_route(reject)) as server:
        return _outcome(tmp_path, ("openai:m", "--base-url", server.base_url))


@pytest.fixture(scope="module")
def honest_openai(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The outcome of the ``openai:`` agent whose model hangs up on :data:`FAILED`. Read it only."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_API_KEY", "local")
        yield _openai_outcome(tmp_path_factory.mktemp("honest_openai"), False)


def test_an_openai_agent_whose_request_is_refused_scores_as_when_it_fails(
    tmp_path: Path, honest_openai: dict[str, Any]
) -> None:
    outcomes = {False: honest_openai, True: _openai_outcome(tmp_path / "True", True)}
    # before: the 400 was the agent_model's error, left out of the rate. (The scripted model
    # plays shipped_refusal in too few turns: stalled, a failure in both variants.)
    _same_headline(outcomes[False], outcomes[True], passed=1)
    assert outcomes[True]["stop_reason"] == "agent_error"


def test_pass_hat_k_shows_its_denominators_and_the_trials_left_out() -> None:
    from engine.core.records.common import ErrorCause
    from engine.scoring.summary import build_summary, render_summary_text

    cause = ErrorCause("judge", "HTTP 503")
    rows = [
        metrics_row("a", trial=1),
        metrics_row("a", trial=2, is_successful="error", error_cause=cause),
        metrics_row("a", trial=3, is_successful="error", error_cause=cause),
        metrics_row("b", trial=1, is_successful=False, failed=("clean_exit",)),
        metrics_row("b", trial=2, is_successful=False, failed=("clean_exit",)),
        metrics_row("b", trial=3),
    ]
    summary = build_summary(rows, {"trials": 3})
    assert summary.pass_hat_k is not None
    assert summary.pass_hat_k.scenarios == {"1": 2, "2": 1, "3": 1}
    assert summary.pass_hat_k.errors_left_out == 2
    [line] = [x for x in render_summary_text(summary).splitlines() if x.startswith("pass^k")]
    # before: "pass^k over 3 trials: pass^1 = 0.667, pass^2 = 0.000, pass^3 = 0.000": a's one
    # trial with a verdict counted as if it were three
    assert line == (
        "pass^k over 3 trials: pass^1 = 0.667 [95% CI 33.3-100.0%] (2 scenarios), "
        "pass^2 = 0.000 [95% CI 0.0-79.3%] (1 scenario), pass^3 = 0.000 [95% CI 0.0-79.3%] (1 scenario); "
        "2 errors left out"
    )
    assert re.search(r"Strict Success Rate \(errors count as failures\): 33\.3% \(2/6 sessions; 2 errors\)",
                     render_summary_text(summary))  # fmt: skip


@pytest.mark.parametrize("refusal", [k for k in REFUSALS if k != "400"])
def test_an_openai_agent_endpoint_answering_200_with_no_completion_scores_as_when_it_fails(
    refusal: str, tmp_path: Path, honest_openai: dict[str, Any]
) -> None:
    outcomes = {False: honest_openai, refusal: _openai_outcome(tmp_path / refusal, refusal)}
    # before: the endpoint answered, yet the result was an agent_model error, left out of the rate
    _same_headline(outcomes[False], outcomes[refusal], passed=1)
    assert outcomes[refusal]["stop_reason"] == "agent_error"


class _ThirdPartyAgent:
    """A third-party backend: the gold conversation replayed, but on :data:`FAILED` it fails
    the way ``how`` says: ``raise`` (an exception of its own), ``backend`` / ``timeout``
    (a ``BackendError`` claiming its endpoint failed)."""

    def __init__(self, how: str):
        self.how, self.name = how, "thirdparty"

    async def respond(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], turn: Any) -> Any:
        from engine.session.backends import BackendError

        if self.how == "raise":
            raise RuntimeError("the plugin's own bug")
        raise BackendError("pretend my endpoint failed", timeout=self.how == "timeout")


def _third_party_scheme() -> Any:
    """The ``thirdparty:HOW`` backend scheme: :class:`_ThirdPartyAgent` on :data:`FAILED`, the gold
    replay elsewhere; ``thirdparty:honest`` hangs up on :data:`FAILED` without doing the task."""
    from engine.session.backends import registry
    from engine.session.backends.replay import ReplayFactory

    class ThirdParty(registry.BackendScheme):
        scheme = "thirdparty"
        usage = "thirdparty:HOW"
        gold_side = True

        @classmethod
        def factory(cls, spec: Any, options: registry.BackendOptions) -> Any:
            replay = ReplayFactory(options.scenarios)

            def make(info: Any) -> Any:
                if info.scenario.get("name") != FAILED:
                    return replay(info)
                if spec.args == "honest":  # hangs up without doing the task
                    return registry.NoopScheme.factory(spec, options)(info)
                return _ThirdPartyAgent(spec.args)

            return make

    return ThirdParty


def _third_party_outcome(tmp_path: Path, how: str, patch: pytest.MonkeyPatch) -> dict[str, Any]:
    from engine.session.backends import registry

    scheme = _third_party_scheme()
    patch.setattr(registry, "installed", lambda: {"thirdparty": scheme})
    return _outcome(tmp_path, (f"thirdparty:{how}", "--concurrency", "1"))


@pytest.fixture(scope="module")
def honest_third_party(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The outcome of ``thirdparty:honest``. Read it only."""
    with pytest.MonkeyPatch.context() as patch:
        return _third_party_outcome(tmp_path_factory.mktemp("honest_third_party"), "honest", patch)


@pytest.mark.parametrize("how", ["raise", "backend", "timeout"])
def test_a_third_party_agent_scheme_that_raises_scores_as_when_it_fails(
    how: str, tmp_path: Path, honest_third_party: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    got = _third_party_outcome(tmp_path / how, how, monkeypatch)
    # before: the plugin's raise was an engine error, its BackendError an agent_model error, left out
    _same_headline(honest_third_party, got)
    assert got["stop_reason"] == "agent_error"


def test_an_agent_that_talks_the_user_simulator_over_its_context_fails(tmp_path: Path) -> None:
    from engine.session.conversation import MAX_USER_FORWARD_CHARS

    def user_model(body: dict[str, Any]) -> Step:
        longest = max(len(str(m.get("content") or "")) for m in body["messages"])
        if longest > MAX_USER_FORWARD_CHARS - 1000:  # a model with a small context window
            return Step({"error": {"message": "maximum context length exceeded"}}, status=400)
        return Step(completion("Please go on."))

    with WsAgent("talk") as uri, ScriptedOpenAI([], route=user_model) as server:
        user = ("--user", "openai:u", "--base-url", server.base_url)
        code = _run(tmp_path / "run", (uri, *user), "--scenarios", FAILED, "--fail-under", "0.9")
    metrics = json.loads((tmp_path / "run" / FAILED / "metrics.json").read_text(encoding="utf-8"))
    # before: the user's 400 was a user_simulator error, left out of the rates, rerun by --resume
    assert metrics["is_successful"] is False and metrics["error_cause"] is None, metrics["error"]
    assert metrics["stop_reason"] == "error" and "the agent's failure" in metrics["error"]
    assert code == 1  # a verdict: FAIL, not 3 (an error)
    sent = [m for _, b in server.requests for m in b["messages"] if m["role"] == "user"]
    assert max(len(m["content"]) for m in sent) < MAX_USER_FORWARD_CHARS + 100  # clipped, with its marker
    assert any("[... clipped by evalctl: the agent said 312000 characters]" in m["content"] for m in sent)
    lines = (tmp_path / "run" / FAILED / "transcript.jsonl").read_text(encoding="utf-8").splitlines()
    cuts = [json.loads(line) for line in lines if '"clipped"' in line]
    assert cuts and cuts[0]["content"] == {"turn": 0, "chars": 312000, "forwarded": MAX_USER_FORWARD_CHARS}
