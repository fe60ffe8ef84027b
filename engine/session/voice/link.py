"""The engine's end of an audio session (protocol version 2) with the agent side.

:class:`VoiceCall` holds one session's audio state; the session wraps its agent link with
:meth:`VoiceCall.wrap`, and everything audio happens in the returned :class:`AudioLink`, so the
session's turn logic is the same as for text:

- ``session.start`` goes out as version 2 with the audio offer; the side's ``session.ready`` must
  pick an offered encoding and sample rate (else ``bad_message``);
- ``turn.request``: the caller's words (from the user side, which stays text) are spoken by the
  local TTS engine and sent first, as binary frames of stream ``turn``, through the caller's phone
  line when its perturbation has one (``telephone``, ``snr``: the agent hears the line; the
  timeline keeps each side's audio as it was sent, so timing is never the line's); the request then carries
  the audio's place on the media timeline, and the words only when the side asked for text;
- the side's binary frames until its ``turn.response`` are its speech of that turn; the response
  says how many it sent (checked) and, as ``text``, what they say; with a recogniser the turn's
  audio is transcribed then (in a worker process) and the response handed on carries it as
  ``heard``: what the caller is given to answer (``engine.session.conversation``);
- tool calls, ``session.end`` and errors are as in version 1, with ``v: 2``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from websockets.exceptions import ConnectionClosed

from engine.core.caller import CallerStyle, Perturbation
from engine.core.protocol import AUDIO_PROTOCOL_VERSION, ProtocolError
from engine.session.sides.link import SideFailure, SideLink, how, other_role
from engine.session.voice.asr import Recognizer, hear
from engine.session.voice.cache import VoiceCache
from engine.session.voice.frames import AudioFrame, FrameError, pack, split, unpack
from engine.session.voice.pcm import speech_slice
from engine.session.voice.perturb import perturb, seed_of
from engine.session.voice.schedule import plan_interjections
from engine.session.voice.timeline import Timeline, TimelineError, Utterance
from engine.session.voice.tts import Synthesizer, TTSError
from engine.session.voice.vad import CachedVAD, speech_segments

ENCODING = "pcm_s16le"
SAMPLE_RATES = (8000, 16000, 22050, 24000, 44100, 48000)


@dataclass(frozen=True)
class VoiceConfig:
    """Run-level audio settings: ``tts`` speaks the caller; ``sample_rates`` offered (Hz);
    ``frame_ms`` of the frames the engine sends; ``max_frame_ms`` the most a frame may carry;
    ``recognizer`` (optional) transcribes each agent turn's audio as the turn ends, its
    transcripts kept in ``cache`` (optional; ``engine.session.voice.cache``)."""

    tts: Synthesizer
    sample_rates: tuple[int, ...] = SAMPLE_RATES
    frame_ms: int = 100
    max_frame_ms: int = 1000
    recognizer: Recognizer | None = None
    cache: VoiceCache | None = None
    #: The caller's speech as its phone line carries it to the agent, behind the voice cache
    #: (``engine.session.voice.run.VoiceRun.call``); None: no line, or no cache (the link then
    #: applies the caller's line to ``tts``'s samples itself: the same samples).
    line_tts: Synthesizer | None = None

    def offer(self) -> dict[str, Any]:
        """The ``audio`` field of ``session.start``."""
        return {
            "encodings": [ENCODING],
            "sample_rates": list(self.sample_rates),
            "channels": 1,
            "max_frame_ms": self.max_frame_ms,
        }


@dataclass
class VoiceCall:
    """One session's audio: ``limit_s`` bounds media time (the scenario's max duration);
    ``timeline`` exists once the side has picked a format; ``tts_s`` is the wall time spent
    synthesising the caller; ``asr_errors`` the recogniser's failures (one line each; the turn is
    then not transcribed)."""

    config: VoiceConfig
    limit_s: float
    timeline: Timeline | None = None
    text_hint: bool = False
    tts_s: float = 0.0
    asr_errors: list[str] = field(default_factory=list)
    link: AudioLink | None = field(default=None, repr=False)
    #: The session's caller (``engine.core.caller``): barge-ins, backchannels, the line.
    caller: CallerStyle = field(default_factory=CallerStyle)
    #: Agent turns the caller barged into, and the backchannels it said (by agent turn).
    barged: list[int] = field(default_factory=list)
    backchannels: list[int] = field(default_factory=list)
    #: The caller synthesiser's name with the whole perturbation (``espeak-ng:en-us+f3[tel+snr10]``;
    #: None: ``config.tts``'s): ``config.tts`` speaks only the caller's manner, the line is the link's.
    tts_name: str | None = None

    @property
    def line(self) -> Perturbation | None:
        """The phone line's part of the caller's perturbation (None: a clean line)."""
        change = self.caller.perturbation
        return None if change is None or change.line.clean else change.line

    def wrap(self, link: SideLink) -> SideLink:
        """The audio link replacing the agent's text link (same connection, ids and budget)."""
        self.link = AudioLink(link, self)
        return self.link


