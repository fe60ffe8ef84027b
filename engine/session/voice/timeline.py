"""The media timeline of one audio session: where each side's speech sits, in ms of session time.

Media time is the session's own clock, shared by the engine and the voice side: 0 is the start of
the session, and a frame's ``t_ms`` says where its first sample plays. In a turn-based session
nobody plays audio in real time, so media time is not wall time: the engine places each caller
utterance right after all audio so far, and a side places its reply where it says it starts
(``t_ms``), typically the end of the caller's audio plus the time it took to answer. A side's
frames within a turn never overlap each other: a frame stamped earlier than the end of the
side's audio so far is appended at that end; a later one leaves silence before it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from engine.session.voice.cache import audio_digest
from engine.session.voice.pcm import WAV_HEADER_BYTES, duration_ms, wav_header
from engine.session.voice.vad import CachedVAD, Segment, speech_segments


class TimelineError(ValueError):
    """Audio that cannot be placed (past the session's length)."""


@dataclass
class Utterance:
    """One side's audio in one turn. ``role`` user (the caller, voiced by the engine) or agent;
    ``turn`` the stream number; ``start_ms`` media time of its first sample (None before any);
    ``pcm`` the samples from ``start_ms`` on; ``text`` what the side says it said; ``frames``
    received or sent; ``heard`` what the run's recogniser heard in it (None: not transcribed);
    ``requested_at`` / ``first_audio_at``: the engine's clock (seconds, a
    monotonic counter) when the turn was handed over and when its first frame arrived;
    ``finder`` finds its speech (default :func:`engine.session.voice.vad.speech_segments`)."""

    role: str
    turn: int
    rate: int
    start_ms: float | None = None
    pcm: bytearray = field(default_factory=bytearray)
    text: str = ""
    frames: int = 0
    requested_at: float | None = None
    first_audio_at: float | None = None
    heard: str | None = None
    #: What the recogniser heard of the side's own audio when ``heard`` is of a perturbed line
    #: (None otherwise): the gate ``speech_matches_text`` is judged on it.
    heard_clean: str | None = None
    #: ``turn`` (the side's words of the turn), or ``backchannel`` (a caller's "mm-hmm" during the
    #: agent's speech, sent with the caller's next turn: ``engine.session.voice.link``).
    kind: str = "turn"
    _segments: list[Segment] | None = field(default=None, repr=False)
    _digest: str | None = field(default=None, repr=False, compare=False)
    finder: Callable[[bytes, int], list[Segment]] = field(default=speech_segments, repr=False, compare=False)

    @property
    def end_ms(self) -> float | None:
        """Media time just after the last sample (None when it has no audio)."""
        if self.start_ms is None:
            return None
        return self.start_ms + 1000.0 * (len(self.pcm) // 2) / self.rate

    def place(self, t_ms: float, pcm: bytes, floor_ms: float = 0.0) -> None:
        """Add ``pcm`` stamped ``t_ms``: at its stamp (not before ``floor_ms`` for the first
        frame), else after the audio so far, with silence filling any gap."""
        self._segments = self._digest = None
        if self.start_ms is None:
            self.start_ms = max(float(t_ms), floor_ms)
        else:
            gap = round((t_ms - (self.end_ms or 0.0)) * self.rate / 1000.0)
            if gap > 0:
                self.pcm.extend(bytes(2 * gap))
        self.pcm.extend(pcm)
        self.frames += 1

    def audio(self) -> tuple[bytes, str]:
        """``(samples, SHA-256 hex)`` of its audio so far; the digest is computed once (until more
        is placed): the recogniser's and the voice activity detector's cache keys share it. Only
        the digest is kept (the samples are copied out on each call, a fraction of hashing them)."""
        pcm = bytes(self.pcm)
        if self._digest is None:
            self._digest = audio_digest(pcm)
        return pcm, self._digest

    def segments(self) -> list[Segment]:
        """Its speech on the media timeline as ``[(start_ms, end_ms), ...]``, found by voice
        activity detection (engine.session.voice.vad.speech_segments); empty when silent."""
        if self._segments is None:
            start = self.start_ms or 0.0
            found: list[Segment] = []
            if self.start_ms is not None and isinstance(self.finder, CachedVAD):
                pcm, digest = self.audio()
                found = self.finder(pcm, self.rate, digest)
            elif self.start_ms is not None:
                found = self.finder(bytes(self.pcm), self.rate)
            self._segments = [(start + a, start + b) for a, b in found]
        return self._segments

    def speech(self) -> tuple[float, float] | None:
        """``(start_ms, end_ms)`` of its speech on the media timeline, first segment's start to
        the last one's end (:meth:`segments`); None when it holds none."""
        segs = self.segments()
        return (segs[0][0], segs[-1][1]) if segs else None


@dataclass
class Timeline:
    """The utterances of a session in order, at ``rate`` Hz; ``limit_ms`` bounds media time;
    ``finder`` finds each utterance's speech (:attr:`Utterance.finder`)."""

    rate: int
    limit_ms: float
    utterances: list[Utterance] = field(default_factory=list)
    finder: Callable[[bytes, int], list[Segment]] = field(default=speech_segments, repr=False, compare=False)

    @property
    def end_ms(self) -> float:
        """Media time just after the last sample of any side (0 when silent so far)."""
        return max((u.end_ms for u in self.utterances if u.end_ms is not None), default=0.0)

    def caller(
        self, turn: int, pcm: bytes, text: str, at_ms: float | None = None, kind: str = "turn"
    ) -> Utterance:
        """Place the caller's utterance of ``turn`` right after all audio so far, or at ``at_ms``
        (a barge-in or a backchannel, into the agent's speech) but never before the caller's own
        earlier audio ends."""
        utt = Utterance("user", turn, self.rate, text=text, kind=kind, finder=self.finder)
        if pcm:
            start = self.end_ms
            if at_ms is not None:
                own = max((u.end_ms or 0.0 for u in self.utterances if u.role == "user"), default=0.0)
                start = min(start, max(float(at_ms), own))
            if start + duration_ms(pcm, self.rate) > self.limit_ms:
                raise TimelineError(f"caller audio would pass the session's {self.limit_ms / 1000:g} s")
            utt.place(start, pcm)
            utt.frames = 0  # counted as they are sent
        self.utterances.append(utt)
        return utt

    def last(self, role: str) -> Utterance | None:
        """The latest utterance of ``role`` (None before any)."""
        return next((u for u in reversed(self.utterances) if u.role == role), None)

    def agent_turn(self, turn: int, requested_at: float) -> Utterance:
        """Open the side's utterance of ``turn``, handed over at ``requested_at``."""
        utt = Utterance("agent", turn, self.rate, requested_at=requested_at, finder=self.finder)
        self.utterances.append(utt)
        return utt

    def agent_frame(self, utt: Utterance, t_ms: int, pcm: bytes, now: float) -> None:
        """Add one frame of the side's ``utt``, arrived at ``now``. Its first frame may start
        before the caller's audio ends (talking over the caller) but not before the side's own
        earlier audio ends. Raises TimelineError past ``limit_ms``."""
        if utt.first_audio_at is None:
            utt.first_audio_at = now
        floor = 0.0  # only the first frame is placed against the side's earlier audio
        if utt.start_ms is None:
            floor = max(
                (u.end_ms or 0.0 for u in self.utterances if u.role == "agent" and u is not utt), default=0.0
            )
        at = max(float(t_ms), floor) if utt.start_ms is None else max(float(t_ms), utt.end_ms or 0.0)
        if at + duration_ms(pcm, self.rate) > self.limit_ms:
            raise TimelineError(
                f"audio frame at media time {t_ms} ms would pass the session's {self.limit_ms / 1000:g} s"
            )
        utt.place(t_ms, pcm, floor)

    def track(self, role: str) -> bytes:
        """One side's samples over the whole timeline (silence where it does not speak)."""
        return bytes(self._fill(role, 0))

    def wav(self, role: str) -> bytearray:
        """:meth:`track` as a WAV file (``engine.session.voice.pcm.wav_bytes`` of it, byte for
        byte), built in one buffer: a session's two tracks are megabytes, each copy of them costs."""
        out = self._fill(role, WAV_HEADER_BYTES)
        out[:WAV_HEADER_BYTES] = wav_header(len(out) - WAV_HEADER_BYTES, self.rate)
        return out

    def _fill(self, role: str, offset: int) -> bytearray:
        total = round(self.end_ms * self.rate / 1000.0)
        out = bytearray(offset + 2 * total)
        for u in self.utterances:
            if u.role != role or u.start_ms is None:
                continue
            at = offset + 2 * round(u.start_ms * self.rate / 1000.0)
            size = max(0, min(len(u.pcm), len(out) - at))
            out[at : at + size] = memoryview(u.pcm)[:size]
        return out
