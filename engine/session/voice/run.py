"""What ``evalctl run --voice`` adds to a run: audio sessions with the agent, their artifacts.

The user side stays a text side (replay, openai or external v1); the engine speaks its words with
the local TTS engine. A built-in agent (``replay``, ``openai:MODEL``) is served as a voice side
(``engine.session.voice.side``); an external agent (``ws://``) is offered protocol version 2. After each
session the engine writes, beside the usual results:

- ``audio/user.wav`` and ``audio/agent.wav``: each side's speech on the session's media timeline
  as the side sent it, before any perturbed line (mono, 16-bit, at the agreed rate; silence where
  the side does not speak, so the two align); the timing figures are read from these;
- ``voice.json``: every utterance's place on the timeline and text, the per-turn metrics and the
  session's (``engine.session.voice.metrics``); the session's summary is also ``metrics.json`` ``voice``.

The transcript (``transcript.jsonl``) holds each side's own text, as in text runs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Literal

from engine.core.caller import CallerStyle, dealt_voice, parse_perturbation
from engine.core.model import Scenario
from engine.core.records.voice import VoiceSummary
from engine.session.backends import BackendFactory, BackendSpec
from engine.session.backends.registry import scheme_of
from engine.session.voice.asr import default_recognizer
from engine.session.voice.cache import VoiceCache, default_cache
from engine.session.voice.link import VoiceCall, VoiceConfig
from engine.session.voice.metrics import session_metrics, turn_metrics
from engine.session.voice.perturb import Perturbed, caller_tts, voice_problem
from engine.session.voice.side import VoiceStyle, voice_agent_side
from engine.session.voice.tts import CachedSynthesizer, Synthesizer, TTSError, cached, local_tts
from engine.util.artifacts import FolderWrite
from engine.util.errors import UsageError

VOICE_JSON = "voice.json"


@dataclass(frozen=True)
class VoiceRun:
    """The audio settings of one run: ``config`` for the engine's end, ``style`` for a built-in
    voice agent; ``caller`` the run's caller options (``--perturb``; a scenario's ``caller:`` block
    overrides them) and ``voices`` the ``--caller-voice`` list dealt across the scenarios."""

    config: VoiceConfig
    style: VoiceStyle
    caller: CallerStyle = field(default_factory=CallerStyle)
    voices: tuple[str, ...] = ()

    @classmethod
    def create(
        cls,
        tts: Synthesizer | None = None,
        delay_ms: float = 0.0,
        language: str = "en",
        voices: Sequence[str] = (),
        perturb: str | None = None,
        cache: VoiceCache | Literal["default"] | None = "default",
    ) -> VoiceRun:
        """Settings with ``tts`` (default: the local engine in the espeak-ng voice of ``language``,
        a BCP 47 code) and the default recogniser for ``language``
        (``engine.session.voice.asr.default_recognizer``: ``$EVALCTL_ASR``, else PocketSphinx for
        English); the caller speaks in ``voices`` (dealt across the scenarios) with ``perturb``
        (``engine.core.caller`` grammar); synthesis and recognition behind ``cache`` (default: the
        user's voice cache, ``engine.session.voice.cache.default_cache``, None when
        ``$EVALCTL_VOICE_CACHE=off``; None: no cache) where they declare an identity. Raises
        UsageError when no TTS engine (or voice for the language) is installed, a caller voice is
        not espeak-ng's, ``perturb`` is not the grammar's or the recogniser is misnamed."""
        if tts is None:
            try:
                tts = local_tts(language)
            except TTSError as err:
                raise UsageError(str(err)) from None
        for voice in voices:
            problem = voice_problem(voice)
            if problem:
                raise UsageError(f"--caller-voice {voice}: {problem}")
        try:
            change = parse_perturbation(perturb) if perturb is not None else None
        except ValueError as err:
            raise UsageError(f"--perturb: {err}") from None
        recognizer = default_recognizer(language)
        store = default_cache() if cache == "default" else cache
        tts = cached(tts, store)
        return cls(
            VoiceConfig(tts, recognizer=recognizer, cache=store),
            VoiceStyle(tts, delay_ms=delay_ms),
            CallerStyle(perturbation=change),
            tuple(voices),
        )

    def caller_of(self, scenario: Scenario) -> CallerStyle:
        """The caller of ``scenario``: its ``caller:`` block over the run's options and its dealt
        voice."""
        base = dataclasses.replace(self.caller, voice=dealt_voice(self.voices, scenario.name))
        return base if scenario.caller is None else scenario.caller.over(base)

    def check_callers(self, scenarios: Sequence[Scenario]) -> None:
        """Raise UsageError (one line, naming the file) for the first scenario whose ``caller:``
        voice espeak-ng does not have: before any session runs."""
        checked = set(self.voices)
        for scenario in scenarios:
            voice = scenario.caller.voice if scenario.caller is not None else None
            if voice and voice not in checked:
                problem = voice_problem(voice)
                if problem:
                    raise UsageError(f"{scenario.source.file}: caller.voice {voice}: {problem}")
                checked.add(voice)

    @property
    def cache(self) -> VoiceCache | None:
        """The run's voice cache (None: off); its ``counts`` are this process's hits and misses."""
        return self.config.cache

    def agent_side(self, spec: BackendSpec, factory: BackendFactory) -> AbstractAsyncContextManager[str]:
        """Serve a built-in agent as a voice side; yields its URI. A model backend is given the
        caller's words as text (it has no ears); a backend that hears and speaks for itself
        (``voice_audio``: a ``pipecat:`` pipeline) is given the caller's audio and its own speech
        is sent (``engine.session.voice.listening``)."""
        style = self.style
        if scheme_of(spec).voice_audio:
            from engine.session.voice.listening import listening_agent_side

            return listening_agent_side(factory, style)
        if not scheme_of(spec).gold_side:
            style = dataclasses.replace(style, listen_text=True)
        return voice_agent_side(factory, style)

    def call(self, scenario: Scenario) -> VoiceCall:
        """A new session's audio state (media time bounded by the scenario's max duration), with
        the scenario's caller (:meth:`caller_of`): its voice and perturbation in the caller's
        synthesiser, the line part for the agent's speech as heard, its barge-ins and
        backchannels."""
        caller = self.caller_of(scenario)
        config, name = self.config, self.config.tts.name
        if caller.voice is not None or caller.perturbation is not None:
            base = config.tts.inner if isinstance(config.tts, CachedSynthesizer) else config.tts
            name = caller_tts(base, caller.voice, caller.perturbation).name  # voice, manner and line
            # the caller as it speaks (voice, speed, volume: on the timeline), and that speech
            # through its phone line (telephone, noise: what the agent is sent), both cached
            change = caller.perturbation
            tts = cached(caller_tts(base, caller.voice, change.manner if change else None), config.cache)
            line = change.line if change is not None and not change.line.clean else None
            line_tts = None
            if line is not None and config.cache is not None:
                line_tts = cached(Perturbed(tts, line), config.cache)
            config = dataclasses.replace(config, tts=tts, line_tts=line_tts)
        return VoiceCall(config, limit_s=scenario.max_duration, caller=caller, tts_name=name)

    def artifacts(self, call: VoiceCall) -> Callable[[FolderWrite], VoiceSummary | None]:
        """The writer of ``call``'s artifacts into a scenario directory's batch of writes; returns
        the session's voice summary (``engine.results.scoring_stage.finish_session``'s ``voice``
        hook)."""

        def write(batch: FolderWrite) -> VoiceSummary | None:
            return write_voice_artifacts(batch, call)

        return write


def write_voice_artifacts(batch: FolderWrite, call: VoiceCall) -> VoiceSummary | None:
    """Put ``audio/*.wav`` and ``voice.json`` for ``call`` into ``batch`` (a scenario folder's
    writes, made durable with the folder's other files by one group commit,
    ``engine.util.artifacts.commit_folders``); returns the session's voice summary (None when the
    session never agreed on audio). The agent's turns were transcribed during the session
    (``engine.session.voice.link``). Raises OSError when the folder cannot be written."""
    timeline = call.timeline
    if timeline is None:
        batch.put_json(VOICE_JSON, {"error": "no audio session (the agent side never got ready)"})
        return None
    recognizer = call.config.recognizer
    turns = turn_metrics(timeline)
    summary = session_metrics(
        timeline,
        turns,
        call.tts_name or call.config.tts.name,
        call.tts_s,
        recognizer.name if recognizer else None,
        len(call.asr_errors),
    )
    for role in ("user", "agent"):
        batch.put_bytes(f"audio/{role}.wav", timeline.wav(role))
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
            **({"kind": u.kind} if u.kind != "turn" else {}),
        }
        for u in timeline.utterances
    ]
    doc: dict[str, Any] = {"summary": summary.to_json(), "turns": turns, "utterances": utterances}
    if call.caller != CallerStyle():  # a caller voice, perturbation or interjections
        doc["caller"] = {
            **call.caller.to_json(),
            "tts": call.tts_name or call.config.tts.name,
            "barged_into_turns": call.barged,
            "backchannel_turns": call.backchannels,
        }
    if call.asr_errors:
        doc["asr_errors"] = call.asr_errors
    batch.put_json(VOICE_JSON, doc)
    return summary
