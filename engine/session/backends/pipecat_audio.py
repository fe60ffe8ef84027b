"""The audio half of a ``pipecat:`` agent in a voice run (protocol version 2): the caller's speech
into the user's pipeline as pipecat input audio, the pipeline's TTS audio out.

In a voice run the adapter stands where a pipecat transport with a VAD would: each turn it queues
``VADUserStartedSpeakingFrame``, the caller's audio of the turn as ``InputAudioRawFrame`` chunks of
:data:`CHUNK_MS` (mono s16le at the session's rate, which is also the pipeline's
``audio_in_sample_rate`` / ``audio_out_sample_rate``), then ``VADUserStoppedSpeakingFrame``: the
caller's speech boundaries are exact (the engine synthesised it), so there is no VAD to run. The
user's STT service turns it into a transcription, their turn strategy ends the user turn, their
LLM answers (tool calls proxied to the engine as in text mode), their TTS speaks.

An observer (:class:`SpeechTap`, a pipecat ``BaseObserver``: it changes nothing in the pipeline)
collects what the pipeline's TTS service pushes downstream: its audio (``OutputAudioRawFrame``,
resampled to the session's rate and mixed to mono when it is not) and its
``LLMFullResponseEndFrame``, which pipecat 1.14.0 queues behind the audio of that completion
(``TTSService._handle_llm_response_end``). A turn's speech is complete once the TTS has passed on
one end frame per LLM completion the turn made.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from engine.session.backends import BackendError

#: Milliseconds of caller audio per ``InputAudioRawFrame`` (a transport's usual 20 ms).
CHUNK_MS = 20


@dataclass(frozen=True)
class TurnSpeech:
    """One turn's agent audio: ``pcm`` (mono s16le at the session's rate; empty when the pipeline
    said nothing) and ``first_audio_s``, the wall-clock seconds from the caller's audio going into
    the pipeline to the TTS's first sample of the turn (None when silent)."""

    pcm: bytes
    first_audio_s: float | None


