"""Run-level voice figures on eva voice runs (the tone stand-in voice, no recogniser: fast):
``summary.json`` ``voice``, the stdout summary's voice lines, and ``compare`` of a run whose agent
waits 1.5 s (silence before its speech, stamps saying it answered at once) against one that does
not: the latency regression is significant, the rates do not move. One pair of runs for the module."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.core.records.summary import SummaryRecord
from engine.results.compare import compare_runs, render_text
from engine.run.runner import run
from engine.session.voice.link import VoiceConfig
from engine.session.voice.run import VoiceRun
from engine.session.voice.side import VoiceStyle
from engine.session.voice.tts import ToneVoice
from tests.conftest import SPEC_DIR
from tests.runtime_helpers import run_options

TONE = ToneVoice()
#: six scenarios: the fewest a paired test over scenarios can call significant (2 * 0.5**6 < 0.05)
SIX = (
    "eva_airline__voluntary_date_change",
    "eva_airline__irrops_cancellation",
    "eva_airline__1_2_2",
    "eva_airline__1_1_3",
    "eva_airline__1_1_4",
    "eva_airline__1_1_5",
)
DELAY_MS = 1500.0


@pytest.fixture(scope="module")
def two_runs(data_root: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    import asyncio

    base = tmp_path_factory.mktemp("voice_figures")
    out = []
    for name, style in (("prompt", VoiceStyle(TONE)), ("slow", VoiceStyle(TONE, lead_silence_ms=DELAY_MS))):
        opts = run_options(
            SPEC_DIR, data_root, scenarios=SIX, output_dir=base / name, progress=False, quiet=True, voice=True
        )
        asyncio.run(run(opts, VoiceRun(VoiceConfig(TONE), style)))
        out.append(base / name)
    return out[0], out[1]


def test_summary_json_and_the_stdout_summary_carry_the_voice_figures(two_runs: tuple[Path, Path]) -> None:
    prompt, slow = two_runs
    for folder, latency in ((prompt, 0.0), (slow, DELAY_MS)):
        body = json.loads((folder / "summary.json").read_text())
        assert body["schema"] == "evalctl.summary/5" and body["overall"]["rate"] == 1.0
        voice = SummaryRecord.from_json(body).voice
        assert voice is not None and voice.sessions == len(SIX) and voice.wer is None
        spread = voice.latency_ms
        assert spread.turns >= 3 * len(SIX)
        for p in (spread.p50, spread.p90, spread.p95):
            assert p is not None and abs(p - latency) <= 30
        assert spread.ci is not None and spread.ci.low - 30 <= latency <= spread.ci.high + 30
        text = (folder / "all_summary.txt").read_text()
        assert f"Voice ({len(SIX)} audio sessions):" in text
        assert f"response latency (from the audio): p50 {spread.p50:.0f} ms" in text
        assert "heard: nothing transcribed" in text


def test_compare_calls_the_latency_regression_significant(two_runs: tuple[Path, Path]) -> None:
    prompt, slow = two_runs
    c = compare_runs(prompt, slow)
    latency = next(v for v in c.voice if v.name == "response latency")
    assert latency.scenarios == len(SIX) and latency.verdict == "regression" and latency.p_value < 0.05
    assert abs(latency.difference - DELAY_MS) <= 30 and latency.ci is not None
    assert latency.ci.low <= latency.difference <= latency.ci.high
    assert all(r.delta == 0 for r in c.headline)  # the verdicts did not move: only the timing did
    text = render_text(c)
    assert "response latency: " in text and ": regression" in text
    back = compare_runs(slow, prompt)
    assert next(v for v in back.voice if v.name == "response latency").verdict == "improvement"
    assert c.to_json()["voice"][0]["verdict"] == "regression"
