"""Issue #27 item 1, voice, on the mock shop: the agents' mistakes reach evalctl through a pipecat
pipeline in a voice run as in text mode (malformed arguments raw, an unknown tool, parallel calls,
an empty reply), a text-only pipeline in a voice run is the agent's FAIL in one line, and
``--voice`` with an adapter that takes no audio (``livekit:``, ``rtvi+ws://``) is refused in one
line before anything runs."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from engine.run.runner import run
from engine.session.voice.link import VoiceConfig
from engine.session.voice.run import VoiceRun
from engine.session.voice.side import VoiceStyle
from engine.session.voice.tts import ToneVoice, missing_tts
from engine.util.errors import UsageError
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR
from tests.fake_llm import GoldLLM
from tests.runtime_helpers import run_options
from tests.unit.inproc.test_faithful import MALFORMED, SCENARIO, SCRIPT, _calls

pytest.importorskip("pipecat")

REPO = Path(__file__).resolve().parents[3]
VOICE_PIPELINE = "pipecat:tests.pipecat_voice:make_pipeline"
needs_tts = pytest.mark.skipif(bool(missing_tts()), reason=f"needs espeak-ng and sox: {missing_tts()}")


def _run(agent: str, out: Path, monkeypatch: pytest.MonkeyPatch, voice: bool) -> tuple[Any, Any]:
    tone = ToneVoice()  # the caller's voice: the scripted LLM does not listen
    with GoldLLM(steps=list(SCRIPT)) as llm:
        monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "local")
        opts = run_options(
            MOCK_SPEC_DIR,
            MOCK_DATA_ROOT,
            agent=agent,
            scenarios=(SCENARIO,),
            output_dir=out,
            progress=False,
            quiet=True,
            voice=voice,
        )
        settings = VoiceRun(VoiceConfig(tone, recognizer=None), VoiceStyle(tone)) if voice else None
        [(result, metrics)] = list(asyncio.run(run(opts, settings)).results())
        return result, metrics


@needs_tts
def test_each_mistake_reaches_evalctl_in_a_voice_run_as_in_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text, text_metrics = _run(VOICE_PIPELINE, tmp_path / "text", monkeypatch, voice=False)
    voice, voice_metrics = _run(VOICE_PIPELINE, tmp_path / "voice", monkeypatch, voice=True)
    assert _calls(voice)[0][1] == MALFORMED  # the raw text, never repaired
    assert _calls(voice) == _calls(text)  # same calls (unknown tool, parallel batch), same results
    assert voice.stop_reason == text.stop_reason == "exit"
    assert voice_metrics.is_successful == text_metrics.is_successful


def test_a_text_pipeline_in_a_voice_run_is_the_agents_fail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result, metrics = _run(
        f"pipecat:{REPO}/examples/pipecat_bot.py:make_pipeline", tmp_path, monkeypatch, True
    )
    assert result.stop_reason == "agent_error" and not metrics.is_successful
    assert "a voice run needs a pipeline with an STT and a TTS service" in (result.error or "")


@pytest.mark.parametrize(
    "agent", [f"livekit:{REPO}/examples/livekit_bot.py:make_agent", "rtvi+ws://127.0.0.1:9"]
)
def test_voice_with_an_adapter_that_takes_no_audio_is_refused(agent: str, tmp_path: Path) -> None:
    opts = run_options(MOCK_SPEC_DIR, MOCK_DATA_ROOT, agent=agent, output_dir=tmp_path / "r", voice=True)
    tone = ToneVoice()
    with pytest.raises(UsageError, match=r"^--voice with --agent .*: not supported: ") as err:
        asyncio.run(run(opts, VoiceRun(VoiceConfig(tone), VoiceStyle(tone))))
    assert "\n" not in str(err.value)
    assert not (tmp_path / "r").exists()  # refused before anything ran


def _pushed(source: Any, frame: Any, upstream: bool = False) -> Any:
    from types import SimpleNamespace

    from pipecat.processors.frame_processor import FrameDirection

    direction = FrameDirection.UPSTREAM if upstream else FrameDirection.DOWNSTREAM
    return SimpleNamespace(source=source, frame=frame, direction=direction)


async def test_a_turns_speech_is_the_tts_audio_once_every_completion_was_spoken() -> None:
    from pipecat.frames.frames import LLMFullResponseEndFrame, TTSAudioRawFrame

    from engine.session.backends.pipecat_audio import PipelineAudio

    audio, tts, other = PipelineAudio(16000), object(), object()
    audio.tts = tts
    audio.completion_started()  # a step with a tool call, then the answer
    audio.completion_started()
    stereo_24k = bytes(4 * 2400)  # 0.1 s of two-channel silence at 24 kHz
    audio._pushed(_pushed(tts, TTSAudioRawFrame(audio=stereo_24k, sample_rate=24000, num_channels=2)))
    audio._pushed(_pushed(other, TTSAudioRawFrame(audio=bytes(640), sample_rate=16000, num_channels=1)))
    audio._pushed(_pushed(tts, LLMFullResponseEndFrame()))
    audio._pushed(_pushed(tts, LLMFullResponseEndFrame(), upstream=True))  # not the TTS's output
    waiting = asyncio.ensure_future(audio.speech())
    await asyncio.sleep(0)
    assert not waiting.done()  # one completion of two spoken
    audio._pushed(_pushed(tts, LLMFullResponseEndFrame()))
    said = await waiting
    assert len(said.pcm) == 2 * 1600  # 0.1 s, mono, at the session's 16 kHz; the other processor's left out
    assert said.first_audio_s is not None and said.first_audio_s >= 0
    audio._pushed(_pushed(tts, LLMFullResponseEndFrame()))  # the next turn starts empty
    assert (await audio.speech()).pcm == b""


def test_the_callers_turn_goes_in_as_vad_bounded_20_ms_audio_frames() -> None:
    from pipecat.frames.frames import (
        InputAudioRawFrame,
        VADUserStartedSpeakingFrame,
        VADUserStoppedSpeakingFrame,
    )

    from engine.session.backends.pipecat_audio import PipelineAudio

    audio = PipelineAudio(16000)
    assert audio.input_frames() == []  # the caller said nothing: no frames
    audio.hear(bytes(640 * 2))
    audio.hear(bytes(100))
    frames = audio.input_frames()
    assert isinstance(frames[0], VADUserStartedSpeakingFrame)
    assert isinstance(frames[-1], VADUserStoppedSpeakingFrame)
    chunks = frames[1:-1]
    assert all(isinstance(f, InputAudioRawFrame) and f.sample_rate == 16000 for f in chunks)
    assert [len(f.audio) for f in chunks] == [640, 640, 100]
    assert audio.input_frames() == []  # heard once
