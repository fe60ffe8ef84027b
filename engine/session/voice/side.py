"""A built-in voice agent: a side server speaking protocol version 2 (audio sessions), served in
the run's own process over the in-process transport (``engine.session.sides.memory``), as the
run's text sides are: its audio frames are the protocol's binary frames, without a socket.

It runs a model backend like the text sides do (``replay`` plays the gold trace, so a run needs
no model and no network) and speaks each turn's text through a local :class:`Synthesizer`
before its ``turn.response``. It does not listen: the caller's audio frames are counted and
dropped (the replay agent plays its script whatever it hears); a model backend asks for the
caller's words as text (``session.ready`` ``audio.text``) instead.

Timing: its reply of turn ``k`` is stamped to start ``delay_ms`` after the end of the caller's
audio (``turn.request.audio.end_ms``), and never before its own earlier audio ends; a negative
``delay_ms`` talks over the caller. ``sleep`` also waits ``delay_ms`` of wall time before sending
(so the engine's time to first audio sees it). ``lead_silence_ms`` sends that much silence
before the speech, stamped where the speech would have started: the agent's stamps then say it
answered at once while its speech comes later (what only the waveform shows). ``say`` replaces
the words spoken (not the text it reports): a side whose audio says another sentence.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from engine.core.protocol import AUDIO_PROTOCOL_VERSION, ProtocolError, decode
from engine.session.backends import Backend, BackendFactory
from engine.session.sides import memory
from engine.session.sides.server import Peer, SideServer, _Session
from engine.session.voice.frames import pack, split
from engine.session.voice.pcm import duration_ms, silence, trim
from engine.session.voice.tts import Synthesizer

PREFERRED_RATE = 16000


@dataclass(frozen=True)
class VoiceStyle:
    """How the built-in voice agent speaks: ``tts``; ``delay_ms`` after the caller's audio ends
    (media time); ``sleep`` also waits it in wall time; ``frame_ms`` per binary frame; ``listen_text``
    asks the engine for the caller's words as text (a model backend needs them); ``lead_silence_ms``
    and ``say`` as in the module docstring."""

    tts: Synthesizer
    delay_ms: float = 0.0
    sleep: bool = False
    frame_ms: int = 100
    listen_text: bool = False
    lead_silence_ms: float = 0.0
    say: str | None = None


class _VoiceSession(_Session):
    version = AUDIO_PROTOCOL_VERSION

    def __init__(self, ws: Peer, start: dict[str, Any], backend: Backend, style: VoiceStyle, rate: int):
        super().__init__(ws, start, backend, check_schema=False)
        self.style = style
        self.rate = rate
        self.seq = 0
        self.media_end = 0.0  # media time just after the last sample heard or said
        self.request: dict[str, Any] = {}

    async def turn(self, request: dict[str, Any]) -> None:
        self.request = request
        audio = request.get("audio")
        if audio:
            self.media_end = max(self.media_end, float(audio["end_ms"]))
        await super().turn(request)

    async def send(self, message_type: str, **fields: Any) -> str:
        if message_type == "turn.response":
            fields["audio"] = {"frames": await self._speak(fields.get("text") or "")}
        return await super().send(message_type, **fields)

    async def _speak(self, text: str) -> int:
        spoken = text if self.style.say is None or not text.strip() else self.style.say
        pcm = await self.style.tts.synthesize(spoken, self.rate) if spoken.strip() else b""
        pcm = trim(pcm, self.rate)  # its first sample is its first speech
        if not pcm:
            return 0
        if self.style.lead_silence_ms > 0:
            pcm = silence(self.style.lead_silence_ms, self.rate) + pcm
        audio = self.request.get("audio")
        heard_end = float(audio["end_ms"]) if audio else self.media_end
        start = max(0.0, heard_end + self.style.delay_ms)
        if self.style.delay_ms >= 0:
            start = max(start, self.media_end)
        if self.style.sleep and self.style.delay_ms > 0:
            await asyncio.sleep(self.style.delay_ms / 1000.0)
        frames = split(pcm, self.rate, self.style.frame_ms, int(self.request["turn"]), self.seq, start)
        for frame in frames:
            await self.ws.send(pack(frame))
        self.seq += len(frames)
        self.media_end = max(self.media_end, start + duration_ms(pcm, self.rate))
        return len(frames)


class VoiceSideServer(SideServer):
    """Serves the agent side of audio sessions: ``factory`` makes each session's backend,
    ``style`` says how it speaks."""

    version = AUDIO_PROTOCOL_VERSION
    drops_audio = True  # the caller's audio: not listened to (see the module docstring)

    def __init__(self, factory: BackendFactory, style: VoiceStyle):
        super().__init__(factory, role="agent")
        self.style = style

    async def _start(self, ws: Peer) -> dict[str, Any]:
        # the start frame is checked against its schema: its audio offer is read below
        start = decode(await ws.recv(), version=AUDIO_PROTOCOL_VERSION)
        if start["type"] != "session.start" or start["role"] != "agent":
            raise ProtocolError(
                "unexpected_message", "expected session.start for the agent role", start["id"]
            )
        return start

    async def _open(self, ws: Peer, start: dict[str, Any], backend: Backend) -> _VoiceSession:
        rates = start["audio"]["sample_rates"]
        rate = PREFERRED_RATE if PREFERRED_RATE in rates else rates[0]
        session = _VoiceSession(ws, start, backend, self.style, rate)
        audio = {"encoding": "pcm_s16le", "sample_rate": rate, "text": self.style.listen_text}
        await session.send(
            "session.ready", reply_to=start["id"], backend=f"voice:{backend.name}", audio=audio
        )
        return session


@contextlib.asynccontextmanager
async def voice_agent_side(factory: BackendFactory, style: VoiceStyle) -> AsyncIterator[str]:
    """Serve a :class:`VoiceSideServer` in this process for the duration, over the in-process
    transport the run's text sides use (``engine.session.sides.memory``: the same frames, JSON
    text and binary audio, with the same checks, and no socket); yields its ``mem:`` URI."""
    async with memory.serve(VoiceSideServer(factory, style).handle, "voice-agent") as uri:
        yield uri
