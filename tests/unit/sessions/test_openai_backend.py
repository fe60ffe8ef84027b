"""The openai:MODEL backend with the real ``openai`` client against a scripted OpenAI-compatible
HTTP server on loopback: tool calls, malformed arguments, unknown tools, 429 + Retry-After,
a hang that hits the timeout, the user simulator, and the API key rule. On the mock shop's scenarios."""

from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from engine.domains.registry import plugins
from engine.run.runner import run
from engine.session.backends import BackendError, SessionInfo, TurnInfo
from engine.session.backends.openai_chat import OpenAIFactory
from engine.session.backends.replay import ReplayFactory
from engine.spec.loader import LoadedDomain, load_domain
from engine.util.errors import UsageError
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR
from tests.runtime_helpers import ScriptedOpenAI, Step, completion, raw_server, run_options, session_between

SCENARIO = "mock__cancel_order"


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALCTL_TEST_KEY", "sk-test")


def _factory(server: ScriptedOpenAI, timeout_s: float = 5.0, retries: int = 2) -> OpenAIFactory:
    return OpenAIFactory(
        "scripted-model",
        base_url=server.base_url,
        api_key_env="EVALCTL_TEST_KEY",
        request_timeout_s=timeout_s,
        max_retries=retries,
    )


def _tool_messages(body: dict) -> list[dict]:
    return [json.loads(m["content"]) for m in body["messages"] if m["role"] == "tool"]


async def test_tool_calls_malformed_arguments_and_unknown_tool(loaded: LoadedDomain) -> None:
    scenario = loaded.scenario(SCENARIO)
    first_call = scenario.gold_trace.tool_calls()[0]
    steps = [
        Step(completion(None, [("call_1", first_call.tool, json.dumps(dict(first_call.arguments)))])),
        Step(completion(None, [("call_2", "get_order", '{"order_id": ')])),
        Step(completion("Let me check.", [("call_3", "frobnicate_booking", "{}")])),
        Step(completion("I found your booking. Anything else?")),
        Step(completion("Goodbye.", [("call_4", "end_conversation", "{}")], usage=(40, 7))),
    ]
    with ScriptedOpenAI(steps) as server:
        result = await session_between(scenario, _factory(server), ReplayFactory({SCENARIO: scenario}))
    assert result.stop_reason == "exit", result.error
    names = [c["name"] for c in result.tool_calls]
    assert first_call.tool == "get_order"
    assert names == ["get_order", "get_order", "frobnicate_booking", "end_conversation"]
    assert result.tool_calls[1]["arguments"] == '{"order_id": '  # passed on as-is
    bodies = [body for _, body in server.requests]
    assert len(bodies) == 5
    assert bodies[0]["model"] == "scripted-model" and bodies[0]["messages"][0]["role"] == "system"
    assert {t["function"]["name"] for t in bodies[0]["tools"]} >= {"get_order", "end_conversation"}
    assert _tool_messages(bodies[1])[-1]["status"] == "success"
    malformed = _tool_messages(bodies[2])[-1]
    unknown = _tool_messages(bodies[3])[-1]
    assert malformed["status"] == "error" and unknown["status"] == "error"
    assert unknown["error_type"] == "tool_not_found"
    assert bodies[4]["messages"][-1] == {"role": "user", "content": scenario_user_line(loaded, 1)}
    usage = result.usage["agent"]
    assert usage == {
        "model": "openai:scripted-model",
        "prompt_tokens": 80,
        "completion_tokens": 27,
        "calls": 5,
    }
    assert result.agent_backend == "openai:scripted-model"


def scenario_user_line(loaded: LoadedDomain, index: int) -> str:
    lines = [line for line in loaded.scenario(SCENARIO).gold_trace.lines("user")]
    return lines[index]


async def test_429_then_success_honours_retry_after(loaded: LoadedDomain) -> None:
    scenario = loaded.scenario(SCENARIO)
    steps = [
        Step(status=429, headers={"retry-after": "0.6"}),
        Step(completion("Goodbye.", [("c1", "end_conversation", "{}")])),
    ]
    with ScriptedOpenAI(steps) as server:
        result = await session_between(scenario, _factory(server), ReplayFactory({SCENARIO: scenario}))
    assert result.stop_reason == "exit", result.error
    (t1, _), (t2, _) = server.requests
    assert t2 - t1 >= 0.6  # the wait the server asked for, not the client's 0.5 s first backoff
    assert result.usage["agent"]["calls"] == 1  # retries are not model calls


