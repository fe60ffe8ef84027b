"""What ``evalctl run --voice`` adds to a run: audio sessions with the agent, their artifacts.

The user side stays a text side (replay, openai or external v1); the engine speaks its words with
the local TTS engine. A built-in agent (``replay``, ``openai:MODEL``) is served as a voice side
(``engine.session.voice.side``); an external agent (``ws://``) is offered protocol version 2. After each
session the engine writes, beside the usual results:

- ``audio/user.wav`` and ``audio/agent.wav``: each side's speech on the session's media timeline
  (mono, 16-bit, at the agreed rate; silence where the side does not speak, so the two align);
- ``voice.json``: every utterance's place on the timeline and text, the per-turn metrics and the
  session's (``engine.session.voice.metrics``); the session's summary is also ``metrics.json`` ``voice``.

The transcript (``transcript.jsonl``) holds each side's own text, as in text runs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from engine.core.model import Scenario
from engine.core.records.voice import VoiceSummary
from engine.session.backends import BackendFactory, BackendSpec
from engine.session.backends.registry import scheme_of
from engine.session.voice.asr import default_recognizer
from engine.session.voice.cache import VoiceCache, default_cache
from engine.session.voice.link import VoiceCall, VoiceConfig
from engine.session.voice.metrics import session_metrics, turn_metrics
from engine.session.voice.pcm import wav_bytes
from engine.session.voice.side import VoiceStyle, voice_agent_side
from engine.session.voice.tts import Synthesizer, TTSError, cached, local_tts
from engine.util.artifacts import write_bytes, write_json
from engine.util.errors import UsageError

VOICE_JSON = "voice.json"


@dataclass(frozen=True)
class VoiceRun:
    """The audio settings of one run: ``config`` for the engine's end, ``style`` for a built-in
    voice agent."""

    config: VoiceConfig
    style: VoiceStyle

    @classmethod
    def create(
        cls,
        tts: Synthesizer | None = None,
        delay_ms: float = 0.0,
        language: str = "en",
        cache: VoiceCache | Literal["default"] | None = "default",
    ) -> VoiceRun:
        """Settings with ``tts`` (default: the local engine in the espeak-ng voice of ``language``,
        a BCP 47 code) and the default recogniser for ``language``
        (``engine.session.voice.asr.default_recognizer``: ``$EVALCTL_ASR``, else PocketSphinx for
        English); both behind ``cache`` (default: the user's voice cache,
        ``engine.session.voice.cache.default_cache``, None when ``$EVALCTL_VOICE_CACHE=off``; None:
        no cache) where they declare an identity. Raises UsageError when no TTS engine (or voice
        for the language) is installed or the recogniser is misnamed."""
        if tts is None:
            try:
                tts = local_tts(language)
            except TTSError as err:
                raise UsageError(str(err)) from None
        recognizer = default_recognizer(language)
        store = default_cache() if cache == "default" else cache
        tts = cached(tts, store)
        config = VoiceConfig(tts, recognizer=recognizer, cache=store)
        return cls(config, VoiceStyle(tts, delay_ms=delay_ms))

    @property
    def cache(self) -> VoiceCache | None:
        """The run's voice cache (None: off); its ``counts`` are this process's hits and misses."""
        return self.config.cache

    def agent_side(self, spec: BackendSpec, factory: BackendFactory) -> AbstractAsyncContextManager[str]:
        """Serve a built-in agent as a voice side; yields its URI. A model backend is given the
        caller's words as text (it has no ears)."""
        style = self.style
        if not scheme_of(spec).gold_side:
            style = dataclasses.replace(style, listen_text=True)
        return voice_agent_side(factory, style)

    def call(self, scenario: Scenario) -> VoiceCall:
        """A new session's audio state (media time bounded by the scenario's max duration)."""
        return VoiceCall(self.config, limit_s=scenario.max_duration)

    def artifacts(self, call: VoiceCall) -> Callable[[Path], VoiceSummary | None]:
        """The writer of ``call``'s artifacts into a scenario directory; returns the session's
        voice summary (``engine.results.scoring_stage.finish_session``'s ``voice`` hook)."""

        def write(sdir: Path) -> VoiceSummary | None:
            return write_voice_artifacts(sdir, call)

        return write


def write_voice_artifacts(sdir: Path, call: VoiceCall) -> VoiceSummary | None:
    """Write ``audio/*.wav`` and ``voice.json`` for ``call`` into ``sdir``; returns the session's
    voice summary (None when the session never agreed on audio). The agent's turns were
    transcribed during the session (``engine.session.voice.link``)."""
    timeline = call.timeline
    if timeline is None:
        write_json(sdir / VOICE_JSON, {"error": "no audio session (the agent side never got ready)"})
        return None
    recognizer = call.config.recognizer
    turns = turn_metrics(timeline)
    summary = session_metrics(
        timeline,
        turns,
        call.config.tts.name,
        call.tts_s,
        recognizer.name if recognizer else None,
        len(call.asr_errors),
    )
    for role in ("user", "agent"):
        write_bytes(sdir / "audio" / f"{role}.wav", wav_bytes(timeline.track(role), timeline.rate))
    utterances = [
        {
            "role": u.role,
            "turn": u.turn,
            "start_ms": None if u.start_ms is None else round(u.start_ms, 1),
            "end_ms": None if u.end_ms is None else round(u.end_ms, 1),
            "speech_ms": None if (s := u.speech()) is None else [round(s[0], 1), round(s[1], 1)],
            "segments_ms": [[round(a, 1), round(b, 1)] for a, b in u.segments()],
            "frames": u.frames,
            "text": u.text,
        }
        for u in timeline.utterances
    ]
    doc = {"summary": summary.to_json(), "turns": turns, "utterances": utterances}
    if call.asr_errors:
        doc["asr_errors"] = call.asr_errors
    write_json(sdir / VOICE_JSON, doc)
    return summary
