"""``metrics.json`` ``voice``: the voice summary of one audio session (``evalctl run --voice``).

Built by ``engine.session.voice.metrics.session_metrics`` from the session's media timeline and written
both as ``metrics.json`` ``voice`` and as ``voice.json`` ``summary``. Times are milliseconds
rounded to 0.1 ms (``tts_s`` seconds), on the media timeline except ``ttfa_ms`` (the engine's
clock); ``wer`` is a fraction (edits / reference words over the session).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine.core.records.fields import RecordError, exact_keys, get

_MS = (int, float)
_MS_OR_NONE = (int, float, None)


@dataclass(frozen=True)
class TurnStats:
    """One per-turn measure over the session's agent turns that have it: ``count``, then the mean,
    the median (``p50``), ``p90`` (nearest rank), ``max`` and ``p95`` in ms; all None when
    ``count`` is 0. ``p95`` is written since the waveform timing (an older record has none: it
    reads as None)."""

    count: int
    mean: float | None
    p50: float | None
    p90: float | None
    max: float | None
    p95: float | None = None

    FIELDS = ("count", "mean", "p50", "p90", "max", "p95")

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.FIELDS}

    @classmethod
    def from_json(cls, body: Any, what: str) -> TurnStats:
        if not isinstance(body, dict):
            raise RecordError(f"{what}: not an object")
        exact_keys(body, cls.FIELDS[:-1], what, ("p95",))
        return cls(
            get(body, "count", int),
            get(body, "mean", *_MS_OR_NONE),
            get(body, "p50", *_MS_OR_NONE),
            get(body, "p90", *_MS_OR_NONE),
            get(body, "max", *_MS_OR_NONE),
            get(body, "p95", *_MS_OR_NONE) if "p95" in body else None,
        )


def _plain(cls: Any, body: Any, what: str) -> Any:
    """A flat record of ints, floats and strings (its dataclass fields, all required)."""
    if not isinstance(body, Mapping):
        raise RecordError(f"{what}: not an object")
    names = tuple(cls.__dataclass_fields__)
    exact_keys(body, names, what)
    kinds = {"int": (int,), "float": _MS, "str": (str,)}
    values: dict[str, Any] = {}
    for name in names:
        kind = cls.__dataclass_fields__[name].type
        if kind == "tuple[float, ...]":
            items = get(body, name, list)
            if not all(isinstance(v, _MS) and not isinstance(v, bool) for v in items):
                raise RecordError(f"{what}.{name}: not a list of numbers")
            values[name] = tuple(items)
        elif kind == "TurnStats":
            values[name] = TurnStats.from_json(body[name], f"{what}.{name}")
        else:
            values[name] = get(body, name, *kinds[kind])
    return cls(**values)


@dataclass(frozen=True)
class Timing:
    """Turn-taking read from the waveform (voice activity detection): ``vad`` the detector
    (``webrtcvad``, or ``energy`` without it); ``stamp_diff_ms`` the per-turn difference between
    the measured response latency and the one the agent's stamps give; ``turns_talking_over``
    agent turns that started before the caller finished; ``barge_ins`` caller speech starting
    while the agent spoke, ``barge_ins_yielded`` those the agent stopped for within 1 s;
    ``long_silences`` stretches of 3 s or more where nobody spoke, the longest
    ``longest_silence_ms``; ``turn_latency_ms`` / ``turn_ttfa_ms`` every turn's response latency
    and time to first audio (the run's percentiles pool them)."""

    vad: str
    stamp_diff_ms: TurnStats
    turns_talking_over: int
    barge_ins: int
    barge_ins_yielded: int
    long_silences: int
    longest_silence_ms: float
    turn_latency_ms: tuple[float, ...] = ()
    turn_ttfa_ms: tuple[float, ...] = ()

    def to_json(self) -> dict[str, Any]:
        body = {k: getattr(self, k) for k in self.__dataclass_fields__}
        body["stamp_diff_ms"] = self.stamp_diff_ms.to_json()
        body["turn_latency_ms"], body["turn_ttfa_ms"] = list(self.turn_latency_ms), list(self.turn_ttfa_ms)
        return body

    @classmethod
    def from_json(cls, body: Any) -> Timing:
        return _plain(cls, body, "voice.timing")


@dataclass(frozen=True)
class Hearing:
    """What the recogniser heard of the agent: ``turns`` agent turns with text, ``transcribed``
    those transcribed, ``matched`` those whose transcript is nearer their own text than other
    lines (``engine.session.voice.metrics.speech_match``), ``silent`` those with text and no
    speech; ``words`` the reference words of the transcribed turns, ``matched_words`` those of
    the matched turns (a long line weighs more than "Goodbye!"); ``entities`` key entities in the
    agent's text (codes, names, amounts, dates), ``entities_heard`` those in the transcript as
    said; ``errors`` turns the recogniser failed on."""

    turns: int
    transcribed: int
    matched: int
    silent: int
    words: int
    matched_words: int
    entities: int
    entities_heard: int
    errors: int

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    @classmethod
    def from_json(cls, body: Any) -> Hearing:
        return _plain(cls, body, "voice.hearing")


@dataclass(frozen=True)
class VoiceSummary:
    """The voice measures of one audio session.

    ``sample_rate`` Hz of the agreed audio; ``media_ms`` the timeline's length;
    ``agent_turns_with_audio`` agent turns that sent at least one frame; ``latency_ms`` end of the
    caller's speech to start of the agent's; ``ttfa_ms`` turn handed over to the agent's first
    frame; ``overlap_ms`` both sides speaking at once (summed), over ``turns_with_overlap`` turns;
    ``caller_speech_ms`` / ``agent_speech_ms`` each side's speech; ``wer`` the agent's audio
    against its own text through the run's recogniser (None without one), ``wer_turns`` the turns
    scored (written only when some were); ``tts`` the caller's TTS engine, ``tts_s`` the seconds
    spent synthesising; ``recognizer`` its name or None; ``timing`` (:class:`Timing`) and
    ``hearing`` (:class:`Hearing`, with a recogniser) are written since the waveform timing.
    """

    sample_rate: int
    media_ms: float
    agent_turns_with_audio: int
    latency_ms: TurnStats
    ttfa_ms: TurnStats
    overlap_ms: float
    turns_with_overlap: int
    caller_speech_ms: float
    agent_speech_ms: float
    wer: float | None
    tts: str
    tts_s: float
    recognizer: str | None
    wer_turns: int | None = None
    timing: Timing | None = None
    hearing: Hearing | None = None

    _KEYS = (
        "sample_rate",
        "media_ms",
        "agent_turns_with_audio",
        "latency_ms",
        "ttfa_ms",
        "overlap_ms",
        "turns_with_overlap",
        "caller_speech_ms",
        "agent_speech_ms",
        "wer",
        "tts",
        "tts_s",
        "recognizer",
    )

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "sample_rate": self.sample_rate,
            "media_ms": self.media_ms,
            "agent_turns_with_audio": self.agent_turns_with_audio,
            "latency_ms": self.latency_ms.to_json(),
            "ttfa_ms": self.ttfa_ms.to_json(),
            "overlap_ms": self.overlap_ms,
            "turns_with_overlap": self.turns_with_overlap,
            "caller_speech_ms": self.caller_speech_ms,
            "agent_speech_ms": self.agent_speech_ms,
            "wer": self.wer,
        }
        if self.wer_turns is not None:
            body["wer_turns"] = self.wer_turns
        body.update(tts=self.tts, tts_s=self.tts_s, recognizer=self.recognizer)
        if self.timing is not None:
            body["timing"] = self.timing.to_json()
        if self.hearing is not None:
            body["hearing"] = self.hearing.to_json()
        return body

    @classmethod
    def from_json(cls, body: Any) -> VoiceSummary:
        """Parse the body :meth:`to_json` writes; raises RecordError for anything else."""
        if not isinstance(body, Mapping):
            raise RecordError("voice: not an object")
        exact_keys(body, cls._KEYS, "voice", ("wer_turns", "timing", "hearing"))
        return cls(
            sample_rate=get(body, "sample_rate", int),
            media_ms=get(body, "media_ms", *_MS),
            agent_turns_with_audio=get(body, "agent_turns_with_audio", int),
            latency_ms=TurnStats.from_json(body["latency_ms"], "voice.latency_ms"),
            ttfa_ms=TurnStats.from_json(body["ttfa_ms"], "voice.ttfa_ms"),
            overlap_ms=get(body, "overlap_ms", *_MS),
            turns_with_overlap=get(body, "turns_with_overlap", int),
            caller_speech_ms=get(body, "caller_speech_ms", *_MS),
            agent_speech_ms=get(body, "agent_speech_ms", *_MS),
            wer=get(body, "wer", *_MS_OR_NONE),
            tts=get(body, "tts", str),
            tts_s=get(body, "tts_s", *_MS),
            recognizer=get(body, "recognizer", str, None),
            wer_turns=get(body, "wer_turns", int) if "wer_turns" in body else None,
            timing=Timing.from_json(body["timing"]) if "timing" in body else None,
            hearing=Hearing.from_json(body["hearing"]) if "hearing" in body else None,
        )