async def test_5xx_after_retries_is_an_error(loaded: LoadedDomain) -> None:
    scenario = loaded.scenario(SCENARIO)
    with ScriptedOpenAI([Step(status=503, headers={"retry-after-ms": "10"})]) as server:
        result = await session_between(
            scenario, _factory(server, retries=2), ReplayFactory({SCENARIO: scenario})
        )
    assert len(server.requests) == 3
    assert result.stop_reason == "error"
    # the endpoint is named: model and base URL
    expected = f"agent side reported backend_error: openai:scripted-model at {server.base_url}/: HTTP 503"
    assert expected in (result.error or "")


async def test_hang_hits_the_timeout(loaded: LoadedDomain) -> None:
    scenario = loaded.scenario(SCENARIO)
    with ScriptedOpenAI([Step(completion("too late"), delay_s=3.0)]) as server:
        result = await session_between(
            scenario, _factory(server, timeout_s=0.3, retries=0), ReplayFactory({SCENARIO: scenario})
        )
    assert result.stop_reason == "timeout"
    # the hung server is named, with how long and how often it was asked; not the agent's doing
    assert result.error == (
        f"agent side reported backend_timeout: openai:scripted-model: model endpoint {server.base_url}/ "
        "did not answer in 0.3 s, 1 try"
    )
    assert result.error_source == "agent_model"
    assert result.duration_s < 2.0


async def test_openai_user_simulator_opens_with_the_starting_utterance_and_hangs_up(
    loaded: LoadedDomain,
) -> None:
    scenario = loaded.scenario(SCENARIO)
    steps = [Step(completion("Thanks, that is all.", [("u1", "end_call", "{}")]))]
    with ScriptedOpenAI(steps) as server:
        result = await session_between(scenario, ReplayFactory({SCENARIO: scenario}), _factory(server))
    said = [e["content"] for e in result.transcript if e["role"] == "user" and e["type"] == "utterance"]
    assert said == [scenario.user.starting_utterance, "Thanks, that is all."]
    [(_, body)] = server.requests  # the opening line needed no request
    assert [t["function"]["name"] for t in body["tools"]] == ["end_call"]
    assert [m["role"] for m in body["messages"]] == ["system", "assistant", "user"]
    # the user hung up; the replay agent's closing turn ends the call
    assert ("user", "hangup") in [(e["role"], e["type"]) for e in result.transcript]
    assert result.stop_reason == "exit"


def test_api_key_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    with pytest.raises(UsageError, match="environment variable NO_SUCH_KEY_VAR is not set"):
        OpenAIFactory("m", base_url="http://127.0.0.1:9/v1", api_key_env="NO_SUCH_KEY_VAR")


async def test_run_with_openai_agent_end_to_end(tmp_path: Path) -> None:
    steps = [Step(completion("Goodbye.", [("c1", "end_conversation", "{}")]))]
    with ScriptedOpenAI(steps) as server:
        opts = run_options(
            MOCK_SPEC_DIR,
            MOCK_DATA_ROOT,
            scenarios=(SCENARIO, "mock__shipped_refusal"),
            agent="openai:scripted-model",
            base_url=server.base_url,
            api_key_env="EVALCTL_TEST_KEY",
            output_dir=tmp_path,
            progress=False,
        )
        report = await run(opts)
    assert [r.stop_reason for r, _ in report.results()] == ["exit", "exit"]
    metrics = {r.scenario_name: m for r, m in report.results()}
    assert metrics[SCENARIO].signals.db_state_match is False  # the scripted agent changed nothing
    assert all(m.agent_backend == "openai:scripted-model" for _, m in report.results())


async def test_tool_rounds_per_turn_are_capped(loaded: LoadedDomain) -> None:
    from engine.session.conversation import SessionLimits

    scenario = loaded.scenario(SCENARIO)
    looping = [Step(completion(None, [("c", "get_order", '{"order_id": "O-100"}')]))]
    limits = SessionLimits(max_duration_s=10, turn_timeout_s=5, max_tool_rounds=3, max_turns=1)
    with ScriptedOpenAI(looping) as server:
        result = await session_between(
            scenario, _factory(server), ReplayFactory({SCENARIO: scenario}), limits
        )
    assert len(server.requests) == 4  # three rounds ran; the fourth step's calls were dropped
    assert len(result.tool_calls) == 3
    assert result.stop_reason == "timeout" and "max turns (1 agent turns)" in (result.error or "")