def _to_session_rate(pcm: bytes, rate: int, channels: int, target: int) -> bytes:
    """``pcm`` (s16le, ``channels`` interleaved, at ``rate`` Hz) as mono at ``target`` Hz
    (numpy's mean over the channels, ``scipy.signal.resample_poly`` for the rate)."""
    if rate == target and channels == 1:
        return pcm
    from math import gcd

    import numpy as np
    from scipy.signal import resample_poly  # type: ignore[import-untyped]

    width = 2 * channels
    x = np.frombuffer(pcm[: len(pcm) - len(pcm) % width], dtype="<i2").astype(np.float64)
    if channels > 1:
        x = x.reshape(-1, channels).mean(axis=1)
    if rate != target:
        g = gcd(rate, target)
        x = resample_poly(x, target // g, rate // g)
    return bytes(np.clip(np.rint(x), -32768, 32767).astype("<i2").tobytes())


class PipelineAudio:
    """One session's audio through a pipecat pipeline at ``rate`` Hz (module doc).

    The session calls :meth:`hear` with the caller's audio of the coming turn and
    :meth:`input_frames` when the turn starts; :meth:`speech` returns the turn's agent audio
    once the TTS has spoken every completion counted by :meth:`completion_started`."""

    def __init__(self, rate: int):
        self.rate = rate
        self._heard = bytearray()
        self._pcm = bytearray()
        self._t0 = time.perf_counter()
        self._first: float | None = None
        self._completions = 0
        self._ended = 0
        self._changed = asyncio.Event()
        self._woken = False
        self.tts: Any = None

    def hear(self, pcm: bytes) -> None:
        """The caller's audio (mono s16le at :attr:`rate`), before the turn's ``turn.request``."""
        self._heard += pcm

    def input_frames(self) -> list[Any]:
        """The frames of the caller's turn (module doc); empty when the caller said nothing.
        Starts the turn's clock."""
        from pipecat.frames.frames import (
            InputAudioRawFrame,
            VADUserStartedSpeakingFrame,
            VADUserStoppedSpeakingFrame,
        )

        self._t0 = time.perf_counter()
        heard, self._heard = bytes(self._heard), bytearray()
        if not heard:
            return []
        step = 2 * self.rate * CHUNK_MS // 1000
        chunks = [
            InputAudioRawFrame(audio=heard[i : i + step], sample_rate=self.rate, num_channels=1)
            for i in range(0, len(heard), step)
        ]
        return [VADUserStartedSpeakingFrame(), *chunks, VADUserStoppedSpeakingFrame()]

    def completion_started(self) -> None:
        """The LLM service started one more completion (its TTS will pass on its end frame)."""
        self._completions += 1

    def observer(self) -> Any:
        """A pipecat observer feeding :meth:`_pushed` (the pipeline's ``observers``)."""
        from pipecat.observers.base_observer import BaseObserver

        audio = self

        class SpeechTap(BaseObserver):
            async def on_push_frame(self, data: Any) -> None:
                audio._pushed(data)

        return SpeechTap()

    def _pushed(self, data: Any) -> None:
        from pipecat.frames.frames import LLMFullResponseEndFrame, OutputAudioRawFrame
        from pipecat.processors.frame_processor import FrameDirection

        if data.source is not self.tts or data.direction != FrameDirection.DOWNSTREAM:
            return
        frame = data.frame
        if isinstance(frame, OutputAudioRawFrame) and frame.audio:
            if self._first is None:
                self._first = time.perf_counter() - self._t0
            self._pcm += _to_session_rate(frame.audio, frame.sample_rate, frame.num_channels, self.rate)
            self._changed.set()
        elif isinstance(frame, LLMFullResponseEndFrame):
            self._ended += 1
            self._changed.set()

    async def speech_so_far(self) -> TurnSpeech:
        """The audio the TTS has pushed since the last call, once there is some (empty when
        :meth:`wake` ended the wait first); ``first_audio_s`` as in :class:`TurnSpeech`. For a
        side that sends the speech as it comes, before :meth:`speech` takes the rest."""
        while not self._pcm and not self._woken:
            self._changed.clear()
            await self._changed.wait()
        self._woken = False
        said = TurnSpeech(bytes(self._pcm), self._first)
        self._pcm = bytearray()
        return said

    def wake(self) -> None:
        """End a :meth:`speech_so_far` wait (the turn is being answered)."""
        self._woken = True
        self._changed.set()

    async def speech(self) -> TurnSpeech:
        """The turn's agent audio, once the TTS has passed on the end of every completion so far
        (the session's turn timeout bounds a TTS that never does)."""
        while self._ended < self._completions:
            self._changed.clear()
            await self._changed.wait()
        said = TurnSpeech(bytes(self._pcm), self._first)
        self._pcm, self._first, self._woken = bytearray(), None, False
        return said


def voice_services(processors: list[Any], name: str) -> tuple[Any, Any]:
    """The pipeline's one STT and one TTS service. Raises BackendError (the agent's FAIL) when
    either is missing or there is more than one TTS service (the adapter listens to one)."""
    from pipecat.services.stt_service import STTService
    from pipecat.services.tts_service import TTSService

    stt = [p for p in processors if isinstance(p, STTService)]
    tts = [p for p in processors if isinstance(p, TTSService)]
    if not stt or not tts:
        missing = " and ".join(w for w, found in (("an STT", stt), ("a TTS", tts)) if not found)
        raise BackendError(
            f"{name}: a voice run needs a pipeline with {missing} service"
            " (the caller's audio goes in, the agent's speech comes out)"
        )
    if len(tts) > 1:
        raise BackendError(f"{name}: the pipeline has {len(tts)} TTS services; a voice run listens to one")
    return stt[0], tts[0]
