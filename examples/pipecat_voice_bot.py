"""A pipecat voice bot as an evalctl agent (a voice run): the caller's audio goes into the bot's
own STT, its LLM answers with the scenario's tools, its own TTS speaks.

    evalctl run specs/eva_airline --voice --agent pipecat:examples/pipecat_voice_bot.py:make_pipeline

Everything is local: the STT service is a pipecat ``SegmentedSTTService`` over PocketSphinx (the
``voice`` extra's ``pocketsphinx`` package and its bundled en-US model), the TTS service a pipecat
``TTSService`` over espeak-ng (the OS package, as evalctl's own caller voice). Put your cloud STT
and TTS services in their place: the adapter only needs one STT and one TTS service in the
pipeline. The model is $BOT_MODEL (default gpt-4.1-mini) at $OPENAI_BASE_URL with
$OPENAI_API_KEY, as in ``examples/pipecat_bot.py``.

The user turn ends when the transcription arrives (``SpeechTimeoutUserTurnStopStrategy`` with no
extra wait): evalctl hands the pipeline the caller's exact speech boundaries as VAD frames.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

from pipecat.frames.frames import ErrorFrame, Frame, TranscriptionFrame, TTSAudioRawFrame
from pipecat.pipeline.pipeline import Pipeline
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.aggregators.llm_response_universal import (
    LLMContextAggregatorPair,
    LLMUserAggregatorParams,
)
from pipecat.services.openai.llm import OpenAILLMService
from pipecat.services.stt_service import SegmentedSTTService
from pipecat.services.tts_service import TTSService
from pipecat.turns.user_start import VADUserTurnStartStrategy
from pipecat.turns.user_stop import SpeechTimeoutUserTurnStopStrategy
from pipecat.turns.user_turn_strategies import UserTurnStrategies
from pipecat.utils.time import time_now_iso8601

from engine.session.backends.bridge import InprocSession
from engine.session.backends.pipecat_agent import tools_schema
from engine.session.voice.sphinx import PocketSphinx
from engine.session.voice.tts import EspeakNG, TTSError

# the text example beside this file (its LLM service sharing one client per event loop), found
# from this file's folder: `pipecat:examples/pipecat_voice_bot.py:...` works from any directory
sys.path.insert(0, str(Path(__file__).resolve().parent))
from pipecat_bot import SharedClientLLMService


class SphinxSTTService(SegmentedSTTService):
    """Speech to text with PocketSphinx, one speech segment at a time (in a thread: decoding
    takes about 0.13 s of CPU per second of speech and must not block the event loop)."""

    def __init__(self, **kwargs: Any):
        super().__init__(trailing_silence_secs=0.2, **kwargs)
        self._sphinx = PocketSphinx()

    @property
    def wants_wav_segments(self) -> bool:
        return False  # PocketSphinx reads raw 16-bit PCM

    async def run_stt(self, audio: bytes) -> AsyncGenerator[Frame | None, None]:
        try:
            text = await asyncio.to_thread(self._sphinx.transcribe, audio, self.sample_rate)
        except RuntimeError as err:
            yield ErrorFrame(error=f"PocketSphinx: {err}")
            return
        yield TranscriptionFrame(text=text, user_id=self._user_id, timestamp=time_now_iso8601())


class EspeakTTSService(TTSService):
    """Text to speech with espeak-ng (resampled to the pipeline's output rate by sox), one
    sentence at a time."""

    def __init__(self, **kwargs: Any):
        super().__init__(push_start_frame=True, push_stop_frames=True, **kwargs)
        self._espeak = EspeakNG()

    def can_generate_metrics(self) -> bool:
        return True

    async def run_tts(self, text: str, context_id: str) -> AsyncGenerator[Frame | None, None]:
        try:
            pcm = await self._espeak.synthesize(text, self.sample_rate)
        except TTSError as err:
            yield ErrorFrame(error=f"espeak-ng: {err}")
            return
        await self.stop_ttfb_metrics()
        # text with nothing to say (a lone "." between paragraphs) still yields audio: 10 ms of
        # silence, as pipecat closes an inline TTS's context only after audio (else it waits for
        # its stop timeout and reports a context "completed with no audio")
        pcm = pcm or bytes(2 * self.sample_rate // 100)
        yield TTSAudioRawFrame(audio=pcm, sample_rate=self.sample_rate, num_channels=1, context_id=context_id)


def make_pipeline(session: InprocSession) -> Pipeline:
    """The voice bot's pipeline for one evalctl session: STT, user aggregator, LLM, TTS,
    assistant aggregator (evalctl is the transport)."""
    llm = SharedClientLLMService(
        api_key=os.environ.get("OPENAI_API_KEY", "unused"),
        base_url=os.environ.get("OPENAI_BASE_URL"),
        settings=OpenAILLMService.Settings(
            model=os.environ.get("BOT_MODEL", "gpt-4.1-mini"), system_instruction=session.system_prompt
        ),
    )
    context = LLMContext(tools=tools_schema(session))
    turns = UserTurnStrategies(
        start=[VADUserTurnStartStrategy()],
        stop=[SpeechTimeoutUserTurnStopStrategy(user_speech_timeout=0.0)],
    )
    aggregators = LLMContextAggregatorPair(
        context, user_params=LLMUserAggregatorParams(user_turn_strategies=turns)
    )
    return Pipeline(
        [SphinxSTTService(), aggregators.user(), llm, EspeakTTSService(), aggregators.assistant()]
    )