async def test_engine_turn_timeout_cancels_the_model_request(loaded: LoadedDomain) -> None:
    import time

    from engine.session.conversation import SessionLimits

    scenario = loaded.scenario(SCENARIO)
    limits = SessionLimits(max_duration_s=10, turn_timeout_s=0.3)
    t0 = time.monotonic()
    with ScriptedOpenAI([Step(completion("too late"), delay_s=3.0)]) as server:
        result = await session_between(
            scenario, _factory(server, timeout_s=5.0, retries=0), ReplayFactory({SCENARIO: scenario}), limits
        )
    assert result.stop_reason == "timeout" and "agent side sent nothing for 0.3 s" in (result.error or "")
    assert len(server.requests) == 1
    assert time.monotonic() - t0 < 1.5  # the side dropped the request instead of waiting for it


async def test_unreachable_endpoint_names_the_url(api_key: None) -> None:
    import socket

    from engine.session.backends import BackendError, SessionInfo, TurnInfo

    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    factory = OpenAIFactory(
        "m", base_url=f"http://127.0.0.1:{port}/v1", api_key_env="EVALCTL_TEST_KEY", max_retries=0
    )
    try:
        backend = factory(SessionInfo(role="agent", scenario={}, system_prompt="x", tools=[]))
        with pytest.raises(BackendError, match=rf"cannot reach http://127.0.0.1:{port}/v1/ .*--base-url"):
            await backend.respond([{"role": "system", "content": "x"}], [], TurnInfo(index=0))
    finally:
        await factory.aclose()


async def test_diff_says_where_a_model_left_the_gold_path(tmp_path: Path, loaded: LoadedDomain) -> None:
    """Against the replay caller, a model agent that deviates hears gold lines that no longer fit:
    evalctl diff says where the conversation left the gold path (issue #10 §4)."""
    from engine.results.diff import diff_run, render_text

    first = loaded.scenario(SCENARIO).gold_trace.tool_calls()[0]
    assert (first.tool, dict(first.arguments)) == ("get_order", {"order_id": "O-100"})
    steps = [
        Step(completion(None, [("c1", "get_order", '{"order_id": "O-101"}')])),
        Step(completion("Goodbye.", [("c2", "end_conversation", "{}")])),
    ]
    with ScriptedOpenAI(steps) as server:
        opts = run_options(
            MOCK_SPEC_DIR,
            MOCK_DATA_ROOT,
            scenarios=(SCENARIO,),
            agent="openai:scripted-model",
            base_url=server.base_url,
            api_key_env="EVALCTL_TEST_KEY",
            output_dir=tmp_path,
            progress=False,
        )
        await run(opts)
    (d,) = diff_run(tmp_path, SCENARIO)
    assert d.gold_path is not None and d.gold_path.startswith(
        'left the gold path at tool call 1 (the agent\'s turn 1): gold get_order(order_id="O-100"), '
        'got get_order(order_id="O-101")'
    )
    assert "conversation: left the gold path at tool call 1" in render_text([d], tmp_path)
    # a result with no verdict (the agent's endpoint failed) left no path worth naming
    errored = dataclasses.replace(d, error_cause="agent: APIError: HTTP 500")
    text = render_text([errored], tmp_path)
    assert "no verdict: agent: APIError: HTTP 500" in text and "conversation:" not in text
    (path,) = tmp_path.glob("*/scenario_config/gold_path.json")  # written only for a replay caller
    assert json.loads(path.read_text())["ending_tools"] == ["end_conversation"]


async def _respond(base_url: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("EVALCTL_TEST_KEY", "sk-test")
    factory = OpenAIFactory("m", base_url=base_url, api_key_env="EVALCTL_TEST_KEY", max_retries=0)
    try:
        backend = factory(SessionInfo(role="agent", scenario={}, system_prompt="x", tools=[]))
        return await backend.respond([{"role": "system", "content": "x"}], [], TurnInfo(index=0))
    finally:
        await factory.aclose()


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"<html>gateway</html>", "text/html"),
        (b"{not json", "application/json"),
        (b"[1, 2]", "application/json"),
        (json.dumps({"choices": [{"index": 0, "message": None}]}).encode(), "application/json"),
        (json.dumps({"choices": [1]}).encode(), "application/json"),
        (json.dumps({"choices": []}).encode(), "application/json"),
        (json.dumps({"error": {"message": "overloaded", "code": 500}}).encode(), "application/json"),
    ],
    ids=["html", "bad-json", "json-list", "message-null", "choice-not-object", "no-choices", "200-error"],
)
async def test_a_200_that_is_not_a_chat_completion_is_a_rejected_backend_error(
    body: bytes, content_type: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # before: AttributeError / JSONDecodeError escaped as the side's internal_error, with a traceback
    expected = r"openai:m: the reply of http://127\.0\.0\.1:\d+/v1/chat/"
    with raw_server(body, content_type) as url, pytest.raises(BackendError, match=expected) as caught:
        await _respond(url, monkeypatch)
    # the endpoint answered: what it said is the model's, so an agent's FAIL (agent_error), not error
    assert caught.value.rejected


async def test_odd_but_usable_fields_are_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    # before: arguments sent as an object broke the side protocol; string token counts crashed it
    body = completion(None, [("c1", "get_reservation", "{}")])
    function = body["choices"][0]["message"]["tool_calls"][0]["function"]
    function["arguments"] = {"confirmation_number": "ABC123"}
    body["usage"] = {"prompt_tokens": "12", "completion_tokens": None, "total_tokens": 0}
    with raw_server(json.dumps(body).encode()) as url, warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        reply = await _respond(url, monkeypatch)
    assert json.loads(reply.tool_calls[0].arguments) == {"confirmation_number": "ABC123"}
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens, reply.usage.calls) == (0, 0, 1)
    # before: pydantic printed a serializer warning on the user's terminal for such a message
    assert [str(w.message) for w in seen if "Pydantic" in str(w.message)] == []


