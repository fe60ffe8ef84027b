"""An audio session's part of the report: both waveforms, the turn timeline and the audio files.

From a result folder's ``voice.json`` and ``audio/{user,agent}.wav``
(``engine.session.voice.run``): each side's waveform as :data:`BUCKETS` peak levels (0–1, the
largest absolute sample of each stretch of the session), each utterance's speech segments on
the media timeline, per agent turn its latency, overlap, barge-in and what was heard, and the
relative links the page's ``<audio>`` players load. None for a text result.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine.session.voice.pcm import read_wav
from engine.util.artifacts import read_json

#: Peak levels drawn per side (the waveform's horizontal resolution).
BUCKETS = 800


def _peaks(path: Path) -> list[float]:
    import numpy as np

    try:
        pcm, _ = read_wav(path.read_bytes())
    except (OSError, ValueError, EOFError):
        return []
    x = np.abs(np.frombuffer(pcm[: len(pcm) - len(pcm) % 2], dtype="<i2").astype(np.int32))
    if not len(x):
        return []
    edges = np.linspace(0, len(x), BUCKETS + 1).astype(int)
    peaks = np.maximum.reduceat(x, edges[:-1]) if len(x) >= BUCKETS else x
    return [round(float(p) / 32768.0, 3) for p in peaks]


def voice_detail(sdir: Path, href: Any) -> dict[str, Any] | None:
    """The voice part of one result (see the module docstring); ``href(path)`` makes a link."""
    try:
        doc = read_json(sdir / "voice.json")
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("summary"), dict):
        return None
    summary = doc["summary"]
    utterances = [
        {"r": u.get("role"), "turn": u.get("turn"), "seg": u.get("segments_ms") or []}
        for u in doc.get("utterances", [])
        if isinstance(u, dict)
    ]
    turns = [
        {
            "turn": t.get("turn"),
            "latency": t.get("latency_ms"),
            "stamped": t.get("stamped_latency_ms"),
            "ttfa": t.get("ttfa_ms"),
            "overlap": t.get("overlap_ms"),
            "barge": t.get("barge_in"),
            "heard": t.get("asr_text"),
            "matched": t.get("matched"),
            "text": t.get("text"),
        }
        for t in doc.get("turns", [])
        if isinstance(t, dict)
    ]
    audio = {role: href(sdir / "audio" / f"{role}.wav") for role in ("user", "agent")}
    waves = {role: _peaks(sdir / "audio" / f"{role}.wav") for role in ("user", "agent")}
    return {
        "media_ms": summary.get("media_ms") or 0,
        "utterances": utterances,
        "turns": turns,
        "audio": {r: a for r, a in audio.items() if (sdir / "audio" / f"{r}.wav").is_file()},
        "waves": waves,
    }
