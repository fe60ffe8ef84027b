"""Whether a difference between two runs over the same scenarios is real (``evalctl compare``).

Per rate (the overall and task rates, each signal's) the scenarios with a verdict in both runs
are paired; each scenario's rate is its passed / counted items over its trials (errors, ``N/A``
and, for the signal rates, stalled results left out, as in the summary). The difference is the
mean over the paired scenarios of B's rate minus A's, with its 95 % interval and a paired test:
when every scenario holds one verdict per run, Newcombe's interval for paired proportions
(``engine.scoring.stats.paired_proportion_interval``: never zero-width, so five scenarios all worse
read −100 to −39 pt, not a certain −100) and exact McNemar on the discordant scenarios; else the
bootstrap over scenarios (``engine.scoring.stats.difference_interval``) and a paired permutation
test over scenarios. The verdict is ``better`` / ``worse`` at p < 0.05; else ``no detectable
difference at n = N; a difference below ~M pt cannot be seen`` when the rates are equal (M the
minimum detectable difference at 80 % power for that n and K:
``engine.scoring.stats.minimum_detectable_difference``), ``not significant at n = N; a difference
below ~M pt cannot be seen`` when they differ, or ``inconclusive at n = N: the 95% interval lies
below 0, but exact McNemar does not reach p < 0.05 ...`` when the interval leaves 0 out and the
test does not (at small n the two can disagree).

With trials, each changed scenario is *consistent* (every trial of A agrees, every trial of B
agrees, and they differ) or *within its own noise* (its verdicts disagree in A or in B). Runs
whose sets of ``error`` or stalled results differ are flagged with the counts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from engine.core.records.intervals import Interval, interval_json
from engine.core.records.metrics import SIGNALS, MetricsRecord, Signal
from engine.scoring.composite import diagnostic_verdict, normalize_verdict
from engine.scoring.stats import (
    ALPHA,
    MIN_PAIRED,
    ci_text,
    difference_interval,
    mcnemar,
    minimum_detectable_difference,
    paired_permutation,
    paired_proportion_interval,
    within_variance,
)
from engine.scoring.summary_rows import SummaryRow, summary_row

Results = Mapping[tuple[str, int], MetricsRecord]
#: (passed, counted) of one result for one rate; None when it has no verdict there.
Counter = Callable[[SummaryRow], tuple[int, int] | None]

MCNEMAR = "exact McNemar"
#: Where the interval would be when there is none (below ``stats.MIN_PAIRED`` paired scenarios).
NO_INTERVAL = " [95% CI: n too small]"
PERMUTATION = "paired permutation"


@dataclass(frozen=True)
class PairedRate:
    """One rate of two runs over their paired ``scenarios``: ``difference`` B − A (−1..1, None
    without a paired scenario) with its 95 % ``ci``; ``test`` and its two-sided ``p_value``;
    ``discordant`` (passed only in A, passed only in B) for McNemar; ``detectable`` the minimum
    detectable difference (0–1) at this n and K; ``verdict`` in words."""

    name: str
    scenarios: int
    trials: float
    difference: float | None
    ci: Interval | None
    test: str
    p_value: float | None
    discordant: tuple[int, int] | None
    detectable: float | None
    verdict: str

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "scenarios": self.scenarios,
            "trials": self.trials,
            "difference": self.difference,
            "ci": interval_json(self.ci),
            "test": self.test,
            "p_value": self.p_value,
            "discordant": None if self.discordant is None else list(self.discordant),
            "minimum_detectable_difference": self.detectable,
            "verdict": self.verdict,
        }

    def text(self) -> str:
        """``+20.0 pt [95% CI +8.0 to +32.0 pt], exact McNemar p = 0.002 (10 vs 0 discordant): better``."""
        if self.difference is None:
            return f"{self.verdict}"
        disc = f" ({self.discordant[0]} vs {self.discordant[1]} discordant)" if self.discordant else ""
        p = "n/a" if self.p_value is None else f"{self.p_value:.3g}"
        ci = ci_text(self.ci, points=True) if self.ci is not None else NO_INTERVAL
        return f"{100 * self.difference:+.1f} pt{ci}, {self.test} p = {p}{disc}: {self.verdict}"


@dataclass(frozen=True)
class NoiseSplit:
    """The scenarios whose pass rate over trials changed: ``consistent`` ones (every trial agrees
    in each run) and those ``within_noise`` (their verdicts disagree in A or B)."""

    consistent: tuple[str, ...]
    within_noise: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"consistent": list(self.consistent), "within_noise": list(self.within_noise)}


def _composite(attr: str) -> Counter:
    def count(row: SummaryRow) -> tuple[int, int] | None:
        verdict = getattr(row, attr)
        if row.is_error or not isinstance(verdict, bool):
            return None
        return int(verdict), 1

    return count


def _signal(name: str) -> Counter:
    def count(row: SummaryRow) -> tuple[int, int] | None:
        if row.is_error or row.stalled:
            return None
        if name in (Signal.DB_STATE_ASSERTION, Signal.NL_ASSERTION):
            passed, total = row.assertions.get(name, (0, 0))
            return (passed, total) if total else None
        if name not in SIGNALS and name not in row.diagnostic_names:
            return None
        value = row.values.get(name)
        if name not in SIGNALS and isinstance(value, int | float) and not isinstance(value, bool):
            return int(value == 0), 1  # a count diagnostic: its clean share
        verdict = (normalize_verdict if name in SIGNALS else diagnostic_verdict)(value)
        return None if verdict is None else (int(verdict), 1)

    return count


def _per_scenario(rows: Iterable[SummaryRow], count: Counter) -> dict[str, tuple[int, int]]:
    out: dict[str, list[int]] = {}
    for row in rows:
        got = count(row)
        if got is None:
            continue
        acc = out.setdefault(row.scenario_name, [0, 0])
        acc[0] += got[0]
        acc[1] += got[1]
    return {name: (p, t) for name, (p, t) in out.items() if t}


def paired_rate(name: str, a: Mapping[str, tuple[int, int]], b: Mapping[str, tuple[int, int]]) -> PairedRate:
    """The paired comparison of one rate from per-scenario (passed, counted) in A and in B."""
    names = sorted(a.keys() & b.keys())
    n = len(names)
    if not n:
        return PairedRate(
            name, 0, 0, None, None, "none", None, None, None, "no scenario with a verdict in both runs"
        )
    ra = [a[s][0] / a[s][1] for s in names]
    rb = [b[s][0] / b[s][1] for s in names]
    counted = sum(a[s][1] + b[s][1] for s in names)
    trials = counted / (2 * n)
    discordant = None
    if all(a[s][1] == 1 and b[s][1] == 1 for s in names):
        only_a = sum(1 for x, y in zip(ra, rb, strict=True) if x > y)
        only_b = sum(1 for x, y in zip(ra, rb, strict=True) if y > x)
        both = sum(1 for x, y in zip(ra, rb, strict=True) if x == y == 1)
        discordant, test, p = (only_a, only_b), MCNEMAR, mcnemar(only_a, only_b)
        pooled = (sum(ra) + sum(rb)) / (2 * n)
        variance = pooled * (1 - pooled)
        # one scenario's verdicts are no interval (as the bootstrap's MIN_PAIRED): "n too small"
        ci = (
            paired_proportion_interval(both, only_a, only_b, n - both - only_a - only_b)
            if n >= MIN_PAIRED
            else None
        )
    else:
        test, p = PERMUTATION, paired_permutation(ra, rb)
        variance = (within_variance([a[s] for s in names]) + within_variance([b[s] for s in names])) / 2
        ci = difference_interval(ra, rb)
    difference = (sum(rb) - sum(ra)) / n
    detectable = minimum_detectable_difference(n, variance, trials)
    verdict = _verdict(n, difference, p, ci, test, discordant, detectable)
    return PairedRate(
        name,
        n,
        round(trials, 3),
        difference,
        ci,
        test,
        p,
        discordant,
        detectable,
        verdict,
    )


#: The fewest discordant scenarios, all one way, that exact McNemar can find significant at ALPHA
#: (two-sided: 2 · 0.5^m < ALPHA).
FEWEST_ONE_WAY = next(m for m in range(1, 64) if 2 * 0.5**m < ALPHA)


def _verdict(
    n: int,
    difference: float,
    p: float,
    ci: Interval | None,
    test: str,
    discordant: tuple[int, int] | None,
    detectable: float | None,
) -> str:
    """The verdict in words: ``better`` / ``worse`` at p < ALPHA; else ``no detectable difference
    ...`` when nothing changed, ``not significant ...`` when something did, or ``inconclusive ...``
    when the interval leaves 0 out but the test does not reach ALPHA (Newcombe's interval and
    the exact test can disagree at small n: 5 of 6 scenarios worse, none better)."""
    if p < ALPHA and difference != 0:
        return "better" if difference > 0 else "worse"
    below = "n/a" if detectable is None else f"{100 * detectable:.0f}"
    tail = f"a difference below ~{below} pt cannot be seen"
    if discordant is not None and n < FEWEST_ONE_WAY:  # even every scenario flipping is not enough
        tail = (
            f"no difference can reach p < {ALPHA:g} with so few ({test} needs {FEWEST_ONE_WAY} "
            "scenarios changing one way at the least)"
        )
    if difference == 0:
        return f"no detectable difference at n = {n}; {tail}"
    if ci is not None and (ci.low > 0 or ci.high < 0):
        side = "above" if ci.low > 0 else "below"
        need = ""
        if discordant is not None and sum(discordant) < FEWEST_ONE_WAY:
            need = f" (it needs {FEWEST_ONE_WAY} scenarios changing one way at the least)"
        return (
            f"inconclusive at n = {n}: the 95% interval lies {side} 0, but {test} does not reach "
            f"p < {ALPHA:g}{need}; more scenarios would settle it"
        )
    return f"not significant at n = {n}; {tail}"


def paired_rates(ra: Results, rb: Results, signals: Iterable[str]) -> tuple[PairedRate, ...]:
    """The paired comparison of the overall rate, the task rate and each of ``signals``."""
    rows_a = [summary_row(m) for m in ra.values()]
    rows_b = [summary_row(m) for m in rb.values()]
    counters: list[tuple[str, Counter]] = [
        ("overall", _composite("is_successful")),
        ("task (excl. clean_exit)", _composite("is_task_successful")),
        *((name, _signal(name)) for name in signals),
    ]
    return tuple(
        paired_rate(name, _per_scenario(rows_a, count), _per_scenario(rows_b, count))
        for name, count in counters
    )


def noise_split(ra: Results, rb: Results) -> NoiseSplit | None:
    """With trials (some scenario has more than one in either run): the scenarios whose pass rate
    changed, split by whether they are flaky in either run; None with one trial per scenario."""
    per_a = _verdicts(ra)
    per_b = _verdicts(rb)
    if all(len(v) <= 1 for v in (*per_a.values(), *per_b.values())):
        return None
    consistent: list[str] = []
    noisy: list[str] = []
    for name in sorted(per_a.keys() & per_b.keys()):
        va, vb = per_a[name], per_b[name]
        if sum(va) / len(va) == sum(vb) / len(vb):
            continue
        (noisy if len(set(va)) > 1 or len(set(vb)) > 1 else consistent).append(name)
    return NoiseSplit(tuple(consistent), tuple(noisy))


def _verdicts(results: Results) -> dict[str, list[bool]]:
    out: dict[str, list[bool]] = {}
    for (name, _), m in sorted(results.items()):
        if not m.is_error and isinstance(m.is_successful, bool):
            out.setdefault(name, []).append(m.is_successful)
    return out


def set_differences(ra: Results, rb: Results, trials: int) -> list[str]:
    """One line per kind of result (``error``, stalled) whose set differs between the runs, with
    the counts: a rate over the rest compares different scenarios."""
    out: list[str] = []
    tests: tuple[tuple[str, Callable[[MetricsRecord], bool]], ...] = (
        ("error", lambda m: m.is_error),
        ("stalled", lambda m: m.stalled),
    )
    for what, test in tests:
        a = {k for k, m in ra.items() if test(m)}
        b = {k for k, m in rb.items() if test(m)}
        if a != b:
            out.append(
                f"the runs' {what} results differ: A {len(a)}, B {len(b)} ({len(a - b)} only in A, "
                f"{len(b - a)} only in B): the rates leave out different results"
            )
    return out
