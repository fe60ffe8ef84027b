"""The engine's end of one side connection: the runner is the WebSocket client of every side."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import time
from typing import Any, Literal

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI
from websockets.protocol import State

from engine.core.protocol import (
    MAX_FRAME_BYTES,
    PROTOCOL_VERSION,
    Ids,
    ProtocolError,
    clip,
    decode,
    encode,
    error_message,
    make,
)
from engine.session.sides.memory import MEMORY_SCHEME, MemoryConnection
from engine.session.sides.memory import connect as connect_in_process

#: Stop reasons of a side's failure: ``error`` / ``timeout`` (whoever is to blame), and the two that
#: name an agent's own failure: ``agent_error`` (the agent side said it failed: an ``error`` frame of
#: an external agent, whatever its code, or the HTTP 4xx refusal of a built-in ``openai:`` agent's
#: request) and ``agent_disconnected`` (an external agent closed or dropped its connection, or could
#: not be reached).
FailureKind = Literal["error", "timeout", "agent_error", "agent_disconnected"]


class SideFailure(Exception):
    """A side failed: ``kind`` is the stop reason it causes (:data:`FailureKind`); ``source``
    an ``engine.core.records.common.ErrorSource`` value when the failure is infrastructure's (the result
    then has no verdict), None when it is the agent's own doing (see :func:`blame`); ``what``
    the failure as :func:`blame` names it (``rejected``, ``backend``, ...), when known."""

    def __init__(self, kind: FailureKind, message: str, source: str | None = None, what: str | None = None):
        super().__init__(message)
        self.kind: FailureKind = kind
        self.message = message
        self.source = source
        self.what = what


#: Protocol error codes a side uses to say its model backend failed (not its own behaviour):
#: ``backend_rejected`` is the endpoint's refusal of the request (HTTP 4xx: the request the side's
#: model made was bad, e.g. over the context length), the other two its failure to answer.
BACKEND_CODES = ("backend_error", "backend_timeout", "backend_rejected")


def blame(role: str, what: str, builtin: bool = False) -> str | None:
    """The infrastructure source of a failure ``what`` of the ``role`` side, None when it is the
    agent's own behaviour (the result is then the agent's FAIL, never ``error``).

    ``what``: ``connect`` (unreachable), ``local`` (this machine could not open a connection: out
    of file descriptors or memory), ``lost`` (connection broken without a close frame, or closed by
    a keepalive timeout), ``backend`` (the side reported its model backend failed to answer),
    ``rejected`` (the side reported its model endpoint refused the request: HTTP 4xx),
    ``crash`` (the side reported an internal error), ``silent`` (nothing within the turn
    timeout), ``closed`` (the side closed the connection), ``refused`` (the side answered with a
    protocol error: what the engine sent broke the protocol, as that side sees it), ``broke`` (it
    broke the protocol: a frame that does not parse, a message out of place, a repeated id),
    ``conduct`` (what its model did: too much text, too many calls).

    The system under test cannot make its own failures infrastructure's: everything an
    **external** agent side does or reports (its ``error`` frames, whatever their code, its closed
    or dropped connection, its silence) is its own, and so is the 4xx refusal of a built-in
    ``openai:`` agent's request. Everything the user side does wrong is the user simulator's
    failure (it is not under test). A built-in agent side only speaks for its model, so its
    model endpoint's failure to answer and its silence are ``agent_model``, its crashes the
    engine's; a built-in side (evalctl's own code) that closes the connection, refuses a frame or
    breaks the protocol says the engine went wrong, never the agent; the transport between
    built-in sides is ``transport``. ``builtin`` means evalctl's own code answers for the side: a
    side served here with a scheme an installed package registers is not built in (its backend is
    third-party code: ``engine.session.backends.registry.evalctl_own``), so an agent's raise,
    ``BackendError`` or silence there is the agent's FAIL, as an external agent's."""
    if what == "local":
        return "transport"
    if role == "agent" and not builtin:
        return None
    if what in ("connect", "lost"):
        return "transport"
    if builtin and what in ("closed", "refused", "broke"):
        return "engine"
    if role == "user":
        return "engine" if what == "crash" and builtin else "user_simulator"
    if what in ("backend", "silent"):
        return "agent_model"
    if what == "crash":
        return "engine"
    return None


#: The agent's own failures that have a stop reason of their own (:data:`FailureKind`).
_AGENT_STOPS: dict[str, FailureKind] = {
    "backend": "agent_error",
    "rejected": "agent_error",
    "crash": "agent_error",
    "refused": "agent_error",
    "connect": "agent_disconnected",
    "lost": "agent_disconnected",
    "closed": "agent_disconnected",
}


def failure(role: str, kind: FailureKind, message: str, what: str, builtin: bool = False) -> SideFailure:
    """A :class:`SideFailure` of the ``role`` side blamed as :func:`blame` says; when it is the
    agent's own failure, its stop reason names the cause (``agent_error``,
    ``agent_disconnected``) instead of ``kind``."""
    source = blame(role, what, builtin)
    if source is None and role == "agent":
        kind = _AGENT_STOPS.get(what, kind)
    return SideFailure(kind, message, source, what)


class Traffic:
    """Bytes of frames exchanged with the sides of one session (both directions: utterances, tool
    calls and their arguments, tool results, prompts), against ``limit``: what the engine keeps of
    a session grows with it, so a session over it ends with stop reason ``error``.

    ``by_role`` counts the bytes on each side's connection; ``by_cause`` counts them by the side
    whose words they carry (a ``turn.request`` forwards the other side's reply, an audio frame the
    caller's speech): when the budget runs out the side that used most of it is blamed, not the
    one whose frame happened to cross the limit (a side could otherwise fill the budget with its
    own replies and have the last forward of them put on the other side)."""

    def __init__(self, limit: int):
        self.limit = limit
        self.by_role: dict[str, int] = {}
        self.by_cause: dict[str, int] = {}

    def charge(self, role: str, size: int, cause: str | None = None) -> None:
        """Count ``size`` bytes to or from ``role``, carrying the words of ``cause`` (default
        ``role``); raises SideFailure (``error``) past the limit, blamed on the side that caused
        the most bytes."""
        self.by_role[role] = self.by_role.get(role, 0) + size
        cause = cause or role
        self.by_cause[cause] = self.by_cause.get(cause, 0) + size
        total = sum(self.by_role.values())
        if total > self.limit:
            each = ", ".join(f"{r} {n}" for r, n in sorted(self.by_role.items()))
            culprit = max(sorted(self.by_cause), key=lambda r: self.by_cause[r])
            raise SideFailure(
                "error",
                f"session byte budget exhausted: {total} bytes exchanged with the sides ({each}), "
                f"over the {self.limit} byte limit; most of them carried the {culprit} side's words",
                blame(culprit, "conduct"),
            )


def other_role(role: str) -> str:
    """The other party of a conversation (``agent`` <-> ``user``)."""
    return "user" if role == "agent" else "agent"


#: ``errno`` values of a connection that this machine could not open (out of descriptors, buffers or
#: memory): the engine's resources, never the side's doing.
LOCAL_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


#: Seconds between the engine's keepalive pings to a side. They never time out (``ping_timeout``
#: None): a side busy inside its turn (one that blocks its event loop while it thinks) is waited
#: for up to ``turn_timeout_s``, which bounds every wait, instead of being dropped after a missed
#: pong (the library default, 20 s + 20 s, dropped such a side after about 40 s with close code 1011).
PING_INTERVAL_S = 20.0

#: The URI scheme of a built-in side served on a Unix socket (``engine.session.sides.server.builtin_side``
#: with ``local``): ``ws+unix:`` then the socket's path. Only the run that serves it connects to it.
UNIX_SCHEME = "ws+unix:"

#: A connection to a side: a WebSocket, or the engine's end of an in-process pair
#: (``engine.session.sides.memory``, a built-in side served by this process).
Connection = ClientConnection | MemoryConnection

#: URI schemes of the built-in sides only this process connects to, whose connections a clean
#: session leaves open for the next one (:meth:`SideLink.close`).
_REUSED = (UNIX_SCHEME, MEMORY_SCHEME)

#: Per URI of a built-in side on a Unix socket or in process: connections left open by finished
#: sessions, for the next ones (:meth:`SideLink.close`; :func:`forget` when the side stops).
_IDLE: dict[str, list[Connection]] = {}


async def forget(uri: str) -> None:
    """Close the idle connections kept for ``uri`` (its side is stopping)."""
    for ws in _IDLE.pop(uri, []):
        with contextlib.suppress(Exception):
            async with asyncio.timeout(1.0):
                await ws.close()


#: Largest reply text (bytes as JSON) the engine forwards to the other side: room is left for the
#: ``turn.request`` wrapper, so the forwarded frame stays under MAX_FRAME_BYTES.
MAX_FORWARD_BYTES = MAX_FRAME_BYTES - 64 * 1024


def forward_bytes(text: str) -> int:
    """Bytes ``text`` takes inside a frame (JSON-escaped, UTF-8)."""
    return frame_bytes(json.dumps(text, ensure_ascii=False))


def frame_bytes(frame: str) -> int:
    """UTF-8 size of a frame (computed only when it could be near the frame limit)."""
    return len(frame) if len(frame) * 4 <= MAX_FRAME_BYTES else len(frame.encode("utf-8", "replace"))


class SideLink:
    """One open session connection to a side (``role`` agent or user) at ``uri``.

    ``engine_time_s`` accumulates the engine's own CPU-side time spent encoding and decoding
    frames on this link (seconds), for the runtime benchmark. ``traffic``, when set, counts the
    bytes of every frame sent and received against the session's byte budget. ``version`` is the
    protocol version of the connection; a subclass that speaks one with binary frames (audio,
    ``engine.session.voice.link``) takes them in :meth:`binary`.
    """

    version: int = PROTOCOL_VERSION

    def __init__(self, role: str, uri: str, ws: Connection, builtin: bool = False):
        self.role = role
        self.uri = uri
        self.ws = ws
        self.ids = Ids("e")
        self.engine_time_s = 0.0
        self.traffic: Traffic | None = None
        #: A side the run serves itself (replay, openai:MODEL): see :func:`blame`. Its frames are
        #: not checked against the protocol schemas (the engine's own code made them), nor its ids.
        self.builtin = builtin
        #: turn.requests not answered yet, whether no failure of this side happened and whether
        #: the side answered this session's start (``session.ready``): a connection is reused by a
        #: later session only when all three say it is idle (:meth:`close`). A session that never
        #: started (the other side could not be reached, or time ran out before the side was
        #: ready) leaves the side expecting a session.start, or a late session.ready in flight.
        self.turns_open = 0
        self.clean = True
        self.started = False
        #: The ids of the messages received from an external side on this connection (each is unique).
        self.seen_ids: set[str] = set()
        #: The model endpoint behind the side (``session.ready``'s ``endpoint``: ``openai:M at URL``),
        #: named when the side is silent; None: the side named none.
        self.endpoint: str | None = None

    def failure(self, kind: FailureKind, message: str, what: str) -> SideFailure:
        """A :class:`SideFailure` of this side, blamed as :func:`failure` says (the connection is
        then never used for another session)."""
        self.clean = False
        return failure(self.role, kind, message, what, self.builtin)

    @classmethod
    async def open(cls, role: str, uri: str, timeout_s: float, builtin: bool = False) -> SideLink:
        """Connect; raises :class:`SideFailure` when the side cannot be reached (``error``, or
        ``agent_disconnected`` for an external agent: see :func:`blame`). A built-in side on a Unix
        socket (:data:`UNIX_SCHEME`) or in this process (``mem:``, no socket:
        ``engine.session.sides.memory``) may give a connection an earlier session left open
        (:meth:`close`)."""
        idle = _IDLE.get(uri)
        while idle:
            old = idle.pop()
            if old.state is State.OPEN:
                return cls(role, uri, old, builtin)
        if uri.startswith(MEMORY_SCHEME):
            try:
                return cls(role, uri, connect_in_process(uri), builtin)
            except ConnectionRefusedError as err:
                message = f"cannot connect to the {role} side at {uri}: {err}"
                raise failure(role, "error", message, "connect", builtin) from None
        where: dict[str, Any] = {"uri": uri}
        if uri.startswith(UNIX_SCHEME):  # a built-in side of this process (engine.session.sides.server)
            where = {"uri": "ws://localhost/", "unix": True, "path": uri[len(UNIX_SCHEME) :]}
        try:
            ws = await connect(
                **where,
                open_timeout=timeout_s,
                close_timeout=1.0,
                compression=None,
                max_size=MAX_FRAME_BYTES,
                proxy=None,
                ping_interval=PING_INTERVAL_S,
                ping_timeout=None,
            )
        except (OSError, InvalidHandshake, InvalidURI, TimeoutError) as err:
            what = "local" if isinstance(err, OSError) and err.errno in LOCAL_ERRNOS else "connect"
            message = f"cannot connect to the {role} side at {uri}: {err}"
            raise failure(role, "error", message, what, builtin) from None
        return cls(role, uri, ws, builtin)

    async def send(self, message_type: str, **fields: Any) -> str:
        """Send one message; returns its id. Raises :class:`SideFailure` if the side is gone, if the
        frame would exceed MAX_FRAME_BYTES (it is not sent: the side would drop the connection and
        be blamed) or if the session's byte budget is exhausted."""
        t0 = time.perf_counter()
        msg_id = self.ids.next()
        frame = encode(make(message_type, msg_id, v=self.version, **fields))
        if message_type == "turn.request":
            self.turns_open += 1
        size = frame_bytes(frame)
        self.engine_time_s += time.perf_counter() - t0
        if size > MAX_FRAME_BYTES:
            raise SideFailure(
                "error",
                f"the engine's {message_type} for the {self.role} side would be {size} bytes, over the "
                f"{MAX_FRAME_BYTES} byte frame limit; not sent",
            )
        if self.traffic is not None:
            forwards = message_type == "turn.request" and fields.get("utterance")
            self.traffic.charge(self.role, size, other_role(self.role) if forwards else None)
        try:
            await self.ws.send(frame)
        except ConnectionClosed as err:
            raise self.failure("error", _gone(self.role, err), how(err)) from None
        return msg_id

    async def receive(self, timeout_s: float) -> dict[str, Any]:
        """The next valid message. Raises :class:`SideFailure`: ``timeout`` when nothing arrives
        within ``timeout_s`` seconds; ``error`` on disconnect, a protocol violation (the side is
        told with a typed ``error`` first) or an ``error`` message from the side (a
        ``backend_timeout`` error gives ``timeout``)."""
        poll = getattr(self.ws, "poll", None)  # the in-process transport: frames already there
        while True:
            try:
                raw = poll() if poll is not None else None
                if raw is None:
                    async with asyncio.timeout(timeout_s):
                        raw = await self.ws.recv()
            except TimeoutError:
                silent = f"{self.role} side sent nothing for {timeout_s:g} s"
                if self.endpoint:
                    silent += f" (waiting on {self.endpoint})"
                raise self.failure("timeout", silent, "silent") from None
            except ConnectionClosed as err:
                raise self.failure("error", _gone(self.role, err), how(err)) from None
            if self.traffic is not None:
                self.traffic.charge(self.role, len(raw))
            if not isinstance(raw, bytes) or not await self._binary(raw):
                break
        t0 = time.perf_counter()
        try:
            # a side the run serves itself builds its frames with this engine's own code: only an
            # external side's frames are checked against the protocol schemas (docs/trust.md)
            msg = decode(raw, version=self.version, check_schema=not self.builtin)
        except ProtocolError as err:
            self.engine_time_s += time.perf_counter() - t0
            await self.fail(err.code, err.message, err.reply_to)
            raise self.failure("error", f"{self.role} side broke the protocol: {err}", "broke") from None
        self.engine_time_s += time.perf_counter() - t0
        if msg["type"] == "turn.response":
            self.turns_open -= 1
        elif msg["type"] == "session.ready":
            self.started = True
        if msg["type"] == "error":
            code = msg["code"]
            kind: FailureKind = "timeout" if code == "backend_timeout" else "error"
            what = (
                "rejected"
                if code == "backend_rejected"
                else "backend"
                if code in BACKEND_CODES
                else "crash"
                if code == "internal_error"
                else "refused"
            )
            raise self.failure(kind, f"{self.role} side reported {code}: {clip(msg['message'])}", what)
        if not self.builtin:
            await self._check_id(msg)
        return msg

    async def _check_id(self, msg: dict[str, Any]) -> None:
        """Refuse a message whose ``id`` this side already used on this connection (the protocol
        makes each unique per sender and connection): the side is told (``unexpected_message``) and
        :class:`SideFailure` (``error``, the side's conduct) is raised."""
        msg_id = msg["id"]
        if msg_id in self.seen_ids:
            message = f"repeated message id {clip(msg_id, 200)!r}: this side already sent a message with it"
            await self.fail("unexpected_message", message, msg_id)
            raise self.failure("error", f"{self.role} side broke the protocol: {message}", "broke")
        self.seen_ids.add(msg_id)

    def binary(self, raw: bytes) -> bool:
        """Take one binary frame; False (the default: text sessions have none) makes it a
        ``bad_json`` protocol error. Raises ProtocolError for a frame it refuses."""
        return False

    async def _binary(self, raw: bytes) -> bool:
        t0 = time.perf_counter()
        try:
            return self.binary(raw)
        except ProtocolError as err:
            await self.fail(err.code, err.message, err.reply_to)
            raise self.failure("error", f"{self.role} side broke the protocol: {err}", "broke") from None
        finally:
            self.engine_time_s += time.perf_counter() - t0

    async def fail(self, code: Any, message: str, reply_to: str | None = None) -> None:
        """Tell the side what it did wrong (best effort; never raises)."""
        self.clean = False
        try:
            async with asyncio.timeout(1.0):
                msg = error_message(self.ids.next(), code, clip(message), reply_to, v=self.version)
                await self.ws.send(encode(msg))
        except Exception:  # whatever state the connection is in, the session's results come first
            pass

    async def close(self, stop_reason: str, error: str | None) -> None:
        """Send ``session.end`` and close the connection (best effort; never raises: the session's
        artifacts are written after it, whatever the connection's state).

        A connection to a built-in side on a Unix socket (:data:`UNIX_SCHEME`) or in this process
        (``mem:``), served by ``engine.session.sides.server.builtin_side`` with sessions back to
        back, is kept open for the next
        session instead when this one left it clean: the session started (``session.ready``
        received), every turn answered, no failure of this side, ``session.end`` sent. Opening and
        closing a WebSocket costs about as much CPU as a whole replayed conversation's frames."""
        sent = False
        try:
            async with asyncio.timeout(1.0):
                msg = make(
                    "session.end",
                    self.ids.next(),
                    v=self.version,
                    stop_reason=stop_reason,
                    error=clip(error or "") or None,
                )
                await self.ws.send(encode(msg))
                sent = True
        except Exception:
            pass
        reusable = (
            sent and self.started and self.clean and not self.turns_open and self.uri.startswith(_REUSED)
        )
        if reusable and self.ws.state is State.OPEN and type(self) is SideLink:
            _IDLE.setdefault(self.uri, []).append(self.ws)
            return
        try:
            async with asyncio.timeout(1.0):
                await self.ws.close()
        except Exception:
            pass


#: Close codes the engine's end sends when the side's data broke the rules: a frame over
#: MAX_FRAME_BYTES (1009), text that is not UTF-8 (1007), a malformed WebSocket frame (1002).
SIDE_AT_FAULT_CODES = (1002, 1007, 1009)


def how(err: ConnectionClosed) -> str:
    """``conduct`` when the engine's end closed the connection first because of what the side
    sent (:data:`SIDE_AT_FAULT_CODES`: the side sent too much or broke the WebSocket protocol; the
    side's own close frame, if any, only answered ours), ``lost`` when the connection broke without
    a close frame from the side (a dropped link, or our keepalive giving up), else ``closed`` (the
    side closed it)."""
    ours_first = err.sent is not None and (err.rcvd is None or not err.rcvd_then_sent)
    if ours_first and err.sent is not None and err.sent.code in SIDE_AT_FAULT_CODES:
        return "conduct"
    return "lost" if err.rcvd is None else "closed"


def _gone(role: str, err: ConnectionClosed) -> str:
    """The message of a closed connection to the ``role`` side."""
    if how(err) == "conduct" and err.sent is not None and err.sent.code == 1009:
        return f"{role} side sent a frame over the {MAX_FRAME_BYTES} byte frame limit (close code 1009)"
    return f"{role} side disconnected: {_closed(err)}"


def _closed(err: ConnectionClosed) -> str:
    frame = err.rcvd or err.sent
    if frame is None:
        return "connection lost without a close frame"
    return f"close code {frame.code}" + (f" ({clip(frame.reason)})" if frame.reason else "")
