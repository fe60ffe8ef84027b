"""The run-level voice figures (``summary.json`` ``voice``) and their lines in the run summary.

From each audio session's voice summary (``metrics.json`` ``voice``): latency and time to first
audio pooled over every agent turn (p50 / p90 / p95 by nearest rank) with the 95 % interval of
the per-session mean (:func:`engine.scoring.stats.value_interval`: sessions are resampled, as
the turns of one call are not independent); counts of turns talking over the caller, barge-ins
and long silences; the corpus WER and the key entities heard as meant, each with its interval
over sessions (:func:`engine.scoring.stats.rate_interval`; the WER's is the interval of the
per-session mean, as edits may outnumber the reference words).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from engine.core.records.voice import VoiceSummary
from engine.core.records.voice_run import Share, Spread, VoiceFigures
from engine.scoring.stats import ci_text, rate_interval, value_interval


def _spread(per_session: Sequence[Sequence[float]]) -> Spread:
    pooled = sorted(v for values in per_session for v in values)
    if not pooled:
        return Spread(0, None, None, None, None, None, None)

    def pct(p: float) -> float:
        return round(pooled[max(0, math.ceil(p * len(pooled)) - 1)], 1)

    means = [sum(v) / len(v) for v in per_session if v]
    ci = value_interval(means)
    return Spread(
        len(pooled),
        round(sum(pooled) / len(pooled), 1),
        pct(0.5),
        pct(0.9),
        pct(0.95),
        round(pooled[-1], 1),
        ci,
    )


def _share(pairs: Sequence[tuple[int, int]], bounded: bool = True) -> Share | None:
    """The pooled rate of per-session (hits, total) and its interval: over sessions for a rate
    in 0–1 (``rate_interval``); for a WER (edits may pass the reference words) the interval of
    the per-session mean, unclipped (``value_interval``)."""
    pairs = [(h, t) for h, t in pairs if t > 0]
    if not pairs:
        return None
    hits, total = sum(h for h, _ in pairs), sum(t for _, t in pairs)
    ci = rate_interval(pairs) if bounded else value_interval([h / t for h, t in pairs])
    return Share(hits, total, round(hits / total, 4), ci)


def voice_figures(summaries: Sequence[VoiceSummary]) -> VoiceFigures | None:
    """The figures of a run's audio sessions (None when it had none)."""
    if not summaries:
        return None
    timings = [s.timing for s in summaries if s.timing is not None]
    heard = [s for s in summaries if s.hearing is not None]
    return VoiceFigures(
        sessions=len(summaries),
        latency_ms=_spread([t.turn_latency_ms for t in timings]),
        ttfa_ms=_spread([t.turn_ttfa_ms for t in timings]),
        talking_over=sum(t.turns_talking_over for t in timings),
        barge_ins=sum(t.barge_ins for t in timings),
        barge_ins_yielded=sum(t.barge_ins_yielded for t in timings),
        long_silences=sum(t.long_silences for t in timings),
        wer=_share(
            [(round((s.wer or 0.0) * s.hearing.words), s.hearing.words) for s in heard if s.hearing],
            bounded=False,
        ),
        entities=_share([(s.hearing.entities_heard, s.hearing.entities) for s in heard if s.hearing]),
        callers=_callers(summaries),
    )


def _callers(summaries: Sequence[VoiceSummary]) -> dict[str, int] | None:
    """Sessions per caller synthesiser, when some session had a caller voice (``engine:voice``)
    or a perturbation (``[label]``); None otherwise."""
    names = Counter(s.tts for s in summaries)
    if not any(":" in name or "[" in name for name in names):
        return None
    return dict(sorted(names.items()))


def _ms(spread: Spread, name: str) -> str:
    if not spread.turns:
        return f"{name}: n/a"
    ci = spread.ci
    mean = f"mean {spread.mean:.0f} ms" + (f" [95% CI {ci.low:.0f}-{ci.high:.0f} ms]" if ci else "")
    return (
        f"{name}: p50 {spread.p50:.0f} ms, p90 {spread.p90:.0f} ms, p95 {spread.p95:.0f} ms, "
        f"{mean} ({spread.turns} turns)"
    )


def voice_lines(figures: VoiceFigures | None) -> list[str]:
    """The run summary's voice lines (none for a text run)."""
    if figures is None:
        return []
    lines = [
        f"Voice ({figures.sessions} audio sessions):",
        "  " + _ms(figures.latency_ms, "response latency (from the audio)"),
        "  " + _ms(figures.ttfa_ms, "time to first audio"),
        f"  turn-taking: {figures.talking_over} agent turns over the caller, {figures.barge_ins} "
        f"barge-ins ({figures.barge_ins_yielded} yielded to), {figures.long_silences} silences of 3 s+",
    ]
    if figures.callers:
        lines.append(
            "  callers: " + ", ".join(f"{name} ({n} sessions)" for name, n in figures.callers.items())
        )
    if figures.wer is None:
        lines.append("  heard: nothing transcribed (no recogniser ran for this run's language or sessions)")
    else:
        w, e = figures.wer, figures.entities
        ent = "n/a" if e is None or e.rate is None else f"{100 * e.rate:.1f}% ({e.hits}/{e.total})"
        lines.append(
            f"  heard: WER {100 * (w.rate or 0):.1f}% ({w.hits} edits / {w.total} words){ci_text(w.ci)}, "
            f"key entities heard as meant {ent}{ci_text(e.ci) if e else ''}"
        )
    return lines
