"""Issue #9 §5–§7: artifacts record each tool result as it was sent; the transport and the model
endpoints fail fast and say where (keepalive, endpoint checks, provider fields kept in the history);
conversations that go nowhere end early. Real sessions of the mock shop over loopback WebSockets and
scripted HTTP servers; waits are on events, never on the clock."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import websockets

import engine.session.sides.link as link
from cli import main
from engine.core.model import Scenario
from engine.domains.registry import plugins
from engine.session.backends import BackendReply, ToolCallRequest, TurnInfo, Usage
from engine.session.backends.replay import ReplayFactory
from engine.session.conversation import SessionLimits
from engine.spec.loader import load_domain
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR
from tests.runtime_helpers import ScriptedOpenAI, Step, completion, say, scripted_factory, session_between

SPEC, DATA = MOCK_SPEC_DIR, MOCK_DATA_ROOT
CANCEL = "mock__cancel_order"
#: Bound on waits for events a working engine sets within seconds; it only stops a broken engine
#: from hanging the suite.
PATIENCE_S = 60.0


@pytest.fixture(scope="module")
def scenario() -> Scenario:
    return load_domain(SPEC, DATA, plugins=plugins()).scenario(CANCEL)


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "local")


# --- §5 tool results as sent ----------------------------------------------------------------------


class _Recorder:
    """An agent that looks an order up, cancels it, looks again, then hangs up; it keeps the tool
    results it was sent."""

    name = "recorder"

    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []

    async def respond(self, messages: list[dict[str, Any]], tools: Any, turn: TurnInfo) -> BackendReply:
        self.received = [json.loads(m["content"]) for m in messages if m["role"] == "tool"]
        if turn.round:
            return BackendReply(usage=Usage(calls=1))
        steps = [("get_order", '{"order_id": "O-100"}'), ("cancel_order", '{"order_id": "O-100"}')]
        steps += [("get_order", '{"order_id": "O-100"}'), ("end_conversation", "{}")]
        name, args = steps[min(turn.index, 3)]
        return BackendReply("One moment.", tool_calls=[ToolCallRequest(f"c{turn.index}", name, args)])


async def test_a_tool_result_is_recorded_as_it_was_sent(scenario: Scenario, tmp_path: Path) -> None:
    from engine.core.options import ScoringOptions
    from engine.results.scoring_stage import finish_session

    live = {"status": "success", "order_id": "O-100", "seats_left": 22}

    def leaky_read(db: dict, args: Any, ctx: Any) -> dict:
        return live  # a handler that hands out a live object (against the handler contract)

    def write(db: dict, args: Any, ctx: Any) -> dict:
        live["seats_left"] -= 1  # a later call changes it
        return {"status": "success"}

    runs = {"get_order": leaky_read, "cancel_order": write}
    tools = tuple(replace(t, run=runs.get(t.name, t.run)) for t in scenario.domain.tools.tools)
    sc = replace(scenario, domain=replace(scenario.domain, tools=replace(scenario.domain.tools, tools=tools)))
    agent = _Recorder()
    result = await session_between(sc, lambda info: agent, scripted_factory(lambda turn: say("Okay.")))
    assert result.stop_reason == "exit", result.error
    await finish_session(tmp_path, sc, result, 1, ScoringOptions())
    on_disk = json.loads((tmp_path / CANCEL / "tool_calls.json").read_text())
    events = (tmp_path / CANCEL / "transcript.jsonl").read_text().splitlines()
    shown = [json.loads(e)["content"]["result"] for e in events if '"tool_result"' in e]
    sent = [r for r in agent.received if "seats_left" in r]
    # before: both files showed 21 for the first look-up (the live object after the write)
    assert [r["seats_left"] for r in sent] == [22, 21]
    assert [c["result"].get("seats_left") for c in on_disk] == [22, None, 21, None]
    assert [r.get("seats_left") for r in shown] == [22, None, 21, None]


# --- §6 transport and endpoints -------------------------------------------------------------------


class _BlockingAgent:
    """An external agent in its own thread and event loop that blocks that loop for ``block_s``
    seconds in its first turn (answering no ping meanwhile), then ends the call."""

    def __init__(self, block_s: float):
        self.block_s = block_s
        self.ready = threading.Event()
        self.uri = ""
        self.thread = threading.Thread(target=lambda: asyncio.run(self._serve()), daemon=True)

    async def _serve(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.stop = self.loop.create_future()
        async with websockets.serve(self._session, "127.0.0.1", 0) as server:
            self.uri = f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}"
            self.ready.set()
            await self.stop

    async def _session(self, ws: Any) -> None:
        start = json.loads(await ws.recv())
        await ws.send(json.dumps({"v": 1, "type": "session.ready", "id": "a0", "reply_to": start["id"]}))
        turn = json.loads(await ws.recv())
        time.sleep(self.block_s)  # thinking, with the event loop blocked
        call = {"v": 1, "type": "tool.call", "id": "a1", "reply_to": turn["id"], "call_id": "c1"}
        await ws.send(json.dumps({**call, "name": "end_conversation", "arguments": "{}"}))
        await ws.recv()
        await ws.send(
            json.dumps({"v": 1, "type": "turn.response", "id": "a2", "reply_to": turn["id"], "text": ""})
        )
        await ws.recv()  # session.end

    def __enter__(self) -> str:
        self.thread.start()
        assert self.ready.wait(PATIENCE_S)
        return self.uri

    def __exit__(self, *exc: Any) -> None:
        self.loop.call_soon_threadsafe(self.stop.set_result, None)
        self.thread.join(PATIENCE_S)


async def test_keepalive_never_drops_a_side_inside_its_turn_timeout(
    scenario: Scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = link.connect

    def scaled(uri: str, **kw: Any) -> Any:
        # time runs 400 times faster for the keepalive: 20 s pings are 0.05 s; the library's
        # default 20 s pong timeout (the engine's before) would be 0.05 s too
        for key in ("ping_interval", "ping_timeout"):
            value = kw.get(key, 20.0)
            kw[key] = None if value is None else value / 400
        return real(uri, **kw)

    monkeypatch.setattr(link, "connect", scaled)
    limits = SessionLimits(max_duration_s=PATIENCE_S, turn_timeout_s=PATIENCE_S)
    with _BlockingAgent(block_s=1.0) as uri:  # 400 s at the keepalive's scale, under turn_timeout_s
        result = await session_between(scenario, uri, ReplayFactory({CANCEL: scenario}), limits)
    # before: dropped after about two ping intervals with close code 1011
    assert result.stop_reason == "exit", result.error


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_model(out: Path, url: str, *extra: str) -> int:
    model = ["--scenarios", CANCEL, "--agent", "openai:m", "--base-url", url, *extra]
    return main(
        ["run", str(SPEC), "--data-root", str(DATA), "--output-dir", str(out), "--no-progress", *model]
    )


def test_an_unreachable_endpoint_stops_the_run_before_any_session(tmp_path: Path, capsys: Any) -> None:
    url = f"http://127.0.0.1:{_free_port()}/v1"
    t0 = time.monotonic()
    assert _run_model(tmp_path / "run", url) == 3
    err = capsys.readouterr().err.strip()
    # before: every session failed on its own, after its retries; the run exited 0
    # named: the role, the model and the URL
    assert (
        err.startswith(f"evalctl: agent model endpoint (openai:m) {url} is unreachable (") and "\n" not in err
    )
    assert not (tmp_path / "run").exists()
    assert time.monotonic() - t0 < PATIENCE_S


def test_an_unreachable_external_side_stops_the_run_before_any_session(tmp_path: Path, capsys: Any) -> None:
    uri = f"ws://127.0.0.1:{_free_port()}"
    out = tmp_path / "run"
    argv = ["run", str(SPEC), "--data-root", str(DATA), "--output-dir", str(out), "--no-progress"]
    assert main([*argv, "--scenarios", CANCEL, "--agent", uri]) == 3
    err = capsys.readouterr().err.strip()
    # before: every session became an `error` result ("cannot connect to the agent side"), exit 3
    assert err.startswith(f"evalctl: agent side {uri} is unreachable (") and "\n" not in err
    assert "evalctl serve" in err and not (tmp_path / "run").exists()


def test_an_endpoint_that_refuses_the_key_or_hangs_is_named(tmp_path: Path, capsys: Any) -> None:
    refused = Step({"error": {"message": "Incorrect API key provided"}}, status=401)
    with ScriptedOpenAI([Step(status=401)], models=refused) as server:
        assert _run_model(tmp_path / "a", server.base_url) == 3
        assert server.requests == []  # no session asked anything
    assert capsys.readouterr().err.strip() == (
        f"evalctl: agent model endpoint (openai:m) {server.base_url} refused the API key in $OPENAI_API_KEY "
        "(HTTP 401: Incorrect API key provided)"
    )
    with ScriptedOpenAI([Step(delay_s=3.0)], models=Step({"data": []}, delay_s=3.0)) as server:
        assert _run_model(tmp_path / "b", server.base_url, "--request-timeout", "0.5") == 3
    assert capsys.readouterr().err.strip() == (
        f"evalctl: agent model endpoint (openai:m) {server.base_url} did not answer in 0.5 s"
    )
    url = f"http://127.0.0.1:{_free_port()}/v1"
    args = ["--judge-model", "j", "--judge-base-url", url]
    assert main(["run", str(SPEC), "--data-root", str(DATA), "--output-dir", str(tmp_path / "c"), *args]) == 3
    said = capsys.readouterr().err.strip()
    assert said.startswith(f"evalctl: judge endpoint (j) {url} is unreachable (")
    assert said.endswith("; check --judge-base-url")  # the option that set it, not the agent's


async def test_provider_fields_of_a_tool_call_go_back_in_the_history(scenario: Scenario) -> None:
    from engine.session.backends.openai_chat import OpenAIFactory

    signed = completion(None, [("call_1", "get_order", '{"order_id": "O-100"}')])
    message = signed["choices"][0]["message"]
    message["reasoning_content"] = "The caller wants O-100."
    message["tool_calls"][0]["extra_content"] = {"google": {"thought_signature": "c2lnbmVk"}}
    end = completion("Goodbye.", [("call_2", "end_conversation", "{}")])
    with ScriptedOpenAI([Step(signed), Step(end)]) as server:
        factory = OpenAIFactory("m", base_url=server.base_url, max_retries=0)
        result = await session_between(scenario, factory, ReplayFactory({CANCEL: scenario}))
        await factory.aclose()
    assert result.stop_reason == "exit", result.error
    second = server.requests[1][1]["messages"]
    [sent_back] = [m for m in second if m["role"] == "assistant" and m.get("tool_calls")]
    # before: only id, type and function were sent back; a signing provider answered HTTP 400
    assert sent_back["reasoning_content"] == "The caller wants O-100."
    assert sent_back["tool_calls"][0]["extra_content"] == {"google": {"thought_signature": "c2lnbmVk"}}
    assert sent_back["tool_calls"][0]["id"] == "call_1"


# --- §7 conversations that go nowhere ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("agent_says", "user_says"),
    [("Goodbye, have a great day!", "Thanks, bye!"), ("Could you repeat that?", "What did you say?")],
    ids=["goodbyes", "repeats"],
)
async def test_a_conversation_that_goes_nowhere_ends_early(
    scenario: Scenario, agent_says: str, user_says: str
) -> None:
    agent = scripted_factory(lambda turn: say(agent_says))
    user = scripted_factory(
        lambda turn: say("Hi, I want to cancel an order.") if turn.index == 0 else say(user_says)
    )
    limits = SessionLimits(max_duration_s=PATIENCE_S, turn_timeout_s=PATIENCE_S)
    result = await session_between(scenario, agent, user, limits)
    # before: the sides went on until max_duration (900 s of paid requests per eva session)
    assert result.stop_reason == "no_progress" and result.error_source is None
    assert result.agent_turns + result.user_turns <= 7  # the opening, then at most two exchanges more
    assert result.error and result.error.startswith("the conversation went nowhere: 4 turns in a row")


def test_the_idle_turn_rule() -> None:
    from engine.session.stuck import is_idle

    assert is_idle("", 0, None) and is_idle("Bye!", 0, None) and is_idle("Have a nice day.", 0, "x")
    assert is_idle("Sorry, what?", 0, "sorry... WHAT") and not is_idle("Sorry, what?", 0, None)
    assert not is_idle("Goodbye.", 1, None)  # a tool call is progress (end_conversation included)
    long_line = "I have cancelled order O-100 and refunded the 42.50 dollars to your card, " * 3 + "bye"
    assert not is_idle(long_line, 0, None)
