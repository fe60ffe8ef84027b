"""The voice side of an in-process agent that hears and speaks for itself (``pipecat:`` in a voice
run): a side server speaking protocol version 2 whose backend takes the caller's audio and gives
back its own speech, where the built-in voice side (:mod:`engine.session.voice.side`) speaks a
text backend's words with the engine's TTS.

The backend is a :class:`ListeningBackend` (``engine.session.backends.pipecat_agent.PipecatAgent``):

- ``session.ready`` picks the rate (16 kHz when offered) and asks for no text (``audio.text``
  false): the agent hears only audio; the backend is told the rate (``listen``) before the first
  turn;
- the engine's binary frames before a ``turn.request`` (the caller's speech) go to ``hear``, in
  order; the turn then runs as any side's (model steps, tool calls through the engine);
- at ``turn.response`` the side awaits the backend's ``speech()`` (its pipeline's TTS audio of the
  turn) and sends its rest as frames of stream ``turn``; what the TTS produced before (while the
  turn's tool calls ran, say) went out as it came (``speech_so_far``, one task per turn). The
  turn's first frame is stamped to start the measured wall time after the end of the caller's
  audio (``first_audio_s``: the pipeline's own response time), never before the agent's earlier
  audio ends, and the turn's frames follow each other without gaps; ``text`` is the agent's text
  of the turn (its LLM text, what went into its TTS).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol, cast

from websockets.asyncio.server import Server, ServerConnection, serve

from engine.core.protocol import MAX_FRAME_BYTES
from engine.session.backends import Backend, BackendFactory
from engine.session.backends.pipecat_audio import TurnSpeech
from engine.session.sides.server import Peer, server_uri
from engine.session.voice.frames import pack, split, unpack
from engine.session.voice.pcm import duration_ms
from engine.session.voice.side import PREFERRED_RATE, VoiceSideServer, VoiceStyle, _VoiceSession


class ListeningBackend(Protocol):
    """A backend that takes audio in and gives audio out (module doc)."""

    def listen(self, rate: int) -> None: ...

    def hear(self, pcm: bytes) -> None: ...

    async def speech(self) -> TurnSpeech: ...

    async def speech_so_far(self) -> TurnSpeech: ...

    def wake(self) -> None: ...


class _Ears:
    """The connection as the side server reads it, handing each binary frame (the caller's
    audio) to ``listener`` before the server drops it unheard. Everything else is the
    connection's own."""

    def __init__(self, ws: ServerConnection):
        self._ws = ws
        self.listener: Callable[[bytes], None] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ws, name)

    def _heard(self, raw: Any) -> Any:
        if isinstance(raw, bytes) and self.listener is not None:
            self.listener(raw)
        return raw

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._messages()

    async def _messages(self) -> AsyncIterator[Any]:
        async for raw in self._ws:
            yield self._heard(raw)

    async def recv(self, *args: Any, **kwargs: Any) -> Any:
        return self._heard(await self._ws.recv(*args, **kwargs))


class _ListeningSession(_VoiceSession):
    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._at: float | None = None  # media time where the turn's next agent sample plays
        self._frames = 0  # agent frames sent this turn
        self._stop_pump = False
        self._pump_task: asyncio.Future[None] | None = None

    async def turn(self, request: dict[str, Any]) -> None:
        self._at, self._frames, self._stop_pump = None, 0, False
        self._pump_task = pump = asyncio.ensure_future(self._pump(request))
        try:
            await super().turn(request)
        finally:
            if not pump.done():
                pump.cancel()
            await asyncio.gather(pump, return_exceptions=True)

    async def _pump(self, request: dict[str, Any]) -> None:
        """Send the turn's speech as the pipeline's TTS produces it, until the turn is answered."""
        backend = cast(ListeningBackend, self.backend)
        while not self._stop_pump:
            said = await backend.speech_so_far()
            if said.pcm:
                await self._send_speech(request, said)

    async def _send_speech(self, request: dict[str, Any], said: TurnSpeech) -> None:
        if self._at is None:  # the turn's first audio: the pipeline's own response time
            audio = request.get("audio")
            heard_end = float(audio["end_ms"]) if audio else self.media_end
            self._at = max(heard_end + 1000.0 * (said.first_audio_s or 0.0), self.media_end)
        frames = split(said.pcm, self.rate, self.style.frame_ms, int(request["turn"]), self.seq, self._at)
        for frame in frames:
            await self.ws.send(pack(frame))
        self.seq += len(frames)
        self._frames += len(frames)
        self._at += duration_ms(said.pcm, self.rate)
        self.media_end = max(self.media_end, self._at)

    async def _speak(self, text: str) -> int:
        backend = cast(ListeningBackend, self.backend)
        self._stop_pump = True
        backend.wake()
        if self._pump_task is not None:  # its send in flight ends first
            await asyncio.gather(self._pump_task, return_exceptions=True)
        said = await backend.speech()  # the rest, once every completion was spoken
        if said.pcm:
            await self._send_speech(self.request, said)
        return self._frames


class ListeningSideServer(VoiceSideServer):
    """Serves the agent side of audio sessions for a :class:`ListeningBackend` (module doc);
    ``style`` gives the frame length."""

    async def handle(self, ws: Peer) -> None:
        await super().handle(cast(Peer, _Ears(cast(ServerConnection, ws))))

    async def _open(self, ws: Peer, start: dict[str, Any], backend: Backend) -> _VoiceSession:
        rates = start["audio"]["sample_rates"]
        rate = PREFERRED_RATE if PREFERRED_RATE in rates else rates[0]
        max_frame_ms = int(start["audio"].get("max_frame_ms", 1000))
        listening = cast(ListeningBackend, backend)
        listening.listen(rate)
        cast(_Ears, ws).listener = lambda raw: listening.hear(unpack(raw, rate, max_frame_ms).pcm)
        session = _ListeningSession(ws, start, backend, self.style, rate)
        audio = {"encoding": "pcm_s16le", "sample_rate": rate, "text": False}
        await session.send(
            "session.ready", reply_to=start["id"], backend=f"voice:{backend.name}", audio=audio
        )
        return session


@contextlib.asynccontextmanager
async def listening_agent_side(factory: BackendFactory, style: VoiceStyle) -> AsyncIterator[str]:
    """Run a :class:`ListeningSideServer` on 127.0.0.1 (ephemeral port) for the duration; yields
    its URI."""
    server: Server = await serve(
        ListeningSideServer(factory, style).handle,
        "127.0.0.1",
        0,
        compression=None,
        max_size=MAX_FRAME_BYTES,
        close_timeout=1.0,
    )
    try:
        yield server_uri(server)
    finally:
        server.close()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(2.0):
                await server.wait_closed()
