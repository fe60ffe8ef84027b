"""The in-process transport between the engine and the built-in sides (``engine.session.sides.memory``)
carries the same protocol as a WebSocket and the engine trusts a built-in side no more over it:
the same session comes out of both, and a side that sends garbage, a message out of place, a frame
over the limit, or closes or crashes, ends its session with the same stop reason, blame and
message over either transport (each case runs over both)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
import websockets

from engine.core.model import Scenario
from engine.core.protocol import MAX_FRAME_BYTES
from engine.domains.registry import plugins
from engine.run.runner import session_setup
from engine.session.backends.replay import ReplayFactory
from engine.session.conversation import SessionLimits, run_session
from engine.session.sides import builtin_side, memory
from engine.session.sides.link import SideLink
from engine.spec.loader import load_domain
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR

Handler = Callable[[Any], Awaitable[None]]
TRANSPORTS = ("tcp", "memory")


@pytest.fixture(scope="module")
def shop() -> Scenario:
    return load_domain(MOCK_SPEC_DIR, MOCK_DATA_ROOT, plugins=plugins()).scenario("mock__cancel_order")


@contextlib.asynccontextmanager
async def raw_side(handler: Handler, transport: str) -> AsyncIterator[str]:
    """``handler`` served as a side over ``transport``: a WebSocket server on loopback (as the
    runner served its built-in sides before) or in process; yields its URI."""
    if transport == "memory":
        async with memory.serve(handler, "raw") as uri:
            yield uri
        return
    async with websockets.serve(
        handler, "127.0.0.1", 0, max_size=MAX_FRAME_BYTES, compression=None
    ) as server:
        yield f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}"


def _agent(after_request: Callable[[Any, dict[str, Any]], Awaitable[None]]) -> Handler:
    """An agent that answers session.start, then does ``after_request(ws, turn_request)``."""

    async def handler(ws: Any) -> None:
        with contextlib.suppress(websockets.ConnectionClosed):
            start = json.loads(await ws.recv())
            await ws.send(json.dumps({"v": 1, "type": "session.ready", "id": "a0", "reply_to": start["id"]}))
            request = json.loads(await ws.recv())
            await after_request(ws, request)
            await ws.recv()

    return handler


async def _garbage(ws: Any, request: dict[str, Any]) -> None:
    await ws.send("{not json")


async def _out_of_place(ws: Any, request: dict[str, Any]) -> None:
    await ws.send(json.dumps({"v": 1, "type": "session.ready", "id": "a1", "reply_to": request["id"]}))


async def _too_big(ws: Any, request: dict[str, Any]) -> None:
    text = "x" * (MAX_FRAME_BYTES + 10)
    await ws.send(
        json.dumps({"v": 1, "type": "turn.response", "id": "a1", "reply_to": request["id"], "text": text})
    )


async def _closes(ws: Any, request: dict[str, Any]) -> None:
    await ws.close()


async def _crashes(ws: Any, request: dict[str, Any]) -> None:
    raise RuntimeError("side bug")


CASES = {
    # (stop reason, error source, start of the message): a built-in side is evalctl's own code
    "garbage": (_garbage, "error", "engine", "agent side broke the protocol: bad_json: frame is not JSON"),
    "out_of_place": (
        _out_of_place,
        "error",
        "engine",
        "agent side broke the protocol: unexpected session.ready during turn",
    ),
    "too_big": (
        _too_big,
        "error",
        None,
        "agent side sent a frame over the 16777216 byte frame limit (close code 1009)",
    ),
    "closes": (_closes, "error", "engine", "agent side disconnected: close code 1000"),
    "crashes": (_crashes, "error", "engine", "agent side disconnected: close code 1011"),
}


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("case", sorted(CASES))
async def test_a_misbehaving_builtin_side_fails_the_same_way_over_both_transports(
    shop: Scenario, case: str, transport: str
) -> None:
    behave, stop, source, message = CASES[case]
    limits = SessionLimits(max_duration_s=30, turn_timeout_s=5)
    async with (
        raw_side(_agent(behave), transport) as agent_uri,
        builtin_side(ReplayFactory({shop.name: shop}), "user", in_process=transport == "memory") as user_uri,
    ):
        result = await run_session(
            shop, session_setup(shop), agent_uri, user_uri, limits, builtin=frozenset({"agent", "user"})
        )
    assert (result.stop_reason, result.error_source) == (stop, source), result.error
    assert (result.error or "").startswith(message), result.error
    assert result.final_db == shop.fresh_db()


def _plain(result: Any) -> dict[str, Any]:
    """A session result without its clock readings and side addresses."""
    transcript = [{k: v for k, v in e.items() if k != "t"} for e in result.transcript]
    return {
        "transcript": transcript,
        "final_db": result.final_db,
        "stop": result.stop_reason,
        "turns": (result.agent_turns, result.user_turns),
        "backends": (result.agent_backend, result.user_backend),
    }


async def _replayed(shop: Scenario, in_process: bool) -> dict[str, Any]:
    factory = ReplayFactory({shop.name: shop})
    limits = SessionLimits(max_duration_s=30, turn_timeout_s=5)
    async with (
        builtin_side(factory, "agent", in_process=in_process) as agent_uri,
        builtin_side(factory, "user", in_process=in_process) as user_uri,
    ):
        assert agent_uri.startswith("mem:" if in_process else "ws://")
        both = frozenset({"agent", "user"})
        results = [
            await run_session(shop, session_setup(shop), agent_uri, user_uri, limits, trial, builtin=both)
            for trial in (1, 2)  # the second session reuses the first one's connections
        ]
    return {"one": _plain(results[0]), "two": _plain(results[1])}


async def test_the_same_session_comes_out_of_both_transports(shop: Scenario) -> None:
    over_tcp, in_process = await _replayed(shop, False), await _replayed(shop, True)
    assert over_tcp == in_process
    assert in_process["one"]["stop"] == "exit" and in_process["one"]["final_db"] != shop.fresh_db()
    assert in_process["one"] == in_process["two"]


async def test_an_in_process_side_reuses_clean_connections_and_closes_them_when_it_stops(
    shop: Scenario,
) -> None:
    async with builtin_side(ReplayFactory({shop.name: shop}), "agent", in_process=True) as uri:
        one = await SideLink.open("agent", uri, 5.0, builtin=True)
        start = await one.send(
            "session.start",
            session_id="s#1",
            role="agent",
            system_prompt="",
            tools=[],
            scenario={"name": shop.name},
            limits={"max_tool_rounds": 3},
        )
        ready = await one.receive(5.0)
        assert (ready["type"], ready["reply_to"]) == ("session.ready", start)
        await one.close("exit", None)
        two = await SideLink.open("agent", uri, 5.0, builtin=True)
        assert two.ws is one.ws  # the clean connection carries the next session
        await two.close("error", None)  # never started: not reused
        three = await SideLink.open("agent", uri, 5.0, builtin=True)
        assert three.ws is not one.ws and one.ws.state.name == "CLOSED"
    assert three.ws.state.name == "CLOSED"  # the side stopped: its connections are closed
    with pytest.raises(Exception, match="cannot connect to the agent side"):
        await SideLink.open("agent", uri, 5.0, builtin=True)


async def test_iterating_an_in_process_connection_gives_its_frames_then_stops_or_raises() -> None:
    """``async for`` over a pair's end gives every frame sent before a close, then stops at a
    normal close and raises ConnectionClosedError after another, as over a WebSocket; leaving the
    loop early leaves nothing for the event loop to finalise (it is not an async generator)."""
    for code, raises in ((1000, False), (1001, False), (1011, True)):
        ours, theirs = memory.MemoryConnection.pair()
        for frame in ("a", "b", "c"):
            await theirs.send(frame)
        await theirs.close(code)
        got: list[Any] = []
        if raises:
            with pytest.raises(websockets.ConnectionClosedError):
                async for frame in ours:
                    got.append(frame)
        else:
            async for frame in ours:
                got.append(frame)
        assert got == ["a", "b", "c"], code
    ours, theirs = memory.MemoryConnection.pair()
    await theirs.send("first")
    async for frame in ours:
        assert frame == "first"
        break  # a side leaves its loop at session.end
    assert type(aiter(ours)).__name__ == "MemoryConnection"  # no async generator was left open
