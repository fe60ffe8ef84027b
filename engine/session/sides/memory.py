"""The in-process transport between the engine and the built-in sides it serves itself.

A built-in side (replay, noop, ``openai:``, ``python:``, ``pipecat:``, ``livekit:``, ...) served by the
run's own process needs no socket: :func:`serve` registers its connection handler under a
``mem:`` URI and :func:`connect` gives the engine one end of a fresh pair of
:class:`MemoryConnection` objects, the handler the other. The frames are the protocol's JSON text,
encoded once by the sender and parsed once by the receiver with the same checks as over a
WebSocket (``engine.core.protocol.decode``); what is left out is the WebSocket framing, the random
masks of client frames (``os.urandom``), the socket and its event-loop wake-ups.

A pair behaves as a WebSocket connection in everything the engine and the side servers look at:
``send`` / ``recv`` / ``async for`` / ``close`` / ``wait_closed`` / ``state``, frames delivered in
order, frames already received still readable after the close, and
``websockets.exceptions.ConnectionClosed`` (OK for codes 1000 and 1001, else Error) with the close
frames sent and received and their order, so ``engine.session.sides.link.how`` blames a closed
pair exactly as a closed socket. A frame over the receiver's ``max_size`` fails the pair with close
code 1009 sent by the receiver, as websockets does; a side's handler that ends closes its end with
1000 (1011 if it raised), and a side that stops closes its pairs with 1001 (going away).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from websockets.exceptions import ConnectionClosed, ConnectionClosedError, ConnectionClosedOK
from websockets.frames import Close
from websockets.protocol import State

from engine.core.protocol import MAX_FRAME_BYTES

#: The URI scheme of a built-in side served in this process (:func:`serve`).
MEMORY_SCHEME = "mem:"

Frame = str | bytes
Handler = Callable[[Any], Awaitable[None]]

_OK_CODES = (1000, 1001)


def _size(frame: Frame) -> int:
    """Bytes of a frame's payload (a text frame's UTF-8; computed only near the limit)."""
    if isinstance(frame, bytes) or len(frame) * 4 <= MAX_FRAME_BYTES:
        return len(frame)
    return len(frame.encode("utf-8", "replace"))


class MemoryConnection:
    """One end of an in-process connection (the module doc says how it mirrors a WebSocket).

    ``max_size``: largest frame (bytes) this end accepts; a larger one fails the pair (1009).
    """

    def __init__(self, max_size: int = MAX_FRAME_BYTES) -> None:
        self.max_size = max_size
        self.state = State.OPEN
        self.peer: MemoryConnection = self
        self._inbox: deque[Frame] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._closed: asyncio.Future[None] | None = None
        self._sent: Close | None = None
        self._rcvd: Close | None = None
        self._rcvd_then_sent: bool | None = None

    @classmethod
    def pair(cls, max_size: int = MAX_FRAME_BYTES) -> tuple[MemoryConnection, MemoryConnection]:
        """Two connected ends (the engine's, the side's)."""
        one, two = cls(max_size), cls(max_size)
        one.peer, two.peer = two, one
        return one, two

    def _error(self) -> ConnectionClosed:
        ok = all(f is not None and f.code in _OK_CODES for f in (self._rcvd, self._sent))
        kind = ConnectionClosedOK if ok else ConnectionClosedError
        return kind(self._rcvd, self._sent, self._rcvd_then_sent)

    async def send(self, message: Frame) -> None:
        """Deliver one frame to the peer. Raises ConnectionClosed once the pair is closed."""
        if self.state is not State.OPEN:
            raise self._error()
        self.peer._deliver(message)

    def _deliver(self, message: Frame) -> None:
        if _size(message) > self.max_size:  # the receiving end refuses it, as websockets does
            self._shut(Close(1009, f"over size limit ({_size(message)} > {self.max_size} bytes)"))
            return
        self._inbox.append(message)
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def recv(self) -> Frame:
        """The next frame; the frames that arrived before a close are still given, then
        ConnectionClosed. Like websockets, one coroutine at a time may wait here."""
        while not self._inbox:
            if self.state is not State.OPEN:
                raise self._error()
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self._inbox.popleft()

    def poll(self) -> Frame | None:
        """The next frame if one has arrived, else None (never waits): a receiver draining a
        burst of frames (a side's audio of a turn) needs no timer per frame."""
        return self._inbox.popleft() if self._inbox else None

    def __aiter__(self) -> MemoryConnection:
        return self

    async def __anext__(self) -> Frame:
        """The next frame, until a normal close (1000, 1001); raises ConnectionClosedError after
        another. The connection is its own iterator, not an async generator: a side leaves its
        ``async for`` at ``session.end``, and an async generator left unfinished is closed by the
        event loop's finaliser (a task and a wake-up through its self-pipe, twice a session)."""
        try:
            return await self.recv()
        except ConnectionClosedOK:
            raise StopAsyncIteration from None

    async def close(self, code: int = 1000, reason: str = "") -> None:
        """Close the pair: this end sends ``code``, the peer answers with the same code."""
        self._shut(Close(code, reason))

    def _shut(self, frame: Close) -> None:
        """This end sends the close ``frame`` first and the peer echoes it (the closing handshake)."""
        if self.state is not State.OPEN:
            return
        peer = self.peer
        self._sent, peer._rcvd = frame, frame
        peer._sent, self._rcvd = frame, frame
        self._rcvd_then_sent, peer._rcvd_then_sent = False, True
        for end in (self, peer):
            end.state = State.CLOSED
            end._wake()
            if end._closed is not None and not end._closed.done():
                end._closed.set_result(None)

    async def wait_closed(self) -> None:
        """Return once the pair is closed."""
        if self.state is State.CLOSED:
            return
        if self._closed is None:
            self._closed = asyncio.get_running_loop().create_future()
        await asyncio.shield(self._closed)


class _Side:
    """A served side: its handler and the tasks running it, one per open connection."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.tasks: dict[asyncio.Task[None], MemoryConnection] = {}

    def open(self) -> MemoryConnection:
        ours, theirs = MemoryConnection.pair()
        task = asyncio.ensure_future(self.handler(theirs))
        self.tasks[task] = theirs
        task.add_done_callback(self._ended)
        return ours

    def _ended(self, task: asyncio.Task[None]) -> None:
        end = self.tasks.pop(task)
        failed = not task.cancelled() and task.exception() is not None
        end._shut(Close(1011, "internal error") if failed else Close(1000, ""))


_SIDES: dict[str, _Side] = {}
_NUMBERS = itertools.count(1)


def connect(uri: str) -> MemoryConnection:
    """The engine's end of a new connection to the side served at ``uri``. Raises
    ConnectionRefusedError when nothing is served there (the side stopped)."""
    side = _SIDES.get(uri)
    if side is None:
        raise ConnectionRefusedError(f"no side is served in this process at {uri}")
    return side.open()


@contextlib.asynccontextmanager
async def serve(handler: Handler, name: str = "side") -> AsyncIterator[str]:
    """Serve ``handler`` (called with the side's end of each connection) for the duration; yields
    its ``mem:`` URI. At the end the open connections are closed with 1001 and their handlers
    awaited (cancelled after 2 s)."""
    uri = f"{MEMORY_SCHEME}{name}-{next(_NUMBERS)}"
    side = _SIDES[uri] = _Side(handler)
    try:
        yield uri
    finally:
        del _SIDES[uri]
        for end in list(side.tasks.values()):
            end._shut(Close(1001, "side stopping"))
        tasks = list(side.tasks)
        if tasks:
            _, late = await asyncio.wait(tasks, timeout=2.0)
            for task in late:
                task.cancel()
