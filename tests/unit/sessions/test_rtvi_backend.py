"""``--agent rtvi+ws://`` on the mock shop against a small fake RTVI bot (websockets and pipecat's
protobuf frames, no pipeline): the scheme's parsing and blame, the spec's tool-name map, the
refused connection retried, the bot's hash recorded (a mismatch shown by ``evalctl diff`` and by
``evalctl report --html`` alike), and a bot that drops the call is the agent's FAIL."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
import websockets

from cli import main
from engine.report_html.collect import collect
from engine.run.runner import run
from engine.session.backends.registry import evalctl_own, parse_backend_spec
from engine.session.backends.rtvi_wire import ToolMap, decode_frame, encode_frame, envelope
from engine.spec.rtvi_map import _read_map
from engine.util.errors import UsageError
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR
from tests.runtime_helpers import run_options

pytest.importorskip("pipecat.frames.protobufs.frames_pb2")

SCENARIO = "mock__cancel_order"


def test_the_scheme_parses_its_url_and_is_blamed_like_an_external_side() -> None:
    spec = parse_backend_spec("rtvi+ws://127.0.0.1:8765")
    assert (spec.scheme, spec.uri, str(spec)) == (
        "rtvi+ws",
        "ws://127.0.0.1:8765",
        "rtvi+ws://127.0.0.1:8765",
    )
    assert not evalctl_own(spec)  # the bot's failures are the agent's, though the scheme is built in
    for bad in ("rtvi+ws://", "rtvi+ws://host", "rtvi+ws://host:99999", "rtvi+http://host:1"):
        with pytest.raises(UsageError, match="rtvi"):
            parse_backend_spec(bad)


def test_the_tool_map_is_data_checked_against_its_schema(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text("tools: {get_order: GetOrderTool}\n")
    shop = _read_map(good, "mock")
    assert shop.tool_domain == "mock" and shop.bot_name("get_order") == "GetOrderTool"
    assert shop.engine_name("GetOrderTool") == "get_order"
    assert shop.engine_name("get_order") == "get_order"  # a bot may report either name
    assert shop.engine_name("nope") == "nope"
    bad = tmp_path / "rtvi.yaml"
    bad.write_text("tools: {get_order: [GetOrder]}\n")
    with pytest.raises(UsageError, match=r"rtvi.yaml: \$.tools.get_order: \['GetOrder'\] is not of type"):
        _read_map(bad, "mock")
    bad.write_text("tools: {a: X, b: X}\n")
    with pytest.raises(UsageError, match="share one bot name"):
        _read_map(bad, "mock")


def test_frames_round_trip() -> None:
    msg = envelope("send-text", "1", {"content": "hé"})
    assert decode_frame(encode_frame(msg)) == msg
    assert decode_frame(json.dumps(msg)) == msg  # a JSON-serializer bot
    assert decode_frame(json.dumps({"type": "x"})) is None  # not an RTVI envelope
    with pytest.raises(ValueError, match="protobuf"):
        decode_frame(b"\xff\xff\xff")


class FakeBot:
    """Refuses its first ``refuse`` connections with 1013; then answers the control messages and
    every ``send-text`` with a line, calling ``get_order`` in the second turn and hanging up
    (``end_conversation``) in the third. ``drop`` closes the connection at the second turn;
    ``fail`` (``{"type": ..., "data": ...}``) is an RTVI message it sends in the second turn
    instead of answering, then stays connected and silent."""

    def __init__(self, refuse: int = 1, drop: bool = False, fail: dict[str, Any] | None = None) -> None:
        self.refuse, self.drop, self.fail = refuse, drop, fail
        self.connections = 0
        self.seen: list[dict[str, Any]] = []

    async def send(self, ws: Any, kind: str, data: Any = None, msg_id: str = "b") -> None:
        await ws.send(encode_frame(envelope(kind, msg_id, data)))

    async def handler(self, ws: Any) -> None:
        self.connections += 1
        if self.connections <= self.refuse:
            await ws.close(1013, "Server already has a connected client")
            return
        turn = 0
        with contextlib.suppress(websockets.ConnectionClosed):
            async for raw in ws:
                msg = decode_frame(raw)
                assert msg is not None
                self.seen.append(msg)
                if msg["type"] == "client-ready":
                    await self.send(ws, "bot-ready", {"version": "1.1.0"})
                elif msg["type"] == "client-message":
                    t = msg["data"]["t"]
                    d = {"db_hash": "f" * 64, "actions": []} if t == "get_scenario_summary" else True
                    d = {"success": True, "errors": []} if t == "apply_initialization" else d
                    await self.send(ws, "server-response", {"t": t, "d": d}, msg["id"])
                elif msg["type"] == "send-text":
                    if self.drop and turn == 1:
                        await ws.close()
                        return
                    if self.fail is not None and turn == 1:
                        await self.send(ws, "user-llm-text", {"text": "..."})
                        await self.send(ws, self.fail["type"], self.fail["data"], msg["id"])
                        continue
                    await self.answer(ws, turn)
                    turn += 1

    async def answer(self, ws: Any, turn: int) -> None:
        call = {1: ("GetOrder", {"order_id": "A1"}), 2: ("end_conversation", {})}.get(turn)
        await self.send(ws, "bot-llm-stopped")  # the previous turn's tail: dropped
        await self.send(ws, "user-llm-text", {"text": "..."})
        await self.send(ws, "bot-llm-started")
        await self.send(ws, "bot-llm-text", {"text": f"line {turn}"})
        if call:
            await self.send(ws, "llm-function-call-started", {"function_name": call[0]})
        await self.send(ws, "bot-llm-stopped")
        if call:
            args = {"tool_call_id": f"t{turn}", "function_name": call[0], "arguments": call[1]}
            await self.send(ws, "llm-function-call-in-progress", args)
            await self.send(ws, "bot-llm-started")
            await self.send(ws, "bot-llm-stopped")


@pytest.fixture
def mapped_shop(tmp_path: Path) -> Path:
    """The mock shop's spec folder with an rtvi.yaml naming get_order GetOrder on the bot."""
    import shutil

    spec = tmp_path / "spec"
    shutil.copytree(MOCK_SPEC_DIR, spec)
    (spec / "rtvi.yaml").write_text("tool_domain: shop\ntools: {get_order: GetOrder}\n")
    return spec


