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
