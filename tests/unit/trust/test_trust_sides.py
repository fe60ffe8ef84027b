"""Trust model, sides: a hostile or broken agent or user side ends its own session with a clear
stop reason; what it sends is bounded before it reaches the results, and the session's artifacts
are written whatever it did.

The external sides here are ``websockets`` servers speaking docs/protocol.md, scripted per test.
Before the fix: a 4,300-digit token count broke the run summary (also on resume); a model name with
a newline forged an ``Overall Success Rate`` line; a reply just under the frame limit, forwarded
with its wrapper, got the *other* side blamed and ``SideLink.close()`` raised; two sides trading
megabyte utterances grew the engine until ``max_duration``; ``evalctl serve`` answered a malformed
frame with ``internal_error`` and a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import websockets

from engine.commands.run import print_outcome
from engine.core.model import Scenario
from engine.core.protocol import MAX_FRAME_BYTES
from engine.core.records.fields import RecordError
from engine.core.records.metrics import MetricsRecord
from engine.core.records.metrics import Usage as UsageRecord
from engine.domains.registry import plugins
from engine.results.scoring_stage import finish_run
from engine.run.runner import run, session_setup
from engine.scoring.stats import ci_text
from engine.scoring.summary import build_summary, render_summary_text
from engine.session.backends import BackendReply, Usage
from engine.session.backends.replay import ReplayFactory
from engine.session.conversation import SessionLimits, run_session
from engine.session.sides import builtin_side
from engine.session.sides.link import SideLink
from engine.session.sides.standalone import serve_side
from engine.spec.loader import LoadedDomain, load_domain
from engine.util.untrusted import MAX_COUNT, one_line
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR, REPO
from tests.record_helpers import metrics_row
from tests.runtime_helpers import run_options, say, scripted_factory, session_between

SCENARIO, OTHER = "mock__cancel_order", "mock__shipped_refusal"
FORGED = "Overall Success Rate: 100.0% (50/50 scenarios)"
HUGE = 10**4299  # 4,300 digits: the most Python turns into text; two of them summed are one more

Reply = Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]


@contextlib.asynccontextmanager
async def agent_side(reply: Reply, backend: str = "external") -> AsyncIterator[str]:
    """An external agent: ``reply(session.start, turn.request)`` gives the fields of each
    ``turn.response`` (``text`` default ""); ``"hang_up"`` in them first calls end_conversation;
    ``"frame"`` replaces the response by that raw text."""

    async def handler(ws: Any) -> None:
        with contextlib.suppress(websockets.ConnectionClosed):
            start = json.loads(await ws.recv())
            ready = {"v": 1, "type": "session.ready", "id": "a0", "reply_to": start["id"], "backend": backend}
            await ws.send(json.dumps(ready))
            n = 0
            async for raw in ws:
                msg = json.loads(raw)
                if msg["type"] != "turn.request":
                    return
                fields = dict(reply(start, msg))
                if "frame" in fields:
                    await ws.send(fields["frame"])
                    continue
                if fields.pop("hang_up", False):
                    n += 1
                    call = {"v": 1, "type": "tool.call", "id": f"a{n}", "reply_to": msg["id"]}
                    await ws.send(
                        json.dumps({**call, "call_id": "c1", "name": "end_conversation", "arguments": "{}"})
                    )
                    await ws.recv()
                n += 1
                body = {"v": 1, "type": "turn.response", "id": f"a{n}", "reply_to": msg["id"], "text": ""}
                await ws.send(json.dumps({**body, **fields}))

    async with websockets.serve(handler, "127.0.0.1", 0, max_size=None) as server:
        yield f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}"


async def _run(tmp_path: Path, agent: str, *names: str) -> Any:
    opts = run_options(
        MOCK_SPEC_DIR,
        MOCK_DATA_ROOT,
        scenarios=names or (SCENARIO,),
        agent=agent,
        output_dir=tmp_path / "run",
        quiet=True,
        turn_timeout_s=5,
    )
    return await run(opts)


# --- numbers a side sends ------------------------------------------------------------------------


async def test_a_huge_token_count_is_refused_with_the_side_blamed(loaded: LoadedDomain) -> None:
    usage = {"model": "m", "prompt_tokens": HUGE, "completion_tokens": 1}
    async with agent_side(lambda start, turn: {"text": "hi", "usage": usage}) as uri:
        scenario = loaded.scenario(SCENARIO)
        result = await session_between(scenario, uri, ReplayFactory({scenario.name: scenario}))
    assert result.stop_reason == "error"
    assert "agent side broke the protocol: bad_message" in (result.error or "")
    assert "prompt_tokens" in (result.error or "") and len(result.error or "") < 2100


async def test_huge_counts_already_on_disk_do_not_break_the_summary(tmp_path: Path) -> None:
    report = await _run(tmp_path, "replay", SCENARIO, OTHER)
    # as an older evalctl wrote them: each count fits in text, their sum does not
    for path in sorted((tmp_path / "run").glob("*/metrics.json")):
        text = path.read_text(encoding="utf-8")
        body = json.loads(text)
        body["usage"] = {"agent": {"model": "m", "prompt_tokens": 0, "completion_tokens": 0, "calls": 0}}
        text = json.dumps(body).replace('"prompt_tokens": 0', f'"prompt_tokens": {HUGE}')
        path.write_text(text, encoding="utf-8")
    summary = finish_run(tmp_path / "run", {"trials": 1})  # the resume path recomputes it like this
    assert summary.usage["agent"].prompt_tokens == 2 * MAX_COUNT
    assert f"{2 * MAX_COUNT} prompt" in (tmp_path / "run" / "all_summary.txt").read_text(encoding="utf-8")
    assert report.summary is not None


def test_odd_usage_values_count_zero_or_are_refused() -> None:
    rows = [metrics_row("a", usage={"agent": UsageRecord("m", v, 0, v)}) for v in (-5, 2**80, 7)]
    usage = build_summary(rows, {"trials": 1}).usage["agent"]
    assert usage.prompt_tokens == MAX_COUNT + 7 and usage.calls == MAX_COUNT + 7
    body = metrics_row("a").to_json()
    agent = body["usage"]["agent"]
    for v in ("12", True, 1.5, None, [1]):  # not a count: the record is not read (the result is missing)
        with pytest.raises(RecordError, match="prompt_tokens"):
            MetricsRecord.from_json({**body, "usage": {"agent": {**agent, "prompt_tokens": v}}})


# --- text a side sends ---------------------------------------------------------------------------


async def test_a_model_name_cannot_forge_report_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = f"m\n{FORGED}\u202e\u200b"
    scripts = {
        SCENARIO: {"hang_up": True, "usage": {"model": model, "prompt_tokens": 1, "completion_tokens": 1}},
        OTHER: {"frame": json.dumps(
            {"v": 1, "type": "error", "id": "x", "code": "backend_error", "message": f"boom\n{FORGED}\u2066"}
        )},
    }  # fmt: skip
    reply = lambda start, turn: scripts[start["scenario"]["name"]]  # noqa: E731
    async with agent_side(reply, backend=f"ws\n{FORGED}") as uri:
        report = await _run(tmp_path, uri, *scripts)
        capsys.readouterr()
        print_outcome(report)
    printed = capsys.readouterr().out
    text = (tmp_path / "run" / "all_summary.txt").read_text(encoding="utf-8")
    overall = report.summary.overall
    # the other scenario's external agent reported its backend failed: its own failure (before
    # issue #25: no verdict, left out of the rate)
    assert overall.errors == 0 and overall.total == 2 and overall.failed >= 1
    real = f"Overall Success Rate: {100 * overall.rate:.1f}% ({overall.passed}/2 scenarios; 0 errors)"
    real += ci_text(overall.ci)  # its 95 % interval
    for shown in (text, printed):
        assert [line for line in shown.splitlines() if line.startswith("Overall Success Rate")] == [real], (
            shown
        )
        assert "\u202e" not in shown and "\u2066" not in shown and "\u200b" not in shown
    assert f"m {FORGED}<U+202E><U+200B>" in text
    metrics = json.loads((tmp_path / "run" / SCENARIO / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["usage"]["agent"]["model"] == f"m {FORGED}<U+202E><U+200B>"
    assert metrics["agent_backend"] == f"ws {FORGED}"


def test_one_line_neutralises_every_invisible_character() -> None:
    import sys
    import unicodedata

    hidden = [
        chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) in ("Cf", "Zl", "Zp", "Cc")
    ]
    shown = one_line("".join(hidden), None)
    assert not any(ch in shown for ch in hidden)


def test_a_summary_from_older_metrics_is_one_line_per_entry() -> None:
    rows = [
        metrics_row("a", is_successful=False, stop_reason="error", error=f"x\n{FORGED}",
                    usage={"agent": UsageRecord(f"m\n{FORGED}", 1, 0, 1)}),
    ]  # fmt: skip
    text = render_summary_text(build_summary(rows, {"trials": 1}))
    assert [line for line in text.splitlines() if line.startswith("Overall")] == [
        "Overall Success Rate: 0.0% (0/1 scenarios; 0 errors) [95% CI 0.0-79.3%]"
    ]


# --- sizes --------------------------------------------------------------------------------------------


async def test_a_reply_too_big_to_forward_blames_its_sender_and_keeps_the_artifacts(
    tmp_path: Path,
) -> None:
    envelope = len(json.dumps({"v": 1, "type": "turn.response", "id": "a1", "reply_to": "e99", "text": ""}))
    text = "x" * (MAX_FRAME_BYTES - envelope - 10)  # the frame fits; forwarded with a wrapper it would not
    async with agent_side(lambda start, turn: {"text": text}) as uri:
        report = await _run(tmp_path, uri)
    [(result, metrics)] = list(report.results())
    assert result.stop_reason == "error" and metrics is not None
    assert (result.error or "").startswith("agent side's reply is"), result.error
    assert "bytes the engine forwards" in (result.error or "")
    sdir = tmp_path / "run" / SCENARIO
    for name in ("metrics.json", "transcript.jsonl", "final_db.json", "tool_calls.json"):
        assert (sdir / name).is_file(), name


async def test_a_frame_over_the_limit_is_the_agents_failure_not_an_uncounted_error(tmp_path: Path) -> None:
    # before: websockets closed the link with code 1009 and no close frame came back, so the
    # session was blamed on `transport` (verdict `error`, left out of the rates, rerun by --resume):
    # an agent could turn a losing session into an uncounted one by sending 16 MiB + 1 byte
    envelope = {"v": 1, "type": "turn.response", "id": "a1", "reply_to": "e1", "text": ""}
    frame = json.dumps({**envelope, "text": "x" * MAX_FRAME_BYTES})
    async with agent_side(lambda start, turn: {"frame": frame}) as uri:
        report = await _run(tmp_path, uri)
    [(result, metrics)] = list(report.results())
    assert result.stop_reason == "error" and metrics is not None
    assert (result.error or "").startswith("agent side sent a frame over the"), result.error
    assert metrics.error_cause is None and metrics.is_successful is False
    assert metrics.attribution is not None and metrics.attribution.cause == "agent"  # not infrastructure


class _BrokenWs:
    """A connection in a state websockets never expected: every call raises."""

    async def send(self, frame: str) -> None:
        raise AttributeError("'NoneType' object has no attribute 'write'")

    async def close(self) -> None:
        raise RuntimeError("transport gone")


async def test_side_link_close_never_raises() -> None:
    link = SideLink("user", "ws://x", _BrokenWs())  # type: ignore[arg-type]
    await link.close("error", "x" * 10_000_000)
    await link.fail("bad_message", "boom")


async def test_two_sides_trading_big_utterances_run_out_of_bytes(loaded: LoadedDomain) -> None:
    big = "blah " * 200_000  # 1 MB a turn, each way

    def chatty(turn: Any) -> BackendReply:
        return BackendReply(text=big, usage=Usage(calls=1))

    limits = SessionLimits(
        max_duration_s=120, turn_timeout_s=30, max_turns=200, max_session_bytes=8 * 1024 * 1024
    )
    result = await session_between(
        loaded.scenario(SCENARIO), scripted_factory(chatty), scripted_factory(chatty), limits
    )
    assert result.stop_reason == "error"
    assert (result.error or "").startswith("session byte budget exhausted:"), result.error
    assert "over the 8388608 byte limit" in (result.error or "")
    assert 4 <= result.agent_turns + result.user_turns <= 10  # stopped near 8 MiB, not at max_turns


async def test_an_agent_filling_the_byte_budget_is_blamed_even_when_the_forward_crosses_it(
    loaded: LoadedDomain,
) -> None:
    # Before the fix the side whose frame crossed the limit was blamed: an agent replying 1 MB
    # under a 1.5 MB budget crossed it on the forward of its own words to the user side, and the
    # session became the user simulator's failure (verdict error, never a FAIL) instead of its own.
    limits = SessionLimits(max_duration_s=30, turn_timeout_s=5, max_session_bytes=1_500_000)
    quiet = scripted_factory(lambda turn: say("Please go on."))
    async with agent_side(lambda start, turn: {"text": "x" * 1_000_000}) as uri:
        result = await session_between(loaded.scenario(SCENARIO), uri, quiet, limits)
    assert (result.error or "").startswith("session byte budget exhausted:"), result.error
    assert "carried the agent side's words" in (result.error or "")
    assert result.error_source is None  # the agent's own conduct: scored, a FAIL


async def test_a_user_side_filling_the_byte_budget_is_not_the_agents_failure(loaded: LoadedDomain) -> None:
    limits = SessionLimits(max_duration_s=30, turn_timeout_s=5, max_session_bytes=1_500_000)
    chatty = scripted_factory(lambda turn: say("y" * 1_000_000))
    quiet = scripted_factory(lambda turn: say("How can I help?"))
    result = await session_between(loaded.scenario(SCENARIO), quiet, chatty, limits)
    assert (result.error or "").startswith("session byte budget exhausted:"), result.error
    assert result.error_source == "user_simulator"


def test_the_default_byte_budget_is_documented() -> None:
    assert SessionLimits(max_duration_s=1).max_session_bytes == 64 * 1024 * 1024
    doc = (REPO / "docs" / "trust.md").read_text(encoding="utf-8")
    assert "64 MiB" in doc and "session byte budget exhausted" in doc


# --- evalctl serve ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("frames", "needle"),
    [
        (['{"v": 1, "type": "session.start", "id": "e1"}'], "session.start: $: 'session_id' is a required"),
        (
            ['{"v": 1, "type": "session.start", "id": "e1", "session_id": "s", "role": "agent", '
             '"system_prompt": "x", "tools": [], "scenario": {"name": "mock__cancel_order", "domain": "d", '
             '"description": "x", "eva_id": "M1", "language": "en", "current_date": "2026-01-01", '
             '"trial": 1}, "limits": {"max_duration_s": 9, "turn_timeout_s": 9, "max_tool_rounds": 1, '
             '"max_turns": null}}',
             '{"v": 1, "type": "turn.request", "id": "e2"}'],
            "turn.request: $: 'turn' is a required property",
        ),
    ],
    ids=["bad_start", "bad_turn"],
)  # fmt: skip
async def test_serve_checks_frames_against_the_schemas(
    caplog: pytest.LogCaptureFixture, frames: list[str], needle: str
) -> None:
    ready: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    stop = asyncio.Event()
    task = asyncio.create_task(
        serve_side(
            "agent",
            "replay",
            port=0,
            spec_dir=MOCK_SPEC_DIR,
            data_root=MOCK_DATA_ROOT,
            plugins=plugins(),
            on_ready=ready.set_result,
            stop=stop,
        )
    )
    # a server that fails to start ends the task: surface its error instead of waiting forever
    await asyncio.wait([ready, task], return_when=asyncio.FIRST_COMPLETED)
    if not ready.done():
        task.result()
    uri = ready.result()
    try:
        with caplog.at_level(logging.ERROR):
            async with websockets.connect(uri) as ws:
                for frame in frames:
                    await ws.send(frame)
                    reply = json.loads(await ws.recv())
                    if reply["type"] == "error":
                        break
    finally:
        stop.set()
        await task
    assert reply["type"] == "error" and reply["code"] == "bad_message", reply
    assert needle in reply["message"], reply
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]  # no traceback logged


@pytest.fixture(scope="module")
def shop() -> Scenario:
    return load_domain(MOCK_SPEC_DIR, MOCK_DATA_ROOT, plugins=plugins()).scenario("mock__cancel_order")


def _agent_sending(frame: str) -> Callable[[Any], Awaitable[None]]:
    async def handler(ws: Any) -> None:
        with contextlib.suppress(websockets.ConnectionClosed):
            start = json.loads(await ws.recv())
            ready = {"v": 1, "type": "session.ready", "id": "a0", "reply_to": start["id"]}
            await ws.send(json.dumps(ready))
            await ws.recv()  # turn.request
            await ws.send(frame)
            await ws.recv()

    return handler


HUGE_ERROR = json.dumps(
    {"v": 1, "type": "error", "id": "z", "code": "backend_error", "message": "E" * 3_000_000}
)


@pytest.mark.parametrize(
    ("frame", "stop", "expected"),
    [
        (
            "[" * 100_000 + "]" * 100_000,
            "error",
            "agent side broke the protocol: bad_json: frame is nested too deeply",
        ),
        # before issue #25: stop reason `error`, source `agent_model` (no verdict)
        (HUGE_ERROR, "agent_error", "agent side reported backend_error: EEEE"),
        # before: orjson parsed it, jsonschema's wording of the error hit RecursionError (exit 3)
        (
            '{"v":1,"type":"turn.response","id":"a1","reply_to":"e1","text":' + "[" * 1015 + "]" * 1015 + "}",
            "error",
            "agent side broke the protocol: bad_message: turn.response: a value nested too deeply",
        ),
    ],
    ids=["deep_json", "huge_error_message", "nested_1015_deep"],
)
async def test_misbehaving_agent_ends_its_session_with_a_short_error(
    shop: Scenario, frame: str, stop: str, expected: str
) -> None:
    async with websockets.serve(_agent_sending(frame), "127.0.0.1", 0, max_size=None) as server:
        port = server.sockets[0].getsockname()[1]
        async with builtin_side(ReplayFactory({shop.name: shop})) as user_uri:
            result = await run_session(
                shop,
                session_setup(shop),
                f"ws://127.0.0.1:{port}",
                user_uri,
                SessionLimits(max_duration_s=30, turn_timeout_s=5),
            )
    assert (result.stop_reason, result.error_source) == (stop, None)
    assert (result.error or "").startswith(expected), result.error
    assert len(result.error or "") < 2100
    assert result.final_db == shop.fresh_db()


def test_who_is_blamed_for_each_failure_of_a_side() -> None:
    """A verdict must be trustworthy: what only infrastructure or evalctl's own code can cause never
    counts against the agent. A built-in side is evalctl's code: its closing the connection,
    refusing a frame or breaking the protocol is the engine's failure (it used to be the agent's,
    so an engine bug could surface as an agent FAIL); an external agent answers for itself, and
    cannot turn its own failures into left-out results (issue #25: its `error` frames and its
    dropped connection used to be `agent_model` / `transport` errors)."""
    from engine.session.sides.link import blame

    whats = ("connect", "local", "lost", "backend", "rejected", "crash", "silent", "closed", "refused")
    table = {
        (role, what, builtin): blame(role, what, builtin)
        for role in ("agent", "user")
        for what in (*whats, "broke", "conduct")
        for builtin in (True, False)
    }
    assert {k: v for k, v in table.items() if k[0] == "agent" and k[2]} == {
        ("agent", "connect", True): "transport",
        ("agent", "local", True): "transport",
        ("agent", "lost", True): "transport",
        ("agent", "backend", True): "agent_model",
        ("agent", "rejected", True): None,  # the endpoint refused the model's request (HTTP 4xx)
        ("agent", "crash", True): "engine",
        ("agent", "silent", True): "agent_model",
        ("agent", "closed", True): "engine",
        ("agent", "refused", True): "engine",
        ("agent", "broke", True): "engine",  # a frame out of place from evalctl's own side
        ("agent", "conduct", True): None,  # the model's own calls (too many, too much text)
    }
    assert {k[1]: v for k, v in table.items() if k[0] == "agent" and not k[2]} == {
        "connect": None,
        "local": "transport",  # this machine ran out of descriptors: never the agent's doing
        "lost": None,
        "backend": None,
        "rejected": None,
        "crash": None,
        "silent": None,
        "closed": None,
        "refused": None,
        "broke": None,
        "conduct": None,
    }
    user_builtin = {k[1]: v for k, v in table.items() if k[0] == "user" and k[2]}
    assert user_builtin == {
        "connect": "transport", "local": "transport", "lost": "transport", "backend": "user_simulator",
        "rejected": "user_simulator", "crash": "engine", "silent": "user_simulator", "closed": "engine",
        "refused": "engine", "broke": "engine", "conduct": "user_simulator",
    }  # fmt: skip
    assert {v for k, v in table.items() if k[0] == "user" and not k[2]} == {"transport", "user_simulator"}
