"""Realistic callers on eva voice runs with real speech (espeak-ng, sox) and the default recogniser
(PocketSphinx): noise on the line measurably raises the word error rate of the agent's speech as
heard, and `evalctl compare` labels the two conditions and pairs the change; a caller's scheduled
barge-ins are measured as barge-ins while the replay session still passes with the same DB.
One short scenario each (recognition costs CPU)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import cli
from engine.session.voice.sphinx import available
from engine.session.voice.tts import missing_tts
from tests.conftest import SPEC_DIR

pytestmark = pytest.mark.skipif(missing_tts() is not None, reason=f"local TTS: {missing_tts()}")
NAME = "eva_airline__5_2_5"  # the least agent speech of the 50 (3 agent turns)


@pytest.mark.skipif(not available(), reason="pocketsphinx not installed (the voice extra)")
def test_noise_on_the_line_raises_the_word_error_rate(
    data_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("EVALCTL_ASR", raising=False)
    out = tmp_path / "run"
    args = ["run", str(SPEC_DIR), "--data-root", str(data_root), "--scenarios", NAME, "--no-progress"]
    given = ["--voice", "--caller-voice", "en-us+f3", "--conditions", "clean,snr=-5"]
    assert cli.main([*args, *given, "--output-dir", str(out)]) == 0
    printed = capsys.readouterr().out
    clean = json.loads((out / "clean" / NAME / "metrics.json").read_text())
    noisy = json.loads((out / "snr-5" / NAME / "metrics.json").read_text())
    doc = json.loads((out / "snr-5" / NAME / "voice.json").read_text())
    assert doc["caller"]["perturbation"] == "snr=-5" and doc["caller"]["tts"] == "espeak-ng:en-us+f3[snr-5]"
    assert "callers: espeak-ng:en-us+f3[snr-5] (1 session)" in printed
    # the agent's words and the DB are the same; only the hearing of them differs. espeak-ng
    # through PocketSphinx is hard to hear even clean (WER 0.917 on this scenario); noise 5 dB
    # above the speech takes it to 0.935 (deterministic: the noise is seeded, sox runs in its
    # repeatable mode)
    assert noisy["db_hash"] == clean["db_hash"] and noisy["is_successful"] is True
    assert noisy["voice"]["wer"] >= clean["voice"]["wer"] + 0.01, (
        clean["voice"]["wer"],
        noisy["voice"]["wer"],
    )
    report = json.loads((out / "conditions.json").read_text())
    rows = {c["label"]: c for c in report["conditions"]}
    assert (
        rows["snr-5"]["wer"]["rate"] == noisy["voice"]["wer"]
        and rows["clean"]["wer"]["rate"] == clean["voice"]["wer"]
    )
    assert rows["snr-5"]["paired"]["against"] == "clean"
    assert "  snr-5 (snr=-5): success 100.0%" in printed
    settings = json.loads((out / "snr-5" / "run.json").read_text())["settings"]
    assert settings["perturb"] == "snr=-5" and settings["caller_voices"] == ["en-us+f3"]
    summary = json.loads((out / "snr-5" / "summary.json").read_text())
    assert summary["voice"]["callers"] == {"espeak-ng:en-us+f3[snr-5]": 1}
    assert cli.main(["compare", str(out / "clean"), str(out / "snr-5")]) == 0
    shown = capsys.readouterr().out
    assert f"A: {out / 'clean'} (caller: clean; voices en-us+f3)" in shown
    assert f"B: {out / 'snr-5'} (caller: snr=-5; voices en-us+f3)" in shown


def test_a_scheduled_barge_in_is_measured_on_real_speech(
    data_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVALCTL_ASR", "none")  # timing only: no recognition
    spec = tmp_path / "spec"  # the eva spec with one scenario, whose caller barges in
    shutil.copytree(SPEC_DIR, spec, ignore=shutil.ignore_patterns("scenarios"))
    (spec / "scenarios").mkdir()
    source = next(p for p in (SPEC_DIR / "scenarios").glob("*.yaml") if f"name: {NAME}\n" in p.read_text())
    (spec / "scenarios" / source.name).write_text(
        source.read_text() + "caller:\n  barge_in: {after_ms: 800, turns: [0, 1]}\n"
    )
    args = ["run", str(spec), "--data-root", str(data_root), "--no-progress", "--voice"]
    assert cli.main([*args, "--output-dir", str(tmp_path / "out")]) == 0
    metrics = json.loads((tmp_path / "out" / NAME / "metrics.json").read_text())
    doc = json.loads((tmp_path / "out" / NAME / "voice.json").read_text())
    assert metrics["is_successful"] is True and metrics["db_hash"] == metrics["expected_db_hash"]
    assert doc["caller"]["barged_into_turns"] == [0, 1]
    barged = {t["turn"]: t["barge_in"] for t in doc["turns"] if t["barge_in"]}
    assert sorted(barged) == [0, 1] and metrics["voice"]["timing"]["barge_ins"] == 2
    for turn, b in barged.items():  # 800 ms into the agent's speech (VAD: 10 ms windows)
        start = doc["turns"][turn]["agent_speech_ms"][0]
        assert abs(b["at_ms"] - (start + 800.0)) <= 30, (turn, b, start)
        assert b["yielded"] is False  # the replay agent talks on through it
    assert metrics["voice"]["overlap_ms"] > 0


def test_the_lines_noise_is_not_charged_to_the_agents_timing(
    data_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the same replay agent on a clean line and on a noisy phone line: its response latency,
    # time to first audio aside (the engine's clock), overlap and silences are read from the
    # audio as each side sent it, so they are the same; the line is evalctl's, never the agent's
    monkeypatch.setenv("EVALCTL_ASR", "none")  # timing only: no recognition
    out = tmp_path / "run"
    args = ["run", str(SPEC_DIR), "--data-root", str(data_root), "--scenarios", NAME, "--no-progress"]
    given = ["--voice", "--conditions", "clean;telephone,snr=10", "--output-dir", str(out)]
    assert cli.main([*args, *given]) == 0
    clean, line = (json.loads((out / d / NAME / "voice.json").read_text()) for d in ("clean", "tel+snr10"))
    assert line["caller"]["perturbation"] == "telephone,snr=10"
    timing = ("caller_speech_ms", "agent_speech_ms", "latency_ms", "overlap_ms", "barge_in")
    assert [[t[k] for k in timing] for t in line["turns"]] == [[t[k] for k in timing] for t in clean["turns"]]
    assert [t["latency_ms"] for t in line["turns"]] == [0.0] * len(line["turns"])
    assert line["summary"]["timing"]["long_silences"] == clean["summary"]["timing"]["long_silences"]
