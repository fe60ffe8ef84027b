"""Voice metrics of one audio session, per turn and per session, from its media timeline.

Per agent turn:

- ``latency_ms`` (response latency): from the end of the caller's speech to the start of the
  agent's speech, on the media timeline (speech = 10 ms windows above -50 dBFS); negative when the
  agent started before the caller finished. None when either side said nothing.
- ``ttfa_ms`` (time to first audio): the engine's own clock, from handing the turn over
  (``turn.request`` sent, after the caller's audio) to the arrival of the agent's first audio frame;
  it measures how fast the side answers, whatever it stamps on its frames.
- ``overlap_ms``: how long the agent's speech and the caller's speech run at the same time.
- ``audio_ms``, ``frames``; with a recogniser, ``asr_text`` and ``wer`` (the agent's audio
  against its own text).

Per session: counts, mean / p50 / p90 / max of latency and ttfa, total overlap and the turns with
any, the speech of each side, the corpus WER (total edits / total reference words).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from engine.core.records.voice import TurnStats, VoiceSummary
from engine.session.voice.asr import Recognizer, wer
from engine.session.voice.timeline import Timeline, Utterance


def _overlap(a: tuple[float, float] | None, b: tuple[float, float] | None) -> float:
    if a is None or b is None:
        return 0.0
    return max(0.0, min(a[1], b[1]) - max(a[0], b[0]))


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def turn_metrics(timeline: Timeline, recognizer: Recognizer | None = None) -> list[dict[str, Any]]:
    """One record per agent turn, in order (see the module docstring)."""
    out: list[dict[str, Any]] = []
    callers = [u for u in timeline.utterances if u.role == "user"]
    caller_of = {u.turn: u for u in callers}
    for utt in (u for u in timeline.utterances if u.role == "agent"):
        caller = caller_of.get(utt.turn)
        speech, heard = utt.speech(), caller.speech() if caller is not None else None
        ttfa = None
        if utt.first_audio_at is not None and utt.requested_at is not None:
            ttfa = 1000.0 * (utt.first_audio_at - utt.requested_at)
        row: dict[str, Any] = {
            "turn": utt.turn,
            "caller_speech_ms": _span(heard),
            "agent_speech_ms": _span(speech),
            "latency_ms": _ms(speech[0] - heard[1]) if speech and heard else None,
            "ttfa_ms": _ms(ttfa),
            "overlap_ms": _ms(sum(_overlap(speech, c.speech()) for c in callers)),
            "audio_ms": _ms(1000.0 * (len(utt.pcm) // 2) / utt.rate),
            "frames": utt.frames,
            "text": utt.text,
        }
        if recognizer is not None and utt.pcm:
            heard_text = recognizer.transcribe(bytes(utt.pcm), utt.rate)
            edits, words = wer(utt.text, heard_text)
            row.update(asr_text=heard_text, wer_edits=edits, wer_words=words, wer=_ratio(edits, words))
        out.append(row)
    return out


def _span(bounds: tuple[float, float] | None) -> list[float] | None:
    return None if bounds is None else [round(bounds[0], 1), round(bounds[1], 1)]


def _ratio(a: float, b: float) -> float | None:
    return round(a / b, 4) if b else None


def _stats(values: Sequence[float]) -> TurnStats:
    vals = sorted(values)
    if not vals:
        return TurnStats(0, None, None, None, None)

    def pct(p: float) -> float:  # nearest rank
        return vals[max(0, math.ceil(p * len(vals)) - 1)]

    return TurnStats(len(vals), _ms(sum(vals) / len(vals)), _ms(pct(0.5)), _ms(pct(0.9)), _ms(vals[-1]))


def _speech_ms(utts: Sequence[Utterance]) -> float:
    return sum(s[1] - s[0] for s in (u.speech() for u in utts) if s is not None)


def session_metrics(
    timeline: Timeline,
    turns: Sequence[dict[str, Any]],
    tts: str,
    tts_s: float,
    recognizer: str | None = None,
) -> VoiceSummary:
    """The session's voice summary (``metrics.json`` ``voice``) from its turn records; ``tts`` /
    ``recognizer`` name the engines used, ``tts_s`` the seconds spent synthesising the caller."""
    overlaps = [t["overlap_ms"] for t in turns if t["overlap_ms"]]
    scored = [t for t in turns if "wer_edits" in t]
    edits, words = sum(t["wer_edits"] for t in scored), sum(t["wer_words"] for t in scored)
    return VoiceSummary(
        sample_rate=timeline.rate,
        media_ms=round(timeline.end_ms, 1),
        agent_turns_with_audio=sum(1 for t in turns if t["frames"]),
        latency_ms=_stats([t["latency_ms"] for t in turns if t["latency_ms"] is not None]),
        ttfa_ms=_stats([t["ttfa_ms"] for t in turns if t["ttfa_ms"] is not None]),
        overlap_ms=round(sum(overlaps), 1),
        turns_with_overlap=len(overlaps),
        caller_speech_ms=round(_speech_ms([u for u in timeline.utterances if u.role == "user"]), 1),
        agent_speech_ms=round(_speech_ms([u for u in timeline.utterances if u.role == "agent"]), 1),
        wer=_ratio(edits, words) if scored else None,
        tts=tts,
        tts_s=round(tts_s, 3),
        recognizer=recognizer,
        wer_turns=len(scored) if scored else None,
    )
