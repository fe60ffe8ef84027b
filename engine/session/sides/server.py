"""Built-in sides: WebSocket servers that answer the engine with a model backend.

One connection is one session. The server keeps that session's chat (``messages`` in OpenAI
format), asks its backend for each step, forwards the backend's tool calls to the engine as
``tool.call`` and feeds the ``tool.result`` back, and closes the turn with ``turn.response``.
At most ``limits.max_tool_rounds`` batches of tool calls run per turn; further calls are dropped
(``TurnInfo.last_round`` tells the backend: an in-process agent's are then its FAIL).
A tool message shows ``tool.result.text`` when the engine sends one (the domain's rendering of the
result), else the result as JSON. A user backend's reply with an ``end`` reason (tau2's stop tokens)
ends the turn with ``turn.response.end`` and ``end_reason``; that reply's tool calls are not run.
An in-process built-in side trusts its engine: its frames are checked for JSON, version and type
only. A side served to the network (``evalctl serve``, ``check_schema=True``) checks every frame
against the protocol schemas like the engine does and answers a malformed one with ``bad_message``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import socket
import stat
import sys
import tempfile
from collections.abc import AsyncIterator, Coroutine
from pathlib import Path
from typing import Any

from websockets.asyncio.server import Server, ServerConnection, serve, unix_serve
from websockets.exceptions import ConnectionClosed

from engine.core.protocol import (
    MAX_FRAME_BYTES,
    PROTOCOL_VERSION,
    ErrorCode,
    Ids,
    ProtocolError,
    decode,
    encode,
    error_message,
    make,
)
from engine.session.backends import (
    Backend,
    BackendError,
    BackendFactory,
    BackendReply,
    SessionInfo,
    ToolCallRequest,
    TurnInfo,
    Usage,
)
from engine.session.sides import memory
from engine.session.sides.link import UNIX_SCHEME, forget
from engine.util import end_wait

log = logging.getLogger(__name__)

#: The side's end of a connection: a WebSocket, or an in-process pair's (``engine.session.sides.memory``).
Peer = ServerConnection | memory.MemoryConnection


class _SessionEnded(Exception):
    """The engine ended the session while this side was mid-turn."""


class _Session:
    """State of one session on a side server (``version``: the connection's protocol version)."""

    version: int = PROTOCOL_VERSION

    def __init__(self, ws: Peer, start: dict[str, Any], backend: Backend, check_schema: bool):
        self.ws = ws
        self.check_schema = check_schema
        self.ids = Ids("s")
        self.backend = backend
        self.role = start["role"]
        self.tools: list[dict[str, Any]] = start["tools"]
        self.max_tool_rounds: int = start["limits"]["max_tool_rounds"]
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": start["system_prompt"]}]

    async def send(self, message_type: str, **fields: Any) -> str:
        msg_id = self.ids.next()
        await self.ws.send(encode(make(message_type, msg_id, v=self.version, **fields)))
        return msg_id

    async def turn(self, request: dict[str, Any]) -> None:
        """Answer one ``turn.request``: model steps, tool calls through the engine, turn.response."""
        if request.get("utterance"):
            self.messages.append({"role": "user", "content": request["utterance"]})
        usage = Usage()
        texts: list[str] = []
        ended: str | None = None
        end_reason: str | None = None
        state: dict[str, Any] | None = None
        finish_reasons: list[str] = []
        for step in range(self.max_tool_rounds + 1):
            closing = bool(request.get("closing", False))
            info = TurnInfo(request["turn"], step, closing, last_round=step >= self.max_tool_rounds)
            reply = await self.backend.respond(self.messages, self.tools, info)
            usage.add(reply.usage)
            state = reply.state if reply.state is not None else state
            if reply.finish_reason:
                finish_reasons.append(reply.finish_reason)
            end_reason = reply.end if self.role == "user" else None
            calls = reply.tool_calls if step < self.max_tool_rounds and not end_reason else []
            if reply.text:
                texts.append(reply.text)
            if reply.text or calls:
                self.messages.append(assistant_entry(reply, calls))
            if not calls:
                break
            for call in calls:
                call_msg = await self.send(
                    "tool.call",
                    reply_to=request["id"],
                    call_id=call.call_id,
                    name=call.name,
                    arguments=call.arguments,
                )
                result = await self._await_result(call_msg)
                content = result.get("text")  # the domain's text for a model, else the result as JSON
                if not isinstance(content, str):
                    content = json.dumps(result["result"], ensure_ascii=False, default=str)
                self.messages.append({"role": "tool", "tool_call_id": call.call_id, "content": content})
                ended = ended or result["ended"]
            if ended:
                break
        reason: dict[str, Any] = {"end_reason": end_reason} if end_reason else {}
        if state is not None and self.role == "agent":
            reason["agent_state"] = state
        await self.send(
            "turn.response",
            reply_to=request["id"],
            text=" ".join(texts),
            end=ended == "user_hangup" or bool(end_reason),
            **reason,
            usage={
                "model": self.backend.name,
                "prompt_tokens": usage.prompt_tokens,
                "completion_tokens": usage.completion_tokens,
                "calls": usage.calls,
                **({"unreported": usage.unreported} if usage.unreported else {}),
                **({"finish_reasons": finish_reasons} if finish_reasons else {}),
            },
        )

    async def _await_result(self, call_msg: str) -> dict[str, Any]:
        msg = decode(await self.ws.recv(), check_schema=self.check_schema, version=self.version)
        if msg["type"] in ("session.end", "error"):
            raise _SessionEnded
        if msg["type"] != "tool.result" or msg["reply_to"] != call_msg:
            raise ProtocolError(
                "unexpected_message", f"expected tool.result for {call_msg}, got {msg['type']}"
            )
        return msg


def assistant_entry(reply: BackendReply, calls: list[ToolCallRequest]) -> dict[str, Any]:
    """The history entry of one model step with the tool calls that run (``calls``): the message as
    the endpoint returned it when the backend kept it (``reply.message``: every field, so a thinking
    model gets its signed tool calls back as it sent them), without its tool calls when none run
    (past the round cap); else built from the text and the calls."""
    if reply.message is not None:
        entry = dict(reply.message)
        if not calls:
            entry.pop("tool_calls", None)
        return entry
    entry = {"role": "assistant", "content": reply.text or None}
    if calls:
        entry["tool_calls"] = [
            {"id": c.call_id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in calls
        ]
    return entry


async def _close_backend(backend: Backend) -> None:
    """Await the backend's optional ``aclose()`` (an in-process agent stops its tasks and
    pipeline there) at the session's end; what it raises is logged, never propagated."""
    close = getattr(backend, "aclose", None)
    if close is None:
        return
    try:
        await close()
    except Exception:
        log.exception("closing a session's backend failed")


class SideServer:
    """Serves one side (agent or user) to any number of concurrent sessions.

    ``factory`` makes the backend of each session from its ``session.start``; ``role``, when
    set, is the only role this server accepts (a session.start for the other one is refused);
    ``check_schema`` checks every incoming frame against its protocol schema (for a server whose
    engine is not trusted: ``evalctl serve``).
    """

    #: Protocol version of the connections served (the errors it sends carry it).
    version: int = PROTOCOL_VERSION
    #: Binary frames between turns are the caller's audio, dropped unheard (the voice side); else
    #: one is a protocol error (``bad_json``), as any frame that is not JSON text.
    drops_audio: bool = False

    def __init__(
        self,
        factory: BackendFactory,
        role: str | None = None,
        check_schema: bool = False,
        serial: bool = False,
    ):
        self.factory = factory
        self.role = role
        self.check_schema = check_schema
        #: Sessions back to back on one connection (a built-in side on a Unix socket, whose only
        #: client is the run serving it: ``engine.session.sides.link.SideLink.close``); otherwise the
        #: protocol's one session per connection.
        self.serial = serial

    async def handle(self, ws: Peer) -> None:
        """The connection handler: one session, start to end (with ``serial``, then the next
        session's start, until the engine closes the connection). Never raises."""
        ids = Ids("x")
        guard = TurnGuard(ws)
        try:
            await self._run(ws, guard)
            while self.serial:
                await self._run(ws, guard)
        except ProtocolError as err:
            await _send_quietly(
                ws, error_message(ids.next(), err.code, err.message, err.reply_to, v=self.version)
            )
        except BackendError as err:
            code: ErrorCode = "backend_rejected" if err.rejected else "backend_error"
            code = "backend_timeout" if err.timeout else code
            await _send_quietly(ws, error_message(ids.next(), code, str(err), v=self.version))
        except (ConnectionClosed, _SessionEnded):
            pass
        except Exception as err:  # a bug in a backend must not kill the server
            log.exception("side session crashed")
            await _send_quietly(
                ws,
                error_message(ids.next(), "internal_error", f"{type(err).__name__}: {err}", v=self.version),
            )
        finally:
            guard.close()

    async def _run(self, ws: Peer, guard: TurnGuard) -> None:
        """One session: its ``session.start`` (:meth:`_start`), its backend, ``session.ready``
        (:meth:`_open`), then each ``turn.request`` answered until ``session.end`` or an error."""
        start = await self._start(ws)
        info = SessionInfo(
            start["role"], dict(start["scenario"]), start["system_prompt"], list(start["tools"])
        )
        try:
            backend = self.factory(info)
        except LookupError as err:
            raise ProtocolError("unknown_scenario", str(err), start["id"]) from None
        try:
            session = await self._open(ws, start, backend)
            async for raw in ws:
                if self.drops_audio and isinstance(raw, bytes):
                    continue
                msg = decode(raw, check_schema=self.check_schema, version=self.version)
                if msg["type"] == "turn.request":
                    await guard.turn(session.turn(msg))
                elif msg["type"] in ("session.end", "error"):
                    return
                else:
                    raise ProtocolError(
                        "unexpected_message", f"unexpected {msg['type']} between turns", msg["id"]
                    )
        finally:
            await _close_backend(backend)

    async def _start(self, ws: Peer) -> dict[str, Any]:
        """The connection's ``session.start``, for this server's role. Raises ProtocolError."""
        start = decode(await ws.recv(), check_schema=self.check_schema, version=self.version)
        if start["type"] != "session.start":
            raise ProtocolError(
                "unexpected_message", f"expected session.start, got {start['type']}", start["id"]
            )
        if self.role is not None and start["role"] != self.role:
            raise ProtocolError(
                "unexpected_message", f"this server is a {self.role} side, not {start['role']}", start["id"]
            )
        return start

    async def _open(self, ws: Peer, start: dict[str, Any], backend: Backend) -> _Session:
        """The session of ``start`` with ``backend``, after its ``session.ready`` is sent."""
        session = _Session(ws, start, backend, self.check_schema)
        endpoint = getattr(backend, "endpoint", None)  # a model endpoint's name and URL, for messages
        named = {"endpoint": endpoint[:400]} if isinstance(endpoint, str) and endpoint else {}
        await session.send("session.ready", reply_to=start["id"], backend=backend.name, **named)
        return session


class TurnGuard:
    """Stops a turn at once when the engine closes the connection meanwhile (a timed-out or
    interrupted session must not go on paying for model requests): one watcher of the connection
    for its whole life, which cancels the connection's handler while it is inside :meth:`turn`
    (a watcher task per turn cost about 30 µs). Create it in the handler's task; :meth:`close` it
    when the connection is done."""

    def __init__(self, ws: Peer) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._task = task
        self._in_turn = False
        self._fired = False
        self._watch = asyncio.ensure_future(ws.wait_closed())
        self._watch.add_done_callback(self._closed)

    def _closed(self, _: object) -> None:
        if self._in_turn and not self._fired:
            self._fired = True
            self._task.cancel()

    async def turn(self, work: Coroutine[Any, Any, None]) -> None:
        """Await ``work`` (one turn). Raises _SessionEnded when the connection closed before or
        during it (the turn is then cancelled); what the turn raises otherwise."""
        if self._watch.done():
            work.close()
            raise _SessionEnded
        self._in_turn = True
        try:
            await work
        except asyncio.CancelledError:
            if self._fired and self._task.uncancel() == 0:
                raise _SessionEnded from None
            raise  # cancelled from outside (the server shutting down): not ours to swallow
        finally:
            self._in_turn = False
        if self._fired:  # the turn swallowed the cancellation and finished anyway
            self._task.uncancel()
            raise _SessionEnded

    def close(self) -> None:
        self._watch.cancel()


async def _send_quietly(ws: Peer, msg: dict[str, Any]) -> None:
    with contextlib.suppress(ConnectionClosed, TimeoutError, OSError):
        async with asyncio.timeout(1.0):
            await ws.send(encode(msg))


async def start_side_server(
    factory: BackendFactory,
    host: str = "127.0.0.1",
    port: int = 0,
    role: str | None = None,
    check_schema: bool = False,
) -> Server:
    """Start serving ``factory``'s backends at ``host:port`` (0 = an ephemeral port);
    ``check_schema`` as in :class:`SideServer`."""
    return await serve(SideServer(factory, role, check_schema).handle, host, port, **_SERVER_OPTIONS)


#: Connections a side server's socket queues before accepting them: a run opens up to
#: ``--concurrency`` at once (asyncio's default, 100, refuses the rest on a Unix socket and delays
#: them by a SYN retry, a second or more, on TCP).
BACKLOG = 4096
#: How every side server of this module serves: no compression, the protocol's frame limit.
_SERVER_OPTIONS: dict[str, Any] = {
    "compression": None,
    "max_size": MAX_FRAME_BYTES,
    "close_timeout": 1.0,
    "backlog": BACKLOG,
}


def server_uri(server: Server) -> str:
    """``ws://host:port`` of a running server (the first socket it listens on)."""
    host, port = server.sockets[0].getsockname()[:2]
    return f"ws://{host}:{port}"


@contextlib.asynccontextmanager
async def builtin_side(
    factory: BackendFactory, role: str | None = None, local: bool = False, in_process: bool = False
) -> AsyncIterator[str]:
    """Run a side server for the duration; yields its URI: ``ws://127.0.0.1:PORT`` (an ephemeral
    port), or with ``local``, where the platform has Unix sockets, ``ws+unix:PATH``: the same
    WebSocket protocol over a Unix socket in a fresh private temporary folder (removed at the end),
    for a side only this process connects to (it skips the TCP stack: about a third less CPU per
    frame). With ``in_process``, ``mem:NAME``: the same frames over no socket at all
    (``engine.session.sides.memory``), the same checks on both ends; the runner serves its
    built-in sides this way (``make bench``, ``bench_scaling``: the figures in docs/performance.md)."""
    if in_process:
        side = SideServer(factory, role, False, serial=True)
        async with memory.serve(side.handle, role or "side") as uri:
            try:
                yield uri
            finally:
                await forget(uri)
        return
    folder = _socket_folder() if local else None
    if folder is None:
        server = await start_side_server(factory, role=role)
        uri = server_uri(server)
    else:
        path = os.path.join(folder, f"{role or 'side'}.sock")
        server = await unix_serve(
            SideServer(factory, role, False, serial=True).handle, path, **_SERVER_OPTIONS
        )
        uri = UNIX_SCHEME + path
    try:
        yield uri
    finally:
        await forget(uri)
        server.close()
        with contextlib.suppress(TimeoutError):
            # its handlers' end; after the user's stop only briefly (the run's end names what is left)
            async with asyncio.timeout(min(2.0, end_wait.STOPPED_GRACE_S) if end_wait.stopped() else 2.0):
                await server.wait_closed()
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


#: The name of a socket folder starts with this, then the pid of the process serving in it.
_SOCKETS = "evalctl-sockets-"


def _sweep(tmp: Path) -> None:
    """Remove the socket folders this user's processes left in ``tmp`` when they were killed
    (``kill -9``: their clean-up never ran): those whose process is gone."""
    try:
        entries = list(tmp.glob(f"{_SOCKETS}*-*"))
    except OSError:
        return
    for folder in entries:
        pid = folder.name[len(_SOCKETS) :].split("-", 1)[0]
        try:
            st = folder.lstat()  # a symlink is never followed, nor removed
            if not pid.isdigit() or not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
                continue
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
        except OSError:
            continue


def _socket_folder() -> str | None:
    """A fresh private folder for a Unix socket, or None where there are no Unix sockets or the
    temporary folder's path is too long for one (the limit is about 100 bytes)."""
    if not hasattr(socket, "AF_UNIX") or sys.platform == "win32":
        return None
    _sweep(Path(tempfile.gettempdir()))
    folder = tempfile.mkdtemp(prefix=f"{_SOCKETS}{os.getpid()}-")
    if len(os.path.join(folder, "agent.sock").encode()) > 100:
        os.rmdir(folder)
        return None
    return folder