async def _run(bot: FakeBot, spec: Path, out: Path, turn_timeout_s: float = 5) -> Any:
    async with websockets.serve(bot.handler, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        opts = run_options(
            spec,
            MOCK_DATA_ROOT,
            scenarios=(SCENARIO,),
            agent=f"rtvi+ws://127.0.0.1:{port}",
            output_dir=out,
            turn_timeout_s=turn_timeout_s,
            progress=False,
        )
        report = await run(opts)
    [(result, metrics)] = list(report.results())
    return result, metrics


async def test_a_refused_connection_is_retried_and_the_bots_calls_run_on_the_engines_db(
    mapped_shop: Path, tmp_path: Path
) -> None:
    bot = FakeBot(refuse=2)
    result, _ = await _run(bot, mapped_shop, tmp_path / "run")
    assert bot.connections == 3  # two 1013 refusals, then the session
    assert result.stop_reason == "exit"
    assert [(c["name"], json.loads(c["arguments"])) for c in result.tool_calls] == [
        ("get_order", {"order_id": "A1"}),  # the bot's GetOrder, under the engine's name
        ("end_conversation", {}),
    ]
    [prompt] = [m["data"]["d"] for m in bot.seen if m.get("data", {}).get("t") == "update_system_prompt"]
    assert "GetOrder" in json.loads(prompt["tools"]) and prompt["tool_domain"] == "shop"
    [init] = [m["data"]["d"] for m in bot.seen if m.get("data", {}).get("t") == "apply_initialization"]
    assert json.loads(init["shared_state_init"])["scenario"] == SCENARIO
    texts = [m["data"]["content"] for m in bot.seen if m["type"] == "send-text"]
    assert len(texts) == 3 and all(texts)
    lines = (tmp_path / "run" / SCENARIO / "final_scenario_db_hash.txt").read_text()
    assert f"agent_db_hash: {'f' * 64} (differs from db_hash)" in lines


async def test_the_bots_hash_mismatch_is_shown_by_diff_and_the_html_report(
    mapped_shop: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    await _run(FakeBot(), mapped_shop, out)
    expected = f"the agent's own DB hash differs from the engine's: {'f' * 64} (differs from db_hash)"
    capsys.readouterr()
    assert main(["diff", str(out), SCENARIO]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert expected in printed
    [detail] = collect(out, tmp_path / "report.html").details
    assert detail["db"][-1] == expected
    assert detail["db"] == [line for line in printed if line in detail["db"]]  # in diff's order


async def test_a_bot_that_drops_the_connection_is_the_agents_fail(mapped_shop: Path, tmp_path: Path) -> None:
    result, metrics = await _run(FakeBot(refuse=0, drop=True), mapped_shop, tmp_path / "run")
    assert result.stop_reason in ("agent_error", "agent_disconnected")
    assert result.error_source is None and metrics.is_successful is False  # never `error`


@pytest.mark.parametrize(
    ("fail", "said"),
    [
        (
            {"type": "error", "data": {"error": "LLM unreachable", "fatal": False}},
            "an error: LLM unreachable",
        ),
        (
            {"type": "error", "data": {"error": "pipeline died", "fatal": True}},
            "an error (fatal): pipeline died",
        ),
        ({"type": "error-response", "data": {"error": "bad send-text"}}, "an error-response: bad send-text"),
    ],
)
async def test_a_bots_rtvi_error_in_a_turn_is_its_fail_at_once(
    fail: dict[str, Any], said: str, mapped_shop: Path, tmp_path: Path
) -> None:
    # the bot stays connected and silent after its error: only the error can end the turn early
    result, metrics = await _run(FakeBot(refuse=0, fail=fail), mapped_shop, tmp_path / "run", 60)
    assert result.stop_reason == "agent_error" and result.error_source is None
    assert f"the bot reported {said}" in (result.error or "")
    assert metrics.is_successful is False


def test_identity_map_without_a_file() -> None:
    assert ToolMap("x").bot_name("a") == "a"


def test_an_unreachable_bot_stops_the_run_before_the_first_session(tmp_path: Path) -> None:
    import socket
    import subprocess
    import sys

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    cmd = [sys.executable, "-m", "cli", "run", str(MOCK_SPEC_DIR), "--data-root", str(MOCK_DATA_ROOT)]
    cmd += ["--agent", f"rtvi+ws://127.0.0.1:{port}", "--output-dir", str(tmp_path / "x")]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert done.returncode == 3, done.stderr
    # the address as given (it said ws://127.0.0.1:PORT, the URL the bot is reached at)
    assert f"evalctl: agent side rtvi+ws://127.0.0.1:{port} is unreachable (" in done.stderr


def test_validate_checks_the_tool_map(mapped_shop: Path) -> None:
    from engine.domains.registry import plugins
    from engine.spec.validate import validate_specs

    assert validate_specs(mapped_shop, MOCK_DATA_ROOT, replay=False, plugins=plugins()).problems == []
    (mapped_shop / "rtvi.yaml").write_text("tools: {get_ordr: GetOrder, cancel_order: 7}\n")
    [problem] = validate_specs(mapped_shop, MOCK_DATA_ROOT, replay=False, plugins=plugins()).problems
    assert problem.file.endswith("rtvi.yaml") and "7 is not of type 'string'" in problem.message
    (mapped_shop / "rtvi.yaml").write_text("tools: {get_ordr: GetOrder}\n")
    [problem] = validate_specs(mapped_shop, MOCK_DATA_ROOT, replay=False, plugins=plugins()).problems
    assert (problem.json_path, problem.message) == (
        "$.tools.get_ordr",
        "unknown tool 'get_ordr' (did you mean 'get_order'?)",
    )
