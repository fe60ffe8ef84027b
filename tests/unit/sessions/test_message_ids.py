"""A side's message ids are unique on its connection (docs/protocol.md, Envelope): the engine refuses
a repeated id from an external side as a protocol error of that side (``unexpected_message`` sent
back, stop reason ``error``, the side blamed), and skips the check for the sides a run serves
itself, as it skips their schema check (engine/session/sides/link.py)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import websockets

from engine.domains.registry import plugins
from engine.session.backends.replay import ReplayFactory
from engine.session.sides.link import SideFailure, SideLink
from engine.spec.loader import load_domain
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR
from tests.runtime_helpers import session_between


class _Frames:
    """Enough of a websockets connection for SideLink.receive: the given frames in order; what the
    engine sends is kept."""

    def __init__(self, *frames: dict[str, Any]):
        self.frames = [json.dumps(f) for f in frames]
        self.sent: list[dict[str, Any]] = []

    async def recv(self) -> str:
        return self.frames.pop(0)

    async def send(self, frame: str) -> None:
        self.sent.append(json.loads(frame))


def _response(msg_id: str, reply_to: str = "e2") -> dict[str, Any]:
    return {"v": 1, "type": "turn.response", "id": msg_id, "reply_to": reply_to, "text": "hi"}


@pytest.mark.parametrize(("role", "source"), [("agent", None), ("user", "user_simulator")])
async def test_a_repeated_id_from_an_external_side_is_its_protocol_error(
    role: str, source: str | None
) -> None:
    ws = _Frames(_response("a1"), _response("a2", "e3"), _response("a1", "e4"))
    link = SideLink(role, "ws://example.invalid", ws)  # type: ignore[arg-type]
    assert (await link.receive(1.0))["id"] == "a1" and (await link.receive(1.0))["id"] == "a2"
    with pytest.raises(SideFailure) as failed:
        await link.receive(1.0)
    err = failed.value
    assert (err.kind, err.source) == ("error", source)
    assert err.message == (
        f"{role} side broke the protocol: repeated message id 'a1': this side already sent a message with it"
    )
    [told] = ws.sent
    assert (told["type"], told["code"], told["reply_to"]) == ("error", "unexpected_message", "a1")


async def test_the_engines_own_ids_do_not_count_and_builtin_sides_are_not_checked() -> None:
    # the side may use an id the engine used ("e2"): only the side's own ids must be unique
    link = SideLink("agent", "ws://example.invalid", _Frames(_response("e2"), _response("a1")))  # type: ignore[arg-type]
    link.ids.next(), link.ids.next()  # the engine sent e1, e2
    assert [(await link.receive(1.0))["id"] for _ in range(2)] == ["e2", "a1"]
    builtin = SideLink("agent", "ws://127.0.0.1:1", _Frames(_response("a1"), _response("a1")), builtin=True)  # type: ignore[arg-type]
    assert [(await builtin.receive(1.0))["id"] for _ in range(2)] == ["a1", "a1"]
    assert builtin.seen_ids == set()


@contextlib.asynccontextmanager
async def _agent_reusing(reused: str) -> AsyncIterator[str]:
    """An external agent that answers every turn with the same message id ``reused``."""

    async def handler(ws: Any) -> None:
        with contextlib.suppress(websockets.ConnectionClosed):
            start = json.loads(await ws.recv())
            await ws.send(json.dumps({"v": 1, "type": "session.ready", "id": "a0", "reply_to": start["id"]}))
            async for raw in ws:
                msg = json.loads(raw)
                if msg["type"] != "turn.request":
                    return
                await ws.send(json.dumps({**_response(reused, msg["id"]), "text": "Hello, how can I help?"}))

    async with websockets.serve(handler, "127.0.0.1", 0) as server:
        yield f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}"


async def test_a_session_with_an_agent_reusing_an_id_stops_with_error_on_the_agent() -> None:
    scenario = load_domain(MOCK_SPEC_DIR, MOCK_DATA_ROOT, plugins=plugins()).scenario("mock__shipped_refusal")
    async with _agent_reusing("a1") as uri:
        result = await session_between(scenario, uri, ReplayFactory({scenario.name: scenario}))
    assert result.stop_reason == "error" and result.error_source is None  # the agent's own conduct
    assert result.error == (
        "agent side broke the protocol: repeated message id 'a1': this side already sent a message with it"
    )
    assert result.agent_turns == 1  # the first answer counted, the second refused
