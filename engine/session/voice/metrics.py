"""Voice metrics of one audio session, per turn and per session, from its media timeline.

Timing is read from the waveform: the speech of each side is found by voice activity detection
(engine.session.voice.vad, WebRTC's VAD), not taken from the stamps a side puts on its frames.
Per agent turn:

- ``latency_ms`` (response latency): from the end of the caller's speech to the start of the
  agent's speech; negative when the agent started before the caller finished (it talked over the
  caller). None when either side said nothing.
- ``stamped_latency_ms``: the same from the agent's own stamps (its first frame's media time
  against the end of the caller's audio), kept as a cross-check; ``stamp_diff_ms`` is
  ``latency_ms - stamped_latency_ms`` (silence it sent before speaking, or audio that is not
  speech, shows there).
- ``ttfa_ms`` (time to first audio): the engine's own clock, from handing the turn over
  (``turn.request`` sent, after the caller's audio) to the arrival of the agent's first audio frame.
- ``overlap_ms``: how long the agent's speech and the caller's speech (backchannels included)
  run at the same time.
- ``barge_in``: the caller started its words of a turn while the agent spoke (``at_ms``; a
  backchannel is not one); ``yielded`` when
  the agent's speech stopped within :data:`YIELD_MS` of it (``yield_ms``), else it talked through.
- ``audio_ms``, ``frames``; with a recogniser, ``asr_text`` (what was heard), ``wer`` (against
  the agent's text), ``matched`` (:func:`speech_match`), ``entities`` / ``entities_heard``
  (engine.session.voice.entities).

Per session (``engine.core.records.voice.VoiceSummary``): counts, mean / p50 / p90 / p95 / max of
latency and ttfa, overlap, barge-ins and how many the agent yielded to, silences of
:data:`LONG_SILENCE_MS` or more where nobody speaks, the corpus WER, the turns whose speech
matched their text and the entities heard as meant.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from engine.core.records.voice import Hearing, Timing, TurnStats, VoiceSummary
from engine.session.voice.asr import wer
from engine.session.voice.entities import entities, heard
from engine.session.voice.timeline import Timeline, Utterance
from engine.session.voice.vad import Segment, vad_name

#: The agent yielded to a barge-in when its speech stopped within this many ms of it.
YIELD_MS = 1000.0
#: A stretch where neither side speaks this long (ms) is a long silence.
LONG_SILENCE_MS = 3000.0
#: Sentences no agent line says: the references a turn's transcript must beat (with the
#: session's other lines) to count as its own text heard (:func:`speech_match`).
DECOYS = (
    "the weather will be sunny tomorrow with a light breeze from the west",
    "please hold while i transfer you to the next available representative",
    "my favourite colour is blue and i like to walk in the park",
)


def _overlap_segments(a: Sequence[Segment], b: Sequence[Segment]) -> float:
    return sum(max(0.0, min(x[1], y[1]) - max(x[0], y[0])) for x in a for y in b)


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def speech_match(text: str, heard_text: str, others: Sequence[str]) -> bool:
    """True when ``heard_text`` is nearer (WER) to ``text`` than to the average of ``others`` and
    :data:`DECOYS`: the audio carries this line, not another one. False for empty ``heard_text``."""
    if not heard_text.strip():
        return False
    edits, words = wer(text, heard_text)
    own = edits / words if words else 1.0
    rivals = [r for r in (*others, *DECOYS) if r.strip()]
    ratios = [e / w for e, w in (wer(r, heard_text) for r in rivals) if w]
    return own < sum(ratios) / len(ratios)


def _barge_ins(callers: Sequence[Utterance], agents: Sequence[Utterance]) -> dict[int, dict[str, Any]]:
    """Per agent turn whose speech the caller started speaking into: ``at_ms`` (media time),
    ``yielded`` and ``yield_ms`` (the agent's speech went on that long after)."""
    out: dict[int, dict[str, Any]] = {}
    for agent in agents:
        for seg in agent.segments():
            for caller in callers:
                for c in caller.segments():
                    if seg[0] < c[0] < seg[1] and agent.turn not in out:
                        went_on = seg[1] - c[0]
                        out[agent.turn] = {
                            "at_ms": round(c[0], 1),
                            "yield_ms": round(went_on, 1),
                            "yielded": went_on <= YIELD_MS,
                        }
    return out


def silences(timeline: Timeline) -> list[Segment]:
    """Stretches of :data:`LONG_SILENCE_MS` or more inside the session where neither side speaks."""
    speech = sorted(seg for u in timeline.utterances for seg in u.segments())
    out: list[Segment] = []
    end = None
    for start, stop in speech:
        if end is not None and start - end >= LONG_SILENCE_MS:
            out.append((end, start))
        end = stop if end is None else max(end, stop)
    return out


def turn_metrics(timeline: Timeline) -> list[dict[str, Any]]:
    """One record per agent turn, in order (see the module docstring)."""
    out: list[dict[str, Any]] = []
    every = [u for u in timeline.utterances if u.role == "user"]  # with the backchannels
    callers = [u for u in every if u.kind == "turn"]
    agents = [u for u in timeline.utterances if u.role == "agent"]
    caller_of = {u.turn: u for u in callers}
    caller_segments = [seg for c in every for seg in c.segments()]
    barge = _barge_ins(callers, agents)  # a backchannel does not take the floor
    for utt in agents:
        caller = caller_of.get(utt.turn)
        speech, said = utt.speech(), caller.speech() if caller is not None else None
        ttfa = None
        if utt.first_audio_at is not None and utt.requested_at is not None:
            ttfa = 1000.0 * (utt.first_audio_at - utt.requested_at)
        latency = speech[0] - said[1] if speech and said else None
        stamped = None
        if caller is not None and caller.end_ms is not None and utt.start_ms is not None and speech:
            stamped = utt.start_ms - caller.end_ms
        row: dict[str, Any] = {
            "turn": utt.turn,
            "caller_speech_ms": _span(said),
            "agent_speech_ms": _span(speech),
            "latency_ms": _ms(latency),
            "stamped_latency_ms": _ms(stamped),
            "stamp_diff_ms": _ms(latency - stamped) if latency is not None and stamped is not None else None,
            "ttfa_ms": _ms(ttfa),
            "overlap_ms": _ms(_overlap_segments(utt.segments(), caller_segments)),
            "barge_in": barge.get(utt.turn),
            "audio_ms": _ms(1000.0 * (len(utt.pcm) // 2) / utt.rate),
            "frames": utt.frames,
            "text": utt.text,
        }
        if utt.heard is not None:
            edits, words = wer(utt.text, utt.heard)
            others = [a.text for a in agents if a is not utt]
            keys = entities(utt.text)
            row.update(
                asr_text=utt.heard,
                wer_edits=edits,
                wer_words=words,
                wer=_ratio(edits, words),
                # the gate asks whether the agent's audio carries its words: judged on the clean
                # line's transcript when the run perturbs the line (the perturbation is ours)
                matched=speech_match(utt.text, utt.heard_clean or utt.heard, others)
                if utt.text.strip()
                else None,
                entities=len(keys),
                entities_heard=sum(heard(k, utt.heard) for k in keys),
            )
        out.append(row)
    return out


def _span(bounds: tuple[float, float] | None) -> list[float] | None:
    return None if bounds is None else [round(bounds[0], 1), round(bounds[1], 1)]


def _ratio(a: float, b: float) -> float | None:
    return round(a / b, 4) if b else None


def _stats(values: Sequence[float]) -> TurnStats:
    vals = sorted(values)
    if not vals:
        return TurnStats(0, None, None, None, None, None)

    def pct(p: float) -> float:  # nearest rank
        return vals[max(0, math.ceil(p * len(vals)) - 1)]

    return TurnStats(
        len(vals), _ms(sum(vals) / len(vals)), _ms(pct(0.5)), _ms(pct(0.9)), _ms(vals[-1]), _ms(pct(0.95))
    )


def _speech_ms(utts: Sequence[Utterance]) -> float:
    return sum(b - a for u in utts for a, b in u.segments())


def _timing(timeline: Timeline, turns: Sequence[dict[str, Any]]) -> Timing:
    barge = [t["barge_in"] for t in turns if t["barge_in"]]
    quiet = silences(timeline)
    return Timing(
        vad=vad_name(),
        stamp_diff_ms=_stats([t["stamp_diff_ms"] for t in turns if t["stamp_diff_ms"] is not None]),
        turns_talking_over=sum(1 for t in turns if t["latency_ms"] is not None and t["latency_ms"] < 0),
        barge_ins=len(barge),
        barge_ins_yielded=sum(1 for b in barge if b["yielded"]),
        long_silences=len(quiet),
        longest_silence_ms=round(max((b - a for a, b in quiet), default=0.0), 1),
        turn_latency_ms=tuple(t["latency_ms"] for t in turns if t["latency_ms"] is not None),
        turn_ttfa_ms=tuple(t["ttfa_ms"] for t in turns if t["ttfa_ms"] is not None),
    )


def _hearing(turns: Sequence[dict[str, Any]], errors: int) -> Hearing | None:
    scored = [t for t in turns if "asr_text" in t]
    if not scored and not errors:
        return None
    spoken = [t for t in turns if t["text"].strip()]
    return Hearing(
        turns=len(spoken),
        transcribed=len(scored),
        matched=sum(1 for t in scored if t.get("matched")),
        silent=sum(1 for t in spoken if t["agent_speech_ms"] is None),
        words=sum(t["wer_words"] for t in scored),
        matched_words=sum(t["wer_words"] for t in scored if t.get("matched")),
        entities=sum(t["entities"] for t in scored),
        entities_heard=sum(t["entities_heard"] for t in scored),
        errors=errors,
    )


def session_metrics(
    timeline: Timeline,
    turns: Sequence[dict[str, Any]],
    tts: str,
    tts_s: float,
    recognizer: str | None = None,
    asr_errors: int = 0,
) -> VoiceSummary:
    """The session's voice summary (``metrics.json`` ``voice``) from its turn records; ``tts`` /
    ``recognizer`` name the engines used, ``tts_s`` the seconds spent synthesising the caller,
    ``asr_errors`` the turns the recogniser failed on."""
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
        timing=_timing(timeline, turns),
        hearing=_hearing(turns, asr_errors),
    )
