"""Timing read from the waveform on eva voice runs with espeak-ng speech: a delay injected before
every agent reply is measured within 30 ms, whether the agent's stamps show it (it stamps its
reply later) or hide it (it stamps the reply at once and sends silence before speaking). The
delays are media time (the timeline is audio-clocked), so nothing here waits on the wall clock."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.run.runner import run
from engine.session.voice.link import VoiceConfig
from engine.session.voice.run import VoiceRun
from engine.session.voice.side import VoiceStyle
from engine.session.voice.tts import EspeakNG, missing_tts
from engine.session.voice.vad import vad_name
from tests.conftest import SPEC_DIR
from tests.runtime_helpers import run_options

pytestmark = [
    pytest.mark.skipif(missing_tts() is not None, reason=f"local TTS: {missing_tts()}"),
    pytest.mark.skipif(vad_name() != "webrtcvad", reason="webrtcvad not installed (the voice extra)"),
]
NAME = "eva_airline__voluntary_date_change"


async def _turns(data_root: Path, out: Path, style: VoiceStyle) -> tuple[list[dict], dict]:
    voice = VoiceRun(VoiceConfig(style.tts), style)  # no recogniser: timing only
    opts = run_options(
        SPEC_DIR, data_root, scenarios=(NAME,), output_dir=out, progress=False, quiet=True, voice=True
    )
    await run(opts, voice)
    doc = json.loads((out / NAME / "voice.json").read_text())
    metrics = json.loads((out / NAME / "metrics.json").read_text())
    assert metrics["is_successful"] is True, metrics.get("error")
    return doc["turns"], doc["summary"]


@pytest.mark.parametrize("delay_ms", [300.0, 1000.0, 2000.0])
async def test_an_injected_delay_is_measured_from_the_audio(
    data_root: Path, tmp_path: Path, delay_ms: float
) -> None:
    tts = EspeakNG()
    stamped, _ = await _turns(data_root, tmp_path / "stamped", VoiceStyle(tts, delay_ms=delay_ms))
    hidden, summary = await _turns(data_root, tmp_path / "hidden", VoiceStyle(tts, lead_silence_ms=delay_ms))
    assert len(stamped) == len(hidden) >= 3
    for t in stamped:  # stamped later: the stamps and the waveform agree
        assert abs(t["latency_ms"] - delay_ms) <= 30 and abs(t["stamp_diff_ms"]) <= 30, t
    for t in hidden:  # stamped at once: only the waveform sees the wait
        assert abs(t["latency_ms"] - delay_ms) <= 30, t
        assert abs(t["stamped_latency_ms"]) <= 1 and abs(t["stamp_diff_ms"] - delay_ms) <= 30, t
    assert summary["timing"]["vad"] == "webrtcvad"
    assert abs(summary["latency_ms"]["p50"] - delay_ms) <= 30
    assert abs(summary["timing"]["stamp_diff_ms"]["p50"] - delay_ms) <= 30
    assert summary["timing"]["long_silences"] == 0 and summary["timing"]["turns_talking_over"] == 0


async def test_an_agent_talking_over_the_caller_is_seen(data_root: Path, tmp_path: Path) -> None:
    turns, summary = await _turns(data_root, tmp_path, VoiceStyle(EspeakNG(), delay_ms=-400.0))
    # its first reply may start at the session's start; every later one starts 400 ms early
    later = [t for t in turns if t["caller_speech_ms"] and t["caller_speech_ms"][1] >= 400]
    assert later and all(abs(t["latency_ms"] + 400) <= 30 and t["overlap_ms"] >= 370 for t in later), later
    assert summary["timing"]["turns_talking_over"] >= len(later)