class AudioLink(SideLink):
    """A :class:`SideLink` speaking protocol version 2 for ``call``."""

    version = AUDIO_PROTOCOL_VERSION

    def __init__(self, link: SideLink, call: VoiceCall):
        super().__init__(link.role, link.uri, link.ws)
        self.ids, self.traffic, self.engine_time_s = link.ids, link.traffic, link.engine_time_s
        self.call = call
        self.seq_out = 0
        self.seq_in = 0
        self.current: Utterance | None = None  # the side's utterance of the turn in progress
        self.start_id: str | None = None

    async def send(self, message_type: str, **fields: Any) -> str:
        if message_type == "session.start":
            fields["audio"] = self.call.config.offer()
            self.start_id = await super().send(message_type, **fields)
            return self.start_id
        if message_type == "turn.request":
            return await self._turn_request(fields)
        return await super().send(message_type, **fields)

    async def _turn_request(self, fields: dict[str, Any]) -> str:
        call, timeline = self.call, self.call.timeline
        assert timeline is not None, "turn.request before session.ready"
        turn, words = int(fields["turn"]), fields.get("utterance") or ""
        if turn > 0xFFFF:
            raise SideFailure("error", f"audio sessions have at most 65536 turns (turn {turn})")
        pcm, carried = await self._synthesize(words)
        plan = plan_interjections(call.caller, timeline.last("agent"), bool(pcm))
        audio = None
        # each caller utterance on the timeline as the caller said it, and its samples as the
        # line carries them to the agent (the same without a line)
        sent: list[tuple[Utterance, bytes]] = []
        try:
            if plan.backchannel is not None:
                word, at_ms = plan.backchannel
                said, heard = await self._synthesize(word)
                if said:
                    sent.append((timeline.caller(turn, said, word, at_ms, kind="backchannel"), heard))
                    call.backchannels.append(plan.agent_turn)
            if pcm:
                sent.append((timeline.caller(turn, pcm, words, plan.barge_in_ms), carried))
                if plan.barge_in_ms is not None:
                    call.barged.append(plan.agent_turn)
        except TimelineError as err:
            raise SideFailure("timeout", f"media time: {err}") from None
        frames_sent = 0
        for utt, samples in sent:
            frames = split(
                samples, timeline.rate, call.config.frame_ms, turn, self.seq_out, int(utt.start_ms or 0)
            )
            for frame in frames:
                await self._send_binary(pack(frame))
            self.seq_out += len(frames)
            utt.frames = len(frames)
            frames_sent += len(frames)
        if sent:
            audio = {
                "stream": turn,
                "frames": frames_sent,
                "start_ms": int(sent[0][0].start_ms or 0),
                "end_ms": round(sent[-1][0].end_ms or 0),
            }
        fields["utterance"] = words if call.text_hint and words else None
        msg_id = await super().send("turn.request", **fields, audio=audio)
        self.current = timeline.agent_turn(turn, time.perf_counter())
        return msg_id

    async def _synthesize(self, words: str) -> tuple[bytes, bytes]:
        """The caller's speech of ``words`` cut to its speech (empty for none), and the same
        stretch as its phone line carries it to the agent (``config.line_tts``; the speech itself
        without a line), sample for sample: the timeline keeps the first, so the caller's speech
        (and the agent's latency after it) is timed without the line's noise."""
        call, timeline = self.call, self.call.timeline
        assert timeline is not None
        rate, line_tts = timeline.rate, call.config.line_tts
        t0 = time.perf_counter()
        try:
            pcm = await call.config.tts.synthesize(words, rate) if words.strip() else b""
            cut = speech_slice(pcm, rate)  # the caller's audio ends where its speech ends
            said = carried = b"" if cut is None else pcm[cut]
            if cut is not None and line_tts is not None:  # cached: the line's samples read back
                carried = (await line_tts.synthesize(words, rate))[cut]
            elif cut is not None and call.line is not None:
                carried = (await perturb(pcm, rate, call.line, seed_of(words)))[cut]
            carried = carried[: len(said)].ljust(len(said), b"\0")
        except TTSError as err:
            # the engine's own synthesis of the caller (never the agent's failure)
            raise SideFailure("error", f"the caller's text-to-speech failed: {err}", "engine") from None
        call.tts_s += time.perf_counter() - t0
        return said, carried

    async def _send_binary(self, data: bytes) -> None:
        if self.traffic is not None:
            self.traffic.charge(self.role, len(data), other_role(self.role))  # the caller's speech
        try:
            await self.ws.send(data)
        except ConnectionClosed as err:
            raise self.failure("error", f"{self.role} side disconnected: {err}", how(err)) from None

    def binary(self, raw: bytes) -> bool:
        """One audio frame of the side's current turn: checked and placed on the timeline."""
        now = time.perf_counter()
        timeline, utt = self.call.timeline, self.current
        if timeline is None or utt is None:
            raise ProtocolError("unexpected_message", "audio frame outside a turn")
        try:
            frame = unpack(raw, timeline.rate, self.call.config.max_frame_ms)
        except FrameError as err:
            raise ProtocolError("bad_message", str(err)) from None
        self._check(frame, utt)
        try:
            timeline.agent_frame(utt, frame.t_ms, frame.pcm, now)
        except TimelineError as err:
            raise ProtocolError("bad_message", str(err)) from None
        self.seq_in += 1
        return True

    def _check(self, frame: AudioFrame, utt: Utterance) -> None:
        if frame.seq != self.seq_in:
            raise ProtocolError("bad_message", f"audio frame seq {frame.seq}, expected {self.seq_in}")
        if frame.stream != utt.turn:
            raise ProtocolError(
                "unexpected_message", f"audio frame of stream {frame.stream} during turn {utt.turn}"
            )

    async def receive(self, timeout_s: float) -> dict[str, Any]:
        msg = await super().receive(timeout_s)
        try:
            if msg["type"] == "session.ready":
                self._ready(msg)
            elif msg["type"] == "turn.response":
                utt = self._response(msg)
                if utt is not None and self.call.config.recognizer is not None:
                    heard = await self._hear(utt)
                    if heard is not None:
                        msg = {**msg, "heard": heard}
        except ProtocolError as err:
            await self.fail(err.code, err.message, msg.get("id"))
            raise SideFailure("error", f"{self.role} side broke the protocol: {err}") from None
        return msg

    async def _hear(self, utt: Utterance) -> str | None:
        """Transcribe ``utt`` (its ``heard``); None when the recogniser failed (recorded)."""
        recognizer = self.call.config.recognizer
        assert recognizer is not None
        line = self.call.line
        try:
            pcm, digest = utt.audio()
            cache = self.call.config.cache
            if line is not None:  # the agent's speech as the line carries it
                # heard once as sent too: whether the audio carries the agent's words is the
                # agent's; how it survives the line (WER, entities, what the caller answers) ours
                utt.heard_clean = await hear(recognizer, pcm, utt.rate, cache, digest)
                pcm = await perturb(pcm, utt.rate, line, seed_of(f"agent turn {utt.turn}"))
                utt.heard = await hear(recognizer, pcm, utt.rate, cache)
            else:
                utt.heard = await hear(recognizer, pcm, utt.rate, cache, digest)
        except (RuntimeError, OSError) as err:  # a broken recogniser is the engine's, never the agent's
            self.call.asr_errors.append(f"turn {utt.turn}: {err}")
            return None
        return utt.heard

    def _ready(self, msg: dict[str, Any]) -> None:
        audio, config = msg["audio"], self.call.config
        if audio["encoding"] != ENCODING:
            raise ProtocolError(
                "bad_message", f"session.ready: audio encoding {audio['encoding']!r} not offered"
            )
        if audio["sample_rate"] not in config.sample_rates:
            raise ProtocolError(
                "bad_message",
                f"session.ready: sample_rate {audio['sample_rate']} is not one of {config.sample_rates}",
            )
        self.call.text_hint = bool(audio.get("text", False))
        finder = speech_segments if config.cache is None else CachedVAD(config.cache)
        self.call.timeline = Timeline(audio["sample_rate"], 1000.0 * self.call.limit_s, finder=finder)

    def _response(self, msg: dict[str, Any]) -> Utterance | None:
        utt = self.current
        if utt is None:
            return None
        if msg["audio"]["frames"] != utt.frames:
            raise ProtocolError(
                "bad_message",
                f"turn.response says {msg['audio']['frames']} audio frames, "
                f"{utt.frames} arrived in turn {utt.turn}",
            )
        utt.text = msg["text"]
        self.current = None
        return utt
