"""A pipecat voice pipeline for the tests, built from real pipecat base classes with local parts:
an STT service (``SegmentedSTTService``) that recognises the caller lines it was taught, the
example's espeak-ng TTS service (``examples/pipecat_voice_bot.py``) and an OpenAI-compatible LLM
service talking to the gold-replaying fake LLM (``tests/fake_llm.py``).

PocketSphinx mishears espeak-ng's synthetic voice too often for a gold replay to stay on its path
(``by the huge decline`` for "Hi, I need to change my flight to March 25."), so the tests'
recogniser is exact instead: :func:`learn` synthesises each line the caller will say with the
engine's own caller voice and :class:`KnownLinesSTT` matches each speech segment it is given
against them, sample by sample (a template recogniser: the engine sends the caller's speech
trimmed, as it synthesised it, and espeak-ng is deterministic up to sox's dither, which changes
samples by a unit or two). Audio it was not taught is transcribed as :data:`UNKNOWN`.

    pipecat:tests.pipecat_voice:make_pipeline   (the module form: one KNOWN table with the test)
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, Iterable
from typing import Any

import numpy as np
from pipecat.frames.frames import Frame, TranscriptionFrame
from pipecat.pipeline.pipeline import Pipeline
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.aggregators.llm_response_universal import (
    LLMContextAggregatorPair,
    LLMUserAggregatorParams,
)
from pipecat.services.openai.llm import OpenAILLMService
from pipecat.services.stt_service import SegmentedSTTService
from pipecat.turns.user_start import VADUserTurnStartStrategy
from pipecat.turns.user_stop import SpeechTimeoutUserTurnStopStrategy
from pipecat.turns.user_turn_strategies import UserTurnStrategies
from pipecat.utils.time import time_now_iso8601

from engine.session.backends.bridge import InprocSession
from engine.session.backends.pipecat_agent import tools_schema
from engine.session.voice.pcm import trim
from engine.session.voice.tts import Synthesizer
from examples.pipecat_bot import SharedClientLLMService
from examples.pipecat_voice_bot import EspeakTTSService

UNKNOWN = "(not recognised)"
#: The lines taught (:func:`learn`): their samples (int16) and their text.
KNOWN: list[tuple[np.ndarray, str]] = []
#: The mean absolute sample difference below which a segment is a taught line (dither: ~1).
NEAR = 8.0


async def learn(lines: Iterable[str], tts: Synthesizer, rate: int = 16000) -> None:
    """Teach :class:`KnownLinesSTT` ``lines`` as ``tts`` speaks them at ``rate`` Hz, trimmed as
    the engine sends them."""
    for line in lines:
        if line.strip():
            pcm = trim(await tts.synthesize(line, rate), rate)
            KNOWN.append((np.frombuffer(pcm, dtype="<i2").astype(np.int32), line))


def recognise(pcm: bytes) -> str:
    """The taught line ``pcm`` (mono s16le) is, or :data:`UNKNOWN`."""
    heard = np.frombuffer(pcm[: len(pcm) - len(pcm) % 2], dtype="<i2").astype(np.int32)
    for samples, line in KNOWN:
        if len(samples) == len(heard) and float(np.abs(samples - heard).mean()) < NEAR:
            return line
    return UNKNOWN


class KnownLinesSTT(SegmentedSTTService):
    """Speech to text by looking each segment's samples up among the lines taught (module doc)."""

    def __init__(self, **kwargs: Any):
        super().__init__(trailing_silence_secs=0.0, **kwargs)
        self.heard: list[str] = []

    @property
    def wants_wav_segments(self) -> bool:
        return False

    async def run_stt(self, audio: bytes) -> AsyncGenerator[Frame | None, None]:
        text = recognise(audio)
        self.heard.append(text)
        yield TranscriptionFrame(text=text, user_id=self._user_id, timestamp=time_now_iso8601())


def make_pipeline(session: InprocSession) -> Pipeline:
    """STT, user aggregator, LLM (the fake LLM at $OPENAI_BASE_URL), TTS, assistant aggregator."""
    llm = SharedClientLLMService(
        api_key=os.environ.get("OPENAI_API_KEY", "unused"),
        base_url=os.environ.get("OPENAI_BASE_URL"),
        settings=OpenAILLMService.Settings(model="gold", system_instruction=session.system_prompt),
    )
    turns = UserTurnStrategies(
        start=[VADUserTurnStartStrategy()],
        stop=[SpeechTimeoutUserTurnStopStrategy(user_speech_timeout=0.0)],
    )
    aggregators = LLMContextAggregatorPair(
        LLMContext(tools=tools_schema(session)),
        user_params=LLMUserAggregatorParams(user_turn_strategies=turns),
    )
    return Pipeline([KnownLinesSTT(), aggregators.user(), llm, EspeakTTSService(), aggregators.assistant()])
