"""The voice block of a run's summary on a real eva voice run (espeak-ng, PocketSphinx; one short
scenario): each interval says what it counts and resamples, the turn counts and the gate say what
they are, the block prints together (its voice cache line inside it, the replay caller's note once,
after it), and `evalctl report` of the run, text and HTML, prints the figures `run` printed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import cli
from engine.session.voice.sphinx import available
from engine.session.voice.tts import missing_tts
from tests.conftest import SPEC_DIR

pytestmark = [
    pytest.mark.skipif(missing_tts() is not None, reason=f"local TTS: {missing_tts()}"),
    pytest.mark.skipif(not available(), reason="pocketsphinx not installed (the voice extra)"),
]
NAME = "eva_airline__5_2_5"  # the least agent speech of the 50 (3 agent turns)


def test_the_voice_summary_says_what_it_counts_and_report_prints_it_again(
    data_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("EVALCTL_ASR", raising=False)
    monkeypatch.setenv("EVALCTL_VOICE_CACHE", str(tmp_path / "cache"))  # its line in the block
    out = tmp_path / "run"
    args = ["run", str(SPEC_DIR), "--data-root", str(data_root), "--scenarios", NAME, "--no-progress"]
    assert cli.main([*args, "--voice", "--output-dir", str(out)]) == 0
    captured = capsys.readouterr()
    printed = captured.out.splitlines()
    voice = json.loads((out / "summary.json").read_text())["voice"]
    ent, wer = voice["entities"], voice["wer"]
    assert (ent["unit"], ent["sessions"], ent["interval_by"]) == ("entities", 1, "session")
    assert (wer["unit"], wer["sessions"], wer["interval_by"]) == ("words", 1, "session")
    assert voice["matched"]["unit"] == "turns" and voice["matched"]["total"] >= 1
    # the stdout block: together, its cache line last, the note after it and only there
    start = next(i for i, line in enumerate(printed) if line.startswith("Voice (1 audio session):"))
    end = next(i for i in range(start + 1, len(printed)) if not printed[i].startswith("  "))
    block = printed[start:end]
    assert block[-1].startswith("  voice cache: "), block
    assert printed[end].startswith("NOTE: replay caller") and captured.out.count("NOTE: replay caller") == 1
    assert "evalctl: caller" not in captured.err
    heard = next(line for line in block if line.startswith("  heard: "))
    assert f"({ent['hits']}/{ent['total']} entities in 1 session)" in heard
    assert f"({wer['hits']} edits / {wer['total']} words in 1 session)" in heard
    lat, ttfa = voice["latency_ms"]["turns"], voice["ttfa_ms"]["turns"]
    assert any(f"({lat} agent turns with caller speech before them)" in line for line in block)
    assert any(f"({ttfa} agent turns with audio)" in line for line in block)
    assert any(line.startswith("  speech_matches_text (the gate): turns matched ") for line in block)
    assert any("No WER bound" in line for line in block)
    # `evalctl report` prints what `run` printed: the headline rates and the voice figures
    assert cli.main(["report", str(out)]) == 0
    reported = capsys.readouterr().out.splitlines()
    shown = printed[: start + len(block) - 1] + printed[end : end + 1]  # all but the cache line
    headline = [
        line for line in printed if line.startswith(("Overall Success", "Strict Success", "Task Success"))
    ]
    assert len(headline) == 3 and reported[: len(shown)] == shown
    page = tmp_path / "report.html"
    assert cli.main(["report", str(out), "--html", str(page)]) == 0
    html = page.read_text()
    assert "<h3>Voice (1 audio session)</h3>" in html
    for line in block[1:-1]:  # the cache line is the run's own process's
        assert line.strip().replace("&", "&amp;").replace("'", "&#x27;") in html, line
