"""Second round of breaking evalctl: the openai backend against malformed servers, scoring traps,
artifacts with odd content, concurrency. Each test failed before the fix it pins."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from engine.backends import BackendError, SessionInfo, TurnInfo
from engine.backends.openai_chat import OpenAIFactory
from tests.runtime_helpers import ScriptedOpenAI, Step, completion

# --- openai backend: malformed replies ----------------------------------------------------------


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


async def _respond(base_url: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("EVALCTL_TEST_KEY", "sk-test")
    factory = OpenAIFactory("m", base_url=base_url, api_key_env="EVALCTL_TEST_KEY", max_retries=0)
    try:
        backend = factory(SessionInfo(role="agent", scenario={}, system_prompt="x", tools=[]))
        return await backend.respond([{"role": "system", "content": "x"}], [], TurnInfo(index=0))
    finally:
        await factory.aclose()


def _with(**message: Any) -> bytes:
    body = completion("hi")
    body["choices"][0]["message"].update(message)
    return json.dumps(body).encode()


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"<html>gateway</html>", "text/html"),
        (b"{not json", "application/json"),
        (b"[1, 2]", "application/json"),
        (json.dumps({"choices": [{"index": 0, "message": None}]}).encode(), "application/json"),
        (json.dumps({"choices": [1]}).encode(), "application/json"),
    ],
    ids=["html", "bad-json", "json-list", "message-null", "choice-not-object"],
)
async def test_a_200_that_is_not_a_chat_completion_is_a_backend_error(
    body: bytes, content_type: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # before: AttributeError / JSONDecodeError escaped as the side's internal_error, with a traceback
    expected = r"openai:m: the reply of http://127\.0\.0\.1:\d+/v1/chat/"
    with raw_server(body, content_type) as url, pytest.raises(BackendError, match=expected):
        await _respond(url, monkeypatch)


async def test_odd_but_usable_fields_are_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    # before: arguments sent as an object broke the side protocol; string token counts crashed it
    body = completion(None, [("c1", "get_reservation", "{}")])
    function = body["choices"][0]["message"]["tool_calls"][0]["function"]
    function["arguments"] = {"confirmation_number": "ABC123"}
    body["usage"] = {"prompt_tokens": "12", "completion_tokens": None, "total_tokens": 0}
    with raw_server(json.dumps(body).encode()) as url:
        reply = await _respond(url, monkeypatch)
    assert json.loads(reply.tool_calls[0].arguments) == {"confirmation_number": "ABC123"}
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens, reply.usage.calls) == (0, 0, 1)


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


# --- scoring --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reference", "prediction"),
    [("$25.00", "25.00"), ("+1 555 0100", "1 555 0100"), ("a|b~c", "abc"), ("1–2", "12")],
)
def test_ignore_punctuation_drops_ascii_symbols_too(reference: str, prediction: str) -> None:
    from engine.scoring.action_match import is_action_match

    # before: '$', '+', '|', '~' are Unicode symbols (S*), so "$25.00" never matched "25.00"
    assert is_action_match([{"v": reference}], [{"v": prediction}], {"ignore_punctuation": True}) is True
    assert is_action_match([{"v": reference}], [{"v": prediction}], {}) is False


@pytest.mark.parametrize(
    "reply",
    [
        'I looked at {the booking} first. Verdict: {"score": 1.0, "reason": "ok"}',
        '```json\n{"score": 1.0, "reason": "a}b"}\n```\nTell me {if} you need more.',
        '{"score": 1.0, "reason": "ok"} {"note": "extra object"}',
    ],
)
def test_judge_reply_with_braces_in_the_chatter_is_parsed(reply: str) -> None:
    from engine.scoring.judge import parse_judge_reply

    # before: a greedy {.*} spanned the chatter's braces: 'not valid JSON', retried, then N/A
    assert parse_judge_reply(reply, 0) == (1.0, "ok" if "ok" in reply else "a}b", [])


@pytest.mark.parametrize(
    ("items", "message"),
    [
        ([{"index": True, "passed": True}], "no verdict for claim"),
        ([{"index": 1, "passed": True}, {"index": 1, "passed": False}], "two different verdicts"),
    ],
)
def test_judge_verdicts_with_bool_index_or_conflicts_are_refused(items: list, message: str) -> None:
    from engine.scoring.judge import parse_judge_reply

    # before: index true counted as claim 1; a conflicting second verdict silently won
    with pytest.raises(ValueError, match=message):
        parse_judge_reply(json.dumps({"score": 1.0, "nl_assertion_verdicts": items}), 1)



@pytest.mark.parametrize("usage", [{"prompt_tokens": "12", "completion_tokens": None}, "junk"])
async def test_judge_verdict_survives_odd_usage_fields(data_root: Path, usage: Any) -> None:
    from engine.options import ScoringOptions
    from engine.scoring.judge import run_judge
    from tests.mock_domain.eva_fixtures import eva_scenario, session

    # before: a TypeError on the token counts discarded the valid score: retried, then N/A
    sc = eva_scenario(data_root, "1.1.2")
    body = completion(json.dumps({"score": 1.0, "reason": "ok"}))
    body["usage"] = usage
    with raw_server(json.dumps(body).encode()) as url:
        out = await run_judge(
            sc, session(sc, None), ScoringOptions(judge_model="j", judge_base_url=url, judge_retry_delay_s=0)
        )
    assert (out.score, out.error, out.usage["calls"]) == (1.0, None, 1)


# --- artifacts: text that is not Unicode ------------------------------------------------------------


def test_a_frame_with_a_lone_surrogate_escape_is_bad_json() -> None:
    from engine.protocol import ProtocolError, decode

    # before: decoded fine, then the engine could not forward it (UnicodeEncodeError in websockets:
    # 'agent side disconnected') and the session's metrics.json was never written
    frame = '{"v": 1, "type": "turn.response", "id": "a1", "reply_to": "e1", "text": "hi \\ud800"}'
    with pytest.raises(ProtocolError, match="lone UTF-16 surrogate") as info:
        decode(frame)
    assert info.value.code == "bad_json"
    emoji = '{"v": 1, "type": "turn.response", "id": "a1", "reply_to": "e1", "text": "\\ud83d\\ude00"}'
    assert decode(emoji)["text"] == "\N{GRINNING FACE}"  # a proper pair is text


def test_tool_arguments_with_a_lone_surrogate_are_invalid_arguments() -> None:
    from engine.tools.arguments import parse_arguments

    args, err = parse_arguments('{"confirmation_number": "\\udc00"}')
    assert args is None and err is not None and err["error_type"] == "invalid_arguments"
    assert parse_arguments('{"last_name": "\\u00d1u\\u00f1ez"}') == ({"last_name": "Ñuñez"}, None)


async def test_model_text_with_a_lone_surrogate_is_made_encodable(monkeypatch: pytest.MonkeyPatch) -> None:
    body = json.dumps(completion("Bonjour \ud800!", [("c\udc00", "get_reservation", '{"x": "\\ud800"}')]))
    with raw_server(body.encode()) as url:
        reply = await _respond(url, monkeypatch)
    assert reply.text == "Bonjour ?!" and reply.tool_calls[0].call_id == "c?"
    for value in (reply.text, reply.tool_calls[0].call_id, reply.tool_calls[0].arguments):
        value.encode("utf-8")  # before: UnicodeEncodeError on the next request


def test_artifact_text_with_a_lone_surrogate_is_still_written(tmp_path: Path) -> None:
    from engine.artifacts import read_jsonl, write_jsonl

    # before: UnicodeEncodeError, and the scenario lost metrics.json (the result was 'missing')
    write_jsonl(tmp_path / "t.jsonl", [{"content": "a\ud800b", "n": "Ñ"}])
    assert read_jsonl(tmp_path / "t.jsonl") == [{"content": "a?b", "n": "Ñ"}]


# --- db_state_assertion predicates returning odd values ---------------------------------------------


@pytest.mark.parametrize(
    ("returned", "assert_value", "passed", "error"),
    [
        (("FL1", "FL2"), ["FL1", "FL2"], True, None),  # before: a tuple never equalled the YAML list
        (float("nan"), 0.0, False, "not JSON data"),  # before: NaN written into metrics.json
        ({"FL1"}, ["FL1"], False, "not JSON data"),  # before: a set written as the string "{'FL1'}"
        (1, True, False, None),  # True is not 1
        ([True, False], [1, 0], False, None),  # before: nested booleans equalled 1 and 0
        ({"refunded": True}, {"refunded": 1}, False, None),
        ({"a": [1.0, "x"]}, {"a": [1, "x"]}, True, None),
        (1.0, 1, True, None),
    ],
    ids=["tuple", "nan", "set", "int-vs-bool", "nested-bools", "dict-bool", "nested-float", "float-vs-int"],
)
def test_predicate_values_are_compared_as_json(
    monkeypatch: pytest.MonkeyPatch, returned: Any, assert_value: Any, passed: bool, error: str | None
) -> None:
    from engine.artifacts import dumps_json
    from engine.scoring import predicates

    verdict = predicates.evaluate_db_state_assertion(
        {"odd": lambda db: returned}, {"func_name": "odd", "arguments": {}, "assert_value": assert_value}, {}
    )
    assert verdict["passed"] is passed
    if error is None:
        assert "error" not in verdict
    else:
        assert error in verdict["error"]
    json.loads(dumps_json(verdict), parse_constant=lambda c: pytest.fail(f"{c} in metrics"))


# --- pass^k with N/A trials ---------------------------------------------------------------------------


def test_pass_hat_k_leaves_out_trials_without_a_verdict() -> None:
    from engine.scoring.summary import build_summary
    from tests.record_helpers import metrics_row

    rows = [metrics_row("qa_1", 1, True), metrics_row("qa_1", 2, "N/A"), metrics_row("qa_1", 3, True)]
    summary = build_summary(rows, {"trials": 3}).to_json()
    # before: the judge's N/A counted as a failure: pass^1 0.667, pass^2 0.333, while the
    # composite rate (which leaves N/A out) read 100%
    assert summary["overall"]["rate"] == 1.0
    assert summary["pass_hat_k"]["per_scenario"]["qa_1"] == {"1": 1.0, "2": 1.0}
    assert summary["pass_hat_k"]["overall"] == {"1": 1.0, "2": 1.0}


# --- two silent models ------------------------------------------------------------------------------


async def test_two_silent_sides_end_the_session_after_empty_turns(data_root: Path) -> None:
    from engine.domains.registry import load_domain
    from engine.session import SessionLimits
    from tests.conftest import SPEC_DIR
    from tests.runtime_helpers import scripted_factory, session_between

    scenario = load_domain(SPEC_DIR, data_root).scenario("eva_airline__3_1_5")
    agents: list = []
    users: list = []
    result = await session_between(
        scenario,
        scripted_factory(lambda turn: None, agents),  # content null, no tool calls, every turn
        scripted_factory(lambda turn: None, users),
        SessionLimits(max_duration_s=6, turn_timeout_s=5),
    )
    # before: the sides traded empty turns (each a model request) until max_duration (900 s in eva)
    assert result.stop_reason == "timeout"
    assert result.error == "10 turns in a row with nothing said and no tool call"
    assert len(agents[0].seen) + len(users[0].seen) == 10  # 10 model requests, not 900 s of them


def test_pass_hat_k_lines_when_trials_lack_verdicts() -> None:
    from dataclasses import replace

    from rich.console import Console

    from engine.commands.report import summary_table
    from engine.scoring.summary import build_summary, render_summary_text
    from tests.record_helpers import metrics_row

    rows = [
        metrics_row(name, t, verdict)
        for name, verdicts in (("a", (True, True)), ("b", (True, "N/A")))
        for t, verdict in enumerate(verdicts, 1)
    ]
    summary = build_summary(rows, {"trials": 2})
    console = Console(width=200, record=True)
    console.print(summary_table(summary))
    # pass^2 rests on scenario a alone (b has one trial with a verdict); before: '2 scenarios'
    lines = {line.split("│")[1].strip(): line for line in console.export_text().splitlines() if "│" in line}
    assert "1 scenarios" in lines["pass^2"] and "2 scenarios" in lines["pass^1"]
    none = build_summary([replace(rows[3], trial=t) for t in (1, 2)], {"trials": 2})
    assert "pass^k over 2 trials: n/a (no trial had a verdict)" in render_summary_text(none)


# --- report: text from servers and paths is not rich markup -------------------------------------------


def test_report_prints_server_text_and_paths_verbatim(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from engine.artifacts import write_json
    from engine.commands.report import report
    from engine.scoring.summary import build_summary
    from tests.record_helpers import metrics_row

    run_dir = tmp_path / "runs [nightly]"
    error = "openai:m: HTTP 400: Error code: 400 - unexpected [/INST] token"
    row = metrics_row(
        "eva_airline__3_1_5",
        1,
        False,
        success_signals=("clean_exit",),
        stop_reason="error",
        error=f"agent side reported backend_error: {error}",
        signals={"judge_error": f"APIStatusError: {error}"},
    )
    summary = build_summary([row], {"trials": 1, "scenarios": ["eva_airline__3_1_5", "x"]}, str(run_dir))
    write_json(run_dir / "summary.json", summary.to_json())
    # before: MarkupError traceback ('[/INST]' read as a closing tag) and 'openai:m:' printed as 'openaiⓂ'
    report(run_dir)
    text = capsys.readouterr().out
    assert f"first: APIStatusError: {error}" in text
    assert f"stop=error: agent side reported backend_error: {error}" in text
    assert "runs [nightly]" in text and "Ⓜ" not in text


@pytest.mark.parametrize("reply", ["{" * 200_000, '{"a":' * 20_000], ids=["braces", "deep"])
def test_pathological_judge_reply_fails_fast_with_a_value_error(reply: str) -> None:
    from engine.scoring.judge import parse_judge_reply

    # before: 200k '{' took ~10 s (a failed decode per brace, each scanning the text); a deep
    # object raised RecursionError instead of the judge's ValueError. The time is in `make bench`.
    with pytest.raises(ValueError, match="judge reply"):
        parse_judge_reply(reply, 0)


# --- a predicate on a side that has no DB ---------------------------------------------------------------


def test_predicate_on_the_user_side_is_a_spec_problem(tmp_path: Path) -> None:
    import shutil

    from engine.domains.registry import load_domain
    from engine.errors import SpecError

    mock = Path(__file__).parent / "mock_domain"
    spec = tmp_path / "spec"
    shutil.copytree(mock / "spec", spec)
    cancel = spec / "scenarios" / "cancel.yaml"
    text = cancel.read_text(encoding="utf-8")
    cancel.write_text(text.replace("side: agent}", "side: user}"), encoding="utf-8")
    # before: valid; every run failed the assertion with 'no user DB for this session'
    with pytest.raises(SpecError) as info:
        load_domain(spec, mock / "dataroot")
    (problem,) = info.value.problems
    assert problem.json_path == "$.db_state_assertions[credit_balance].side"
    assert "domain mock has no user-side DB" in problem.message


async def test_a_refusal_is_what_the_model_said(monkeypatch: pytest.MonkeyPatch) -> None:
    # before: content null + refusal read as a silent turn (the transcript lost the refusal)
    body = completion(None)
    body["choices"][0]["message"]["refusal"] = "I can't help with that."
    with raw_server(json.dumps(body).encode()) as url:
        reply = await _respond(url, monkeypatch)
    assert reply.text == "I can't help with that."


# --- YAML 1.1 values that do not mean what they look like -----------------------------------------------


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("zip: 02134", "unquoted '02134' reads as the octal number 1116"),
        ("departs: 12:30", "unquoted '12:30' reads as the base-60 number 750"),
        ("country: NO", "unquoted 'NO' reads as false in YAML; write false for a boolean or 'NO' for text"),
        ("seat_ok: yes", "unquoted 'yes' reads as true"),
        ("flight_date: 2026-01-05", "unquoted '2026-01-05' reads as a YAML date, not text"),
    ],
)
def test_yaml_11_surprises_are_problems(line: str, message: str) -> None:
    from engine.yamlload import parse_yaml

    # before: reference_answer {zip: 02134} held 1116 and {departs: 12:30} held 750, silently:
    # an agent sending "02134" or "12:30" could never match
    doc = parse_yaml(f"reference_answer:\n  - {{{line}}}\n", "s.yaml")
    (problem,) = doc.problems
    assert (problem.line, problem.json_path.split("[0].")[0]) == (2, "$.reference_answer")
    assert message in problem.message


def test_plain_yaml_values_stay_quiet() -> None:
    from engine.yamlload import parse_yaml

    text = "a: '02134'\nb: \"12:30\"\nc: true\nd: False\ne: 0\nf: -2.5\ng: 1e3\n"
    text += "h: '2026-01-05'\ni: 08\nj: |\n  yes\n"
    doc = parse_yaml(text, "s.yaml")
    assert doc.problems == ()
    assert doc.data["a"] == "02134" and doc.data["c"] is True and doc.data["e"] == 0


# --- a side's error message stays one line -------------------------------------------------------------


async def test_a_multi_line_server_error_is_one_line_in_the_session_error(
    data_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from engine.backends.replay import ReplayFactory
    from engine.domains.registry import load_domain
    from tests.conftest import SPEC_DIR
    from tests.runtime_helpers import session_between

    monkeypatch.setenv("EVALCTL_TEST_KEY", "sk-test")
    scenario = load_domain(SPEC_DIR, data_root).scenario("eva_airline__3_1_5")
    body = {"error": {"message": "upstream failed:\r\n  Traceback (most recent call last)\n\x1b[31mboom"}}
    with ScriptedOpenAI([Step(body, status=400)]) as server:
        factory = OpenAIFactory("m", base_url=server.base_url, api_key_env="EVALCTL_TEST_KEY", max_retries=0)
        result = await session_between(scenario, factory, ReplayFactory({scenario.name: scenario}))
    # before: the message's newlines and ANSI escape went into the progress line and all_summary.txt
    error = result.error or ""
    assert "HTTP 400" in error and "upstream failed:   Traceback (most recent call last) [31mboom" in error
    assert not any(ch in error for ch in "\r\n\x1b")


async def test_judge_error_is_one_line(data_root: Path) -> None:
    from engine.options import ScoringOptions
    from engine.scoring.judge import run_judge
    from tests.mock_domain.eva_fixtures import eva_scenario, session

    sc = eva_scenario(data_root, "1.1.2")
    body = {"error": {"message": "bad request:\n  field 'messages'\n" + "x" * 5000}}
    with ScriptedOpenAI([Step(body, status=400)]) as server:
        options = ScoringOptions(
            judge_model="j", judge_base_url=server.base_url, judge_retries=0, judge_retry_delay_s=0
        )
        out = await run_judge(sc, session(sc, None), options)
    # before: the server's newlines (and all 5000 chars) went into all_summary's 'first:' line
    assert out.score is None and "bad request:   field 'messages'" in (out.error or "")
    assert "\n" not in (out.error or "") and len(out.error or "") < 2100


def test_refund_total_is_in_cents_not_a_float_sum() -> None:
    from engine.scoring.predicates import evaluate_db_state_assertion

    refunds = {
        "R1": {"confirmation_number": "ABC123", "refund_amount": 10.1},
        "R2": {"confirmation_number": "ABC123", "refund_amount": 20.2},
        "R3": {"confirmation_number": "ZZZ999", "refund_amount": 5},
    }
    args = {"confirmation_number": "abc123"}
    assertion = {"func_name": "refund_total", "arguments": args, "assert_value": 30.3}
    # before: 10.1 + 20.2 = 30.299999999999997 failed the assertion
    from engine.domains.eva_airline.predicates import PREDICATES

    verdict = evaluate_db_state_assertion(PREDICATES, assertion, {"refunds": refunds})
    assert (verdict["actual"], verdict["passed"]) == (30.3, True)
