"""What was heard, on eva voice runs with espeak-ng speech and the default recogniser
(PocketSphinx): the replay agent's speech matches its text; an agent whose audio says another
sentence, and one that sends no speech, fail the voice gate ``speech_matches_text`` while every
other signal still passes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.run.runner import run
from engine.session.voice.asr import default_recognizer
from engine.session.voice.link import VoiceConfig
from engine.session.voice.run import VoiceRun
from engine.session.voice.side import VoiceStyle
from engine.session.voice.sphinx import available
from engine.session.voice.tts import EspeakNG, missing_tts
from tests.conftest import SPEC_DIR
from tests.runtime_helpers import run_options

pytestmark = [
    pytest.mark.skipif(missing_tts() is not None, reason=f"local TTS: {missing_tts()}"),
    pytest.mark.skipif(not available(), reason="pocketsphinx not installed (the voice extra)"),
]
NAME = "eva_airline__5_2_5"  # the least agent speech of the 50 (34 s): recognition is CPU
OTHER = "The weather in Paris is lovely this time of year, and the museums open at nine."


class _Mute:
    """A synthesiser that says nothing (the agent sends no speech)."""

    name = "mute"

    async def synthesize(self, text: str, rate: int) -> bytes:
        return bytes(2 * rate // 2)  # half a second of digital silence


async def _run(data_root: Path, out: Path, style: VoiceStyle) -> tuple[dict, dict]:
    voice = VoiceRun(VoiceConfig(EspeakNG(), recognizer=default_recognizer()), style)
    opts = run_options(
        SPEC_DIR, data_root, scenarios=(NAME,), output_dir=out, progress=False, quiet=True, voice=True
    )
    await run(opts, voice)
    metrics = json.loads((out / NAME / "metrics.json").read_text())
    return metrics, json.loads((out / NAME / "voice.json").read_text())


def _gate(metrics: dict) -> dict:
    return metrics["extra_signals"]["speech_matches_text"]


async def test_the_replay_agents_speech_matches_its_text(
    data_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("EVALCTL_ASR", raising=False)
    metrics, doc = await _run(data_root, tmp_path, VoiceStyle(EspeakNG()))
    assert metrics["is_successful"] is True, metrics["success_breakdown"]
    assert "speech_matches_text" in metrics["success_signals"]
    gate = _gate(metrics)
    assert gate["value"] is True and gate["silent"] == 0 and gate["matched"] >= 0.75 * gate["turns"]
    hearing = metrics["voice"]["hearing"]
    assert metrics["voice"]["recognizer"] == "pocketsphinx" and hearing["transcribed"] == gate["turns"]
    assert hearing["entities"] > 0 and 0 <= hearing["entities_heard"] <= hearing["entities"]
    assert all(t["asr_text"] for t in doc["turns"])  # heard something in every turn
    assert 0 < metrics["voice"]["wer"] < 1.0


@pytest.mark.parametrize("fault", ["another sentence", "no speech"])
async def test_audio_without_the_agents_words_fails_the_voice_gate(
    data_root: Path, tmp_path: Path, fault: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("EVALCTL_ASR", raising=False)
    style = VoiceStyle(EspeakNG(), say=OTHER) if fault == "another sentence" else VoiceStyle(_Mute())
    metrics, _ = await _run(data_root, tmp_path, style)
    gate = _gate(metrics)
    assert gate["value"] is False and metrics["is_successful"] is False, gate
    assert metrics["success_breakdown"]["failed"] == ["speech_matches_text"]
    assert metrics["db_state_match"] is True and metrics["clean_exit"] is True  # only what was heard
    if fault == "no speech":
        assert gate["silent"] == gate["turns"] > 0 and "no speech" in gate["reason"]
    else:
        assert gate["silent"] == 0 and gate["matched"] < 0.75 * gate["turns"]
