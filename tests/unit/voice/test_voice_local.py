"""The fully local voice loop: the caller and the built-in voice replay agent speak through the OS
packages espeak-ng and sox (no model, no network). Skipped, with the reason, where they are not
installed (`.ci/run` installs them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import cli
from engine.session.voice.cache import VOICE_CACHE_ENV
from engine.session.voice.link import VoiceConfig
from engine.session.voice.pcm import read_wav, speech_bounds
from engine.session.voice.run import VoiceRun
from engine.session.voice.side import VoiceStyle
from engine.session.voice.tts import EspeakNG, missing_tts
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR, REPO
from tests.unit.voice.test_voice import THREE, _run, _voice

pytestmark = pytest.mark.skipif(missing_tts() is not None, reason=f"local TTS: {missing_tts()}")


def _metrics(out: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in out.glob("*/metrics.json")}


def test_evalctl_run_voice_passes_the_three_mock_scenarios_offline(tmp_path: Path) -> None:
    base = [
        "run",
        str(MOCK_SPEC_DIR),
        "--data-root",
        str(MOCK_DATA_ROOT),
        "--scenarios",
        ",".join(THREE),
        "--no-progress",
    ]
    assert cli.main([*base, "--output-dir", str(tmp_path / "text")]) == 0
    assert cli.main([*base, "--voice", "--output-dir", str(tmp_path / "voice"), "--fail-under", "1"]) == 0
    text, voice = _metrics(tmp_path / "text"), _metrics(tmp_path / "voice")
    assert sorted(voice) == sorted(THREE)
    for name in THREE:
        v = voice[name]
        assert v["is_successful"] is True and v["db_hash"] == text[name]["db_hash"] == v["expected_db_hash"]
        assert v["voice"]["tts"] == "espeak-ng" and v["voice"]["agent_turns_with_audio"] == v["agent_turns"]
        for role in ("user", "agent"):
            pcm, rate = read_wav((tmp_path / "voice" / name / "audio" / f"{role}.wav").read_bytes())
            assert rate == 16000 and speech_bounds(pcm, rate) is not None  # real speech, not silence
        turns = _voice(tmp_path / "voice", name)["turns"]
        # measured from the waveform (VAD, 10 ms frames): within 30 ms of the true 0
        assert all(abs(t["latency_ms"]) <= 30 and t["overlap_ms"] <= 30 for t in turns), turns
        # about 150 words a minute: each agent turn's speech is long enough for its words
        for t in turns:
            words, seconds = (
                len(t["text"].split()),
                (t["agent_speech_ms"][1] - t["agent_speech_ms"][0]) / 1000,
            )
            assert 1.0 <= words / seconds <= 5.0, t


async def test_a_delay_in_the_espeak_replay_agent_is_measured(tmp_path: Path) -> None:
    tts = EspeakNG()
    voice = VoiceRun(VoiceConfig(tts), VoiceStyle(tts, delay_ms=700.0))
    await _run(tmp_path, THREE[:1], voice=voice)
    turns = _voice(tmp_path, THREE[0])["turns"]
    assert turns and all(abs(t["latency_ms"] - 700.0) <= 30 for t in turns), turns


def test_a_voice_run_of_evalctl_ends_without_waiting_for_its_own_speech_workers(tmp_path: Path) -> None:
    """The speech workers' manager thread is evalctl's, not the agent's: the program stops it
    before it waits for the threads left behind (it waited 5 s at the end of every voice run and
    named the thread as left behind)."""
    argv = [sys.executable, "-m", "cli", "run", str(MOCK_SPEC_DIR), "--data-root", str(MOCK_DATA_ROOT),
            "--scenarios", THREE[0], "--voice", "--no-progress",
            "--output-dir", str(tmp_path / "run")]  # fmt: skip
    env = {**os.environ, VOICE_CACHE_ENV: "off"}  # no cache: the speech workers start
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "run" / THREE[0] / "audio" / "agent.wav").is_file()  # the workers did speak
    assert "still running" not in done.stderr and "left behind" not in done.stderr, done.stderr
