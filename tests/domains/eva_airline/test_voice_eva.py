"""A voice run of three eva scenarios (one ends by transfer_to_agent) keeps the text run's DB hashes,
with the tone stand-in voice. Moved from tests/unit/voice/test_voice.py, which runs the same on the
mock shop."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from engine.core.records.metrics import MetricsRecord
from engine.run.runner import run
from engine.session.voice.link import VoiceConfig
from engine.session.voice.pcm import read_wav
from engine.session.voice.run import VoiceRun
from engine.session.voice.side import VoiceStyle
from engine.session.voice.tts import ToneVoice
from tests.conftest import SPEC_DIR
from tests.runtime_helpers import run_options

TONE = ToneVoice()
THREE = (
    "eva_airline__voluntary_date_change",
    "eva_airline__irrops_cancellation",
    "eva_airline__escalation_edge_case",  # ends by transfer_to_agent
)


def voice_run() -> VoiceRun:
    return VoiceRun(VoiceConfig(TONE), VoiceStyle(TONE))


async def _run(
    data_root: Path, out: Path, names: tuple[str, ...], voice: VoiceRun | None = None, **kwargs: Any
) -> dict[str, dict]:
    """Run ``names`` (audio sessions under ``voice``, if given); returns each scenario's metrics.json."""
    opts = run_options(
        SPEC_DIR,
        data_root,
        scenarios=names,
        output_dir=out,
        progress=False,
        quiet=True,
        voice=voice is not None,
        **kwargs,
    )
    await run(opts, voice)
    return {p.parent.name: json.loads(p.read_text()) for p in out.glob("*/metrics.json")}


def _voice(out: Path, name: str) -> dict:
    return json.loads((out / name / "voice.json").read_text())


async def test_voice_run_keeps_the_text_runs_db_hashes(data_root: Path, tmp_path: Path) -> None:
    text = await _run(data_root, tmp_path / "text", THREE)
    voice = await _run(data_root, tmp_path / "voice", THREE, voice=voice_run())
    for name in THREE:
        t, v = text[name], voice[name]
        assert v["is_successful"] is True and v["stop_reason"] == t["stop_reason"], v.get("error")
        assert v["db_hash"] == t["db_hash"] == v["expected_db_hash"]
        assert v["agent_backend"] == "voice:replay"
        summary = v["voice"]
        assert summary["sample_rate"] == 16000 and summary["tts"] == "tone"
        doc = _voice(tmp_path / "voice", name)
        turns = doc["turns"]
        assert len(turns) == v["agent_turns"] and all(t["frames"] > 0 for t in turns)
        assert [t["latency_ms"] for t in turns] == [0.0] * len(turns)  # answered right after the caller
        assert all(t["ttfa_ms"] is not None and t["ttfa_ms"] >= 0 for t in turns)
        assert summary["overlap_ms"] == 0 and summary["wer"] is None
        # the transcript holds each side's own text, as in text mode
        lines = [
            json.loads(x) for x in (tmp_path / "voice" / name / "transcript.jsonl").read_text().splitlines()
        ]
        said = [e["content"] for e in lines if e["role"] == "agent" and e["type"] == "utterance"]
        assert said == [t["text"] for t in turns]
        user_pcm, rate = read_wav((tmp_path / "voice" / name / "audio" / "user.wav").read_bytes())
        agent_pcm, _ = read_wav((tmp_path / "voice" / name / "audio" / "agent.wav").read_bytes())
        assert rate == 16000 and len(user_pcm) == len(agent_pcm) == 2 * round(summary["media_ms"] * 16)
        assert any(user_pcm) and any(agent_pcm)
        # metrics.json reads back through its record: voice last, and only in the voice run
        assert list(v)[-1] == "voice" and doc["summary"] == summary and "voice" not in t
        record = MetricsRecord.from_json(v)
        assert record.voice_run and record.voice is not None and record.to_json() == v
        assert record.voice.latency_ms.count == len(turns) and record.voice.wer_turns is None
        assert not MetricsRecord.from_json(t).voice_run
    assert sorted(m["stop_reason"] for m in voice.values()) == ["exit", "exit", "transfer"]
