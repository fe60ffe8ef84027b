"""The check of an external side before the first session (``engine.session.backends.probe``): a
WebSocket handshake, so a port that answers with plain HTTP (the wrong port) stops the run as one
where nothing listens does. Real servers on loopback: ``http.server`` in a thread, ``websockets``
in the test's loop; waits are on events, never on the clock."""

from __future__ import annotations

import asyncio
import http.server
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import websockets
from websockets.exceptions import ConnectionClosed

from engine.session.backends.probe import Endpoint, check_endpoints, probe_side
from engine.session.backends.registry import parse_backend_spec
from engine.session.setup import endpoints
from engine.util.errors import INFRASTRUCTURE_EXIT, InfrastructureError
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR
from tests.runtime_helpers import run_options

#: Bound on waits for events a working probe sets within milliseconds; it only stops a broken
#: probe from hanging the suite.
PATIENCE_S = 30.0


class _Unsupported(http.server.BaseHTTPRequestHandler):
    """An HTTP/1.1 server with no GET: every request is answered 501 (``http.server``'s own)."""

    protocol_version = "HTTP/1.1"
    seen: list[dict[str, str]]

    def parse_request(self) -> bool:
        ok = super().parse_request()
        self.seen.append({k.lower(): v for k, v in self.headers.items()})
        return ok

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Files(http.server.SimpleHTTPRequestHandler):
    """``python -m http.server``: GET answered HTTP/1.0 200 with a folder listing."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _serve(handler: type[http.server.BaseHTTPRequestHandler]) -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"ws://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture
def seen() -> list[dict[str, str]]:
    return []


@pytest.fixture
def http_501(seen: list[dict[str, str]]) -> Iterator[str]:
    handler = type("Handler", (_Unsupported,), {"seen": seen})
    yield from _serve(handler)


@pytest.fixture
def http_files() -> Iterator[str]:
    yield from _serve(_Files)


def _side(uri: str, role: str = "agent") -> Endpoint:
    return Endpoint(f"{role} side", None, "", side_uri=uri, url_option=f"--{role}")


async def test_a_plain_http_server_is_not_a_websocket_server(
    http_501: str, seen: list[dict[str, str]]
) -> None:
    with pytest.raises(InfrastructureError) as caught:
        await probe_side(_side(http_501), PATIENCE_S)
    # before: a TCP connect passed it, and each session then failed as the agent's FAIL, exit 0
    assert str(caught.value) == (
        f"agent side {http_501} is not a WebSocket server (it answered the upgrade request with "
        "HTTP 501 Unsupported method ('GET')); check --agent"
    )
    assert caught.value.exit_code == INFRASTRUCTURE_EXIT
    [request] = seen  # one upgrade request, the websockets client's own
    assert request["upgrade"] == "websocket" and "sec-websocket-key" in request


async def test_an_http_1_0_answer_is_named(http_files: str) -> None:
    with pytest.raises(InfrastructureError) as caught:
        await probe_side(_side(http_files), PATIENCE_S)
    assert str(caught.value) == (
        f"agent side {http_files} is not a WebSocket server (no valid HTTP/1.1 answer to the upgrade "
        "request: unsupported protocol; expected HTTP/1.1: HTTP/1.0 200 OK); check --agent"
    )


async def test_a_port_nothing_listens_on_is_unreachable() -> None:
    with socket.socket() as held:  # bound, never listening: a connection to it is refused
        held.bind(("127.0.0.1", 0))
        uri = f"ws://127.0.0.1:{held.getsockname()[1]}"
        with pytest.raises(InfrastructureError) as caught:
            await probe_side(_side(uri), PATIENCE_S)
    assert str(caught.value).startswith(f"agent side {uri} is unreachable (")
    assert str(caught.value).endswith("); start that side first (e.g. `evalctl serve`)")


async def test_a_websocket_server_passes_and_sees_no_session() -> None:
    ended: asyncio.Future[tuple[list[Any], ConnectionClosed]] = asyncio.get_running_loop().create_future()

    async def handler(ws: Any) -> None:
        frames: list[Any] = []
        try:
            while True:
                frames.append(await ws.recv())
        except ConnectionClosed as closed:
            ended.set_result((frames, closed))

    async with websockets.serve(handler, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        await probe_side(_side(f"ws://127.0.0.1:{port}"), PATIENCE_S)
        async with asyncio.timeout(PATIENCE_S):
            frames, closed = await ended
    assert frames == []  # no session.start: the side saw a connection, not a session
    assert closed.rcvd is not None and closed.rcvd.code == 1000  # the probe closed it cleanly


async def test_both_sides_on_one_http_port_are_checked_once_and_named_together(
    http_501: str, seen: list[dict[str, str]]
) -> None:
    with pytest.raises(InfrastructureError) as caught:
        await check_endpoints([_side(http_501, "agent"), _side(http_501, "user")], PATIENCE_S)
    assert str(caught.value).startswith(f"agent side and user side {http_501} is not a WebSocket server (")
    assert str(caught.value).endswith("; check --agent / --user")
    assert len(seen) == 1


async def test_a_websocket_server_that_refuses_the_upgrade_is_named_as_refusing() -> None:
    """A real WebSocket server answering 503 (full) is not called "not a WebSocket server"."""

    def full(connection: Any, request: Any) -> Any:
        return connection.respond(503, "at capacity\n")

    async with websockets.serve(lambda ws: ws.wait_closed(), "127.0.0.1", 0, process_request=full) as server:
        uri = f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        with pytest.raises(InfrastructureError) as caught:
            await probe_side(_side(uri), PATIENCE_S)
    said = str(caught.value)
    assert said.startswith(f"agent side {uri} refused the WebSocket connection (") and "503" in said, said


def _run_endpoints(agent: str, user: str = "replay") -> list[Endpoint]:
    """The endpoints a run of the mock shop with ``--agent agent --user user`` checks first."""
    opts = run_options(MOCK_SPEC_DIR, MOCK_DATA_ROOT, agent=agent, user=user)
    return endpoints(opts, parse_backend_spec(agent), parse_backend_spec(user))


async def test_an_rtvi_bot_on_a_plain_http_port_is_named_as_given(http_501: str) -> None:
    """Before: ``agent side ws://127.0.0.1:PORT is not a WebSocket server``: the URL the bot is
    reached at, not the ``--agent`` value the user wrote."""
    given = http_501.replace("ws://", "rtvi+ws://", 1)
    with pytest.raises(InfrastructureError) as caught:
        await check_endpoints(_run_endpoints(given), PATIENCE_S)
    assert str(caught.value) == (
        f"agent side {given} is not a WebSocket server (it answered the upgrade request with "
        "HTTP 501 Unsupported method ('GET')); check --agent"
    )


async def test_an_rtvi_bot_that_never_answers_the_handshake_is_named_as_given() -> None:
    """A port that accepts and never answers: ``no answer to the WebSocket handshake``, the
    ``rtvi+ws://`` address quoted (the check's own timeout, short: nothing ever answers)."""
    accepted = asyncio.Event()
    held: list[asyncio.StreamWriter] = []

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)
        accepted.set()

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    async with server:
        given = f"rtvi+ws://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        with pytest.raises(InfrastructureError) as caught:
            await check_endpoints(_run_endpoints(given), 0.5)
        assert accepted.is_set()
        for writer in held:
            writer.close()
    assert str(caught.value) == (
        f"agent side {given} is unreachable (no answer to the WebSocket handshake in 0.5 s); "
        "start that side first (e.g. `evalctl serve`)"
    )


async def test_both_sides_on_one_port_given_apart_are_each_named_as_given(http_501: str) -> None:
    """``--agent rtvi+ws://H:P --user ws://H:P``: one check of the port, both addresses quoted."""
    given = http_501.replace("ws://", "rtvi+ws://", 1)
    with pytest.raises(InfrastructureError) as caught:
        await check_endpoints(_run_endpoints(given, http_501), PATIENCE_S)
    assert str(caught.value).startswith(
        f"agent side and user side {given} / {http_501} is not a WebSocket server ("
    )
