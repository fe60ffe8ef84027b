"""``evalctl compare`` of two voice runs: did latency, time to first audio, WER or the key
entities heard change, and is the change real?

Each measure is taken per scenario (the mean over its trials of the session's value: mean turn
latency and time to first audio from ``metrics.json`` ``voice.timing``, the session's WER, the
share of key entities heard) on the scenarios both runs measured, and compared pairwise:
the mean difference B − A, its 95 % interval (``engine.scoring.stats.difference_interval``, in
the measure's unit) and a paired permutation test (``engine.scoring.stats.paired_permutation``).
A difference is significant when p < 0.05; its direction says whether it is a regression (higher
latency, time to first audio or WER; fewer entities heard) or an improvement.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from engine.core.records.intervals import Interval, interval_json
from engine.core.records.metrics import MetricsRecord
from engine.core.records.voice import VoiceSummary
from engine.scoring.stats import ALPHA, difference_interval, paired_permutation


def _mean(values: tuple[float, ...]) -> float | None:
    return sum(values) / len(values) if values else None


def _latency(v: VoiceSummary) -> float | None:
    return _mean(v.timing.turn_latency_ms) if v.timing else None


def _ttfa(v: VoiceSummary) -> float | None:
    return _mean(v.timing.turn_ttfa_ms) if v.timing else None


def _wer(v: VoiceSummary) -> float | None:
    return v.wer


def _entities(v: VoiceSummary) -> float | None:
    h = v.hearing
    return h.entities_heard / h.entities if h is not None and h.entities else None


#: (name, unit, per-session value, True when higher is worse)
MEASURES: tuple[tuple[str, str, Callable[[VoiceSummary], float | None], bool], ...] = (
    ("response latency", "ms", _latency, True),
    ("time to first audio", "ms", _ttfa, True),
    ("word error rate", "", _wer, True),
    ("key entities heard", "", _entities, False),
)


@dataclass(frozen=True)
class VoiceChange:
    """One measure of run A against run B over ``scenarios`` paired scenarios: the means, the
    mean difference B − A with its interval, the paired test's ``p_value`` and ``verdict``
    (``regression``, ``improvement`` or ``no significant change``)."""

    name: str
    unit: str
    scenarios: int
    mean_a: float
    mean_b: float
    difference: float
    ci: Interval | None
    p_value: float
    verdict: str

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "unit": self.unit,
            "scenarios": self.scenarios,
            "mean_a": round(self.mean_a, 4),
            "mean_b": round(self.mean_b, 4),
            "difference": round(self.difference, 4),
            "ci": interval_json(self.ci),
            "p_value": self.p_value,
            "verdict": self.verdict,
        }

    def text(self) -> str:
        def show(x: float) -> str:
            return f"{x:.0f} ms" if self.unit == "ms" else f"{100 * x:.1f}%"

        sign = "+" if self.difference >= 0 else "-"
        ci = "" if self.ci is None else f" [95% CI {show(self.ci.low)} to {show(self.ci.high)}, by scenario]"
        return (
            f"{self.name}: {show(self.mean_a)} -> {show(self.mean_b)} ({sign}{show(abs(self.difference))}"
            f"{ci}, paired p={self.p_value:.3g}, mean per scenario over {self.scenarios} scenarios): "
            f"{self.verdict}"
        )


def _per_scenario(
    results: Mapping[tuple[str, int], MetricsRecord], value: Callable[[VoiceSummary], float | None]
) -> dict[str, float]:
    found: dict[str, list[float]] = {}
    for (name, _), m in results.items():
        v = value(m.voice) if m.voice is not None else None
        if v is not None:
            found.setdefault(name, []).append(v)
    return {n: sum(vs) / len(vs) for n, vs in found.items()}


def voice_changes(
    ra: Mapping[tuple[str, int], MetricsRecord], rb: Mapping[tuple[str, int], MetricsRecord]
) -> tuple[VoiceChange, ...]:
    """The voice measures both runs have on at least two common scenarios (none for text runs)."""
    out: list[VoiceChange] = []
    for name, unit, value, worse_up in MEASURES:
        a, b = _per_scenario(ra, value), _per_scenario(rb, value)
        common = sorted(a.keys() & b.keys())
        if len(common) < 2:
            continue
        xa, xb = [a[n] for n in common], [b[n] for n in common]
        diff = sum(y - x for x, y in zip(xa, xb, strict=True)) / len(common)
        p = paired_permutation(xa, xb)
        verdict = "no significant change"
        if p < ALPHA and diff != 0:
            verdict = "regression" if (diff > 0) == worse_up else "improvement"
        out.append(
            VoiceChange(
                name,
                unit,
                len(common),
                sum(xa) / len(xa),
                sum(xb) / len(xb),
                diff,
                difference_interval(xa, xb),
                p,
                verdict,
            )
        )
    return tuple(out)