async def test_duplicate_tool_call_ids_are_made_unique(monkeypatch: pytest.MonkeyPatch) -> None:
    # before: two tool results carried the same tool_call_id (ambiguous; OpenAI rejects it)
    body = completion(None, [("c1", "get_reservation", "{}"), ("c1", "get_reservation", "{}")])
    with raw_server(json.dumps(body).encode()) as url:
        reply = await _respond(url, monkeypatch)
    ids = [c.call_id for c in reply.tool_calls]
    assert ids[0] == "c1" and len(set(ids)) == 2


@pytest.mark.parametrize(("status", "hint"), [(401, "API key"), (404, "model name 'm'")])
async def test_client_errors_are_not_retried_and_say_what_to_check(
    status: int, hint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVALCTL_TEST_KEY", "sk-test")
    with ScriptedOpenAI([Step(status=status)]) as server:
        factory = OpenAIFactory("m", base_url=server.base_url, api_key_env="EVALCTL_TEST_KEY", max_retries=3)
        try:
            backend = factory(SessionInfo(role="agent", scenario={}, system_prompt="x", tools=[]))
            with pytest.raises(BackendError, match=rf"HTTP {status}: .*{hint}"):
                await backend.respond([{"role": "system", "content": "x"}], [], TurnInfo(index=0))
        finally:
            await factory.aclose()
    assert len(server.requests) == 1


async def test_model_text_with_a_lone_surrogate_is_made_encodable(monkeypatch: pytest.MonkeyPatch) -> None:
    body = json.dumps(completion("Bonjour \ud800!", [("c\udc00", "get_reservation", '{"x": "\\ud800"}')]))
    with raw_server(body.encode()) as url:
        reply = await _respond(url, monkeypatch)
    assert reply.text == "Bonjour ?!" and reply.tool_calls[0].call_id == "c?"
    for value in (reply.text, reply.tool_calls[0].call_id, reply.tool_calls[0].arguments):
        value.encode("utf-8")  # before: UnicodeEncodeError on the next request


async def test_a_refusal_is_what_the_model_said(monkeypatch: pytest.MonkeyPatch) -> None:
    # before: content null + refusal read as a silent turn (the transcript lost the refusal)
    body = completion(None)
    body["choices"][0]["message"]["refusal"] = "I can't help with that."
    with raw_server(json.dumps(body).encode()) as url:
        reply = await _respond(url, monkeypatch)
    assert reply.text == "I can't help with that."


async def test_a_multi_line_server_error_is_one_line_in_the_session_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from engine.session.backends.replay import ReplayFactory
    from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR
    from tests.runtime_helpers import session_between

    monkeypatch.setenv("EVALCTL_TEST_KEY", "sk-test")
    scenario = load_domain(MOCK_SPEC_DIR, MOCK_DATA_ROOT, plugins=plugins()).scenario("mock__cancel_order")
    body = {"error": {"message": "upstream failed:\r\n  Traceback (most recent call last)\n\x1b[31mboom"}}
    with ScriptedOpenAI([Step(body, status=400)]) as server:
        factory = OpenAIFactory("m", base_url=server.base_url, api_key_env="EVALCTL_TEST_KEY", max_retries=0)
        result = await session_between(scenario, factory, ReplayFactory({scenario.name: scenario}))
    # before: the message's newlines and ANSI escape went into the progress line and all_summary.txt
    error = result.error or ""
    assert "HTTP 400" in error and "upstream failed:   Traceback (most recent call last) [31mboom" in error
    assert not any(ch in error for ch in "\r\n\x1b")
