"""The run-level voice figures (``summary.json`` ``voice``) and their lines in the run summary.

From each audio session's voice summary (``metrics.json`` ``voice``): latency and time to first
audio pooled over every agent turn (p50 / p90 / p95 by nearest rank) with the 95 % interval of
the per-session mean (:func:`engine.scoring.stats.value_interval`: sessions are resampled, as
the turns of one call are not independent); counts of turns talking over the caller, barge-ins
and long silences; the corpus WER and the key entities heard as meant, each with its interval
over sessions (:func:`engine.scoring.stats.rate_interval`; the WER's is
:func:`engine.scoring.stats.ratio_interval`, the same bootstrap of the pooled figure but not
clipped to 100 %, as edits may outnumber the reference words).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from engine.core.records.voice import VoiceSummary
from engine.core.records.voice_run import Share, Spread, VoiceFigures
from engine.scoring.stats import WILSON, rate_interval, ratio_interval, value_interval

#: What the latency's turn count counts: an agent turn is timed when the caller spoke before it and
#: the agent spoke in it (the greeting, or a turn after a silent caller, has no latency).
LATENCY_TURNS = "agent turns with caller speech before them"
#: What time to first audio counts: every agent turn that sent audio (the greeting too).
TTFA_TURNS = "agent turns with audio"
#: How the gate decides, said beside its figure: it is no WER bound (docs/scoring.md).
GATE_RULE = (
    "a turn matches when its transcript is nearer (WER) its own line than the session's other lines "
    "and 3 decoy sentences; a session passes with no silent turn and 75%+ of its words in matching "
    "turns. No WER bound: PocketSphinx hears espeak-ng's formant speech poorly, so the WER stays "
    "high on speech that does carry the line"
)


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


def _share(pairs: Sequence[tuple[int, int]], unit: str, bounded: bool = True) -> Share | None:
    """The pooled rate of per-session (hits, total) counts of ``unit`` and its interval: over
    sessions, ``interval_by`` ``session``: ``rate_interval`` for a rate in 0–1, ``ratio_interval``
    (not clipped to 1) for a WER, whose edits may pass the reference words. Either interval is of
    the pooled figure it stands beside. When the sessions leave nothing to resample (one
    session, or every session at the same rate) ``rate_interval`` falls back to Wilson's over the
    pooled items: ``interval_by`` is then ``unit`` (the items taken as independent, which the
    items of one call are not), never ``session``."""
    pairs = [(h, t) for h, t in pairs if t > 0]
    if not pairs:
        return None
    hits, total = sum(h for h, _ in pairs), sum(t for _, t in pairs)
    ci = rate_interval(pairs) if bounded else ratio_interval(pairs)
    by = "session"
    if ci is not None and ci.method == WILSON and any(t > 1 for _, t in pairs):
        by = unit  # Wilson over the pooled items: the sessions gave no spread to resample
    return Share(hits, total, round(hits / total, 4), ci, unit, len(pairs), by)


def share_text(share: Share | None, hits: str = "") -> str:
    """A run-level share as the summary, the report and the conditions print it: the rate, the
    counts with their unit and the sessions they came from, the interval and what it resamples,
    ``0.0% (0/34 entities in 2 sessions) [95% CI 0.0-65.8%, by session]``; ``hits`` names the
    hits when they are not of the unit (``edits``: ``(288 edits / 313 words in 2 sessions)``).
    ``n/a`` for None or nothing counted."""
    if share is None or share.rate is None:
        return "n/a"
    unit = f" {share.unit}" if share.unit else ""
    n = share.sessions
    where = "" if n is None else f" in {n} session{'' if n == 1 else 's'}"
    counts = f"{share.hits} {hits} / {share.total}" if hits else f"{share.hits}/{share.total}"
    ci = ""
    if share.ci is not None:
        by = {"session": "by session", "session mean": "of the per-session mean"}.get(share.interval_by or "")
        if share.interval_by and share.interval_by == share.unit:  # the items themselves (_share)
            why = "1 session" if n == 1 else "every session at the same rate"
            by = f"{share.unit} as the unit ({why}: no interval by session)"
        ci = f" [95% CI {100 * share.ci.low:.1f}-{100 * share.ci.high:.1f}%{', ' + by if by else ''}]"
    return f"{100 * share.rate:.1f}% ({counts}{unit}{where}){ci}"


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
            "words",
            bounded=False,
        ),
        entities=_share(
            [(s.hearing.entities_heard, s.hearing.entities) for s in heard if s.hearing], "entities"
        ),
        callers=_callers(summaries),
        matched=_share([(s.hearing.matched, s.hearing.transcribed) for s in heard if s.hearing], "turns"),
    )


def _callers(summaries: Sequence[VoiceSummary]) -> dict[str, int] | None:
    """Sessions per caller synthesiser, when some session had a caller voice (``engine:voice``)
    or a perturbation (``[label]``); None otherwise."""
    names = Counter(s.tts for s in summaries)
    if not any(":" in name or "[" in name for name in names):
        return None
    return dict(sorted(names.items()))


def _ms(spread: Spread, name: str, what: str) -> str:
    if not spread.turns:
        return f"{name}: n/a"
    counted = f"{spread.turns} {what}"
    ci = spread.ci
    mean = f"mean {spread.mean:.0f} ms" + (f" [95% CI {ci.low:.0f}-{ci.high:.0f} ms]" if ci else "")
    return (
        f"{name}: p50 {spread.p50:.0f} ms, p90 {spread.p90:.0f} ms, p95 {spread.p95:.0f} ms, "
        f"{mean} ({counted})"
    )


def voice_lines(figures: VoiceFigures | None) -> list[str]:
    """The run summary's voice lines (none for a text run)."""
    if figures is None:
        return []
    lines = [
        f"Voice ({figures.sessions} audio session{'' if figures.sessions == 1 else 's'}):",
        "  " + _ms(figures.latency_ms, "response latency (from the audio)", LATENCY_TURNS),
        "  " + _ms(figures.ttfa_ms, "time to first audio", TTFA_TURNS),
        f"  turn-taking: {figures.talking_over} agent turns over the caller, {figures.barge_ins} "
        f"barge-ins ({figures.barge_ins_yielded} yielded to), {figures.long_silences} silences of 3 s+",
    ]
    if figures.callers:
        lines.append(
            "  callers: "
            + ", ".join(f"{name} ({n} session{'' if n == 1 else 's'})" for name, n in figures.callers.items())
        )
    if figures.wer is None:
        lines.append("  heard: nothing transcribed (no recogniser ran for this run's language or sessions)")
    else:
        lines.append(
            f"  heard: WER {share_text(figures.wer, 'edits')}, "
            f"key entities heard as meant {share_text(figures.entities)}"
        )
        if figures.matched is not None:
            lines.append(f"  speech_matches_text (the gate): turns matched {share_text(figures.matched)}")
            lines.append(f"    ({GATE_RULE})")
    return lines
