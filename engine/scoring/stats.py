"""Intervals, paired tests and detectable differences of a run's rates (scipy does the statistics).

Every interval is a 95 % interval of a rate in 0–1 (:data:`CONFIDENCE`):

- **Wilson** (``scipy.stats.binomtest(k, n).proportion_ci(0.95, method="wilson")``) when each
  counted item is its own scenario (one trial, a boolean signal): a proportion over scenarios.
- **Bootstrap over scenarios** (``scipy.stats.bootstrap``, BCa, :data:`RESAMPLES` resamples,
  seeded with :data:`SEED` so a run's summary is reproducible) when a scenario contributes more
  than one item (trials, predicates, assertions): the scenario is the unit that is resampled, the
  statistic the pooled rate sum(passed) / sum(total). When every scenario has the same rate the
  bootstrap has nothing to resample from; the interval is then Wilson's over the scenarios
  (``wilson-scenarios``: the scenario count as the sample size) when that rate is 0 or 1, else
  Wilson's over the pooled items; never a zero-width one.

Paired tests between two runs over the same scenarios: exact McNemar on the discordant scenarios
(``scipy.stats.binomtest(b, b + c, 0.5)``) when each scenario has one verdict per run, else a paired
permutation test over scenarios (``scipy.stats.permutation_test``, ``permutation_type="samples"``,
seeded). scipy is imported on first use (it costs about half a second);
:func:`preload` imports it in a background thread so a run does not wait for it at the end.
When scipy cannot be imported, every interval function (and the detectable difference) gives
None (:func:`unavailable` says why; a run writes its results and summary without intervals and
exits 3) and the tests raise :class:`StatisticsUnavailable`.
"""

from __future__ import annotations

import contextlib
import functools
import math
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from engine.core.records.intervals import Interval

if TYPE_CHECKING:
    import numpy as np

P = ParamSpec("P")
R = TypeVar("R")

#: The confidence level of every interval.
CONFIDENCE = 0.95
#: The significance level of the paired tests and of the detectable difference.
ALPHA = 0.05
#: The power at which :func:`minimum_detectable_difference` detects a difference.
POWER = 0.80
#: Resamples of every bootstrap and permutation test.
RESAMPLES = 9999
#: The seed of every resampling: the same counts always give the same interval.
SEED = 20250125

WILSON = "wilson"
BOOTSTRAP = "bootstrap"
WILSON_SCENARIOS = "wilson-scenarios"


class StatisticsUnavailable(RuntimeError):
    """scipy (or numpy) cannot be imported: no interval, test or detectable difference can be
    computed. The message names the cause."""


#: Why the statistics could not be loaded in this process (None: not tried, or loaded).
_FAILED: str | None = None


def unavailable() -> str | None:
    """Why this process could not load scipy (one line, e.g. ``scipy cannot be imported
    (ImportError: ...)``), or None when it did or never tried; nothing is imported here."""
    return _FAILED


def _scipy_stats() -> Any:
    """``scipy.stats``; raises :class:`StatisticsUnavailable` when it cannot be imported."""
    global _FAILED
    # about half a second: only when a statistic is asked for; scipy ships no type information
    try:
        import scipy.stats  # type: ignore[import-untyped]
    except Exception as err:  # ImportError, or a broken install failing inside its own import
        _FAILED = f"scipy cannot be imported ({type(err).__name__}: {err})"
        raise StatisticsUnavailable(_FAILED) from err
    return scipy.stats


def _unavailable_is_none(func: Callable[P, R]) -> Callable[P, R | None]:
    """``func`` giving None (no interval or figure: :func:`unavailable` says why) instead of
    raising :class:`StatisticsUnavailable`: a run's summary is written without them."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R | None:
        try:
            return func(*args, **kwargs)
        except StatisticsUnavailable:
            return None

    return wrapper


def _load_quietly() -> None:
    with contextlib.suppress(StatisticsUnavailable):  # said once, by the run, not as a traceback
        _scipy_stats()


def _rng() -> np.random.Generator:
    import numpy as np

    return np.random.default_rng(SEED)


def preload() -> threading.Thread:
    """Import scipy.stats in a daemon thread (a run calls it as it starts, so the summary at its
    end finds scipy loaded); returns the thread. A failed import prints nothing: it is
    :func:`unavailable`'s answer."""
    thread = threading.Thread(target=_load_quietly, name="evalctl-scipy-preload", daemon=True)
    thread.start()
    return thread


@_unavailable_is_none
def wilson(passed: int, total: int) -> Interval | None:
    """The Wilson 95 % interval of ``passed`` / ``total``; None when ``total`` is 0.

    Raises ValueError when ``passed`` is outside 0..total."""
    if total == 0:
        return None
    if not 0 <= passed <= total:
        raise ValueError(f"passed {passed} outside 0..{total}")
    ci = _scipy_stats().binomtest(passed, total).proportion_ci(CONFIDENCE, method="wilson")
    return Interval(float(ci.low), float(ci.high), WILSON)


@_unavailable_is_none
def rate_interval(per_scenario: Sequence[tuple[int, int]]) -> Interval | None:
    """The 95 % interval of the pooled rate of ``per_scenario`` (passed, total) counts, one pair per
    scenario (pairs with total 0 are left out): Wilson when every total is 1, else the bootstrap
    over scenarios (see the module docstring). None when nothing was counted."""
    pairs = [(p, t) for p, t in per_scenario if t > 0]
    if not pairs:
        return None
    passed, total = sum(p for p, _ in pairs), sum(t for _, t in pairs)
    if all(t == 1 for _, t in pairs):
        return wilson(passed, total)
    return _bootstrap_ratio(pairs)


def _bootstrap_ratio(pairs: Sequence[tuple[int, int]]) -> Interval | None:
    import numpy as np

    passed = np.array([p for p, _ in pairs], dtype=float)
    total = np.array([t for _, t in pairs], dtype=float)
    rates = passed / total
    if len(pairs) < 2 or np.all(rates == rates[0]):
        if rates[0] in (0.0, 1.0):
            return _scenario_wilson(float(rates[0]), len(pairs))
        return wilson(int(passed.sum()), int(total.sum()))  # no spread between scenarios to resample

    def pooled(p: np.ndarray, t: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.sum(p, axis=axis) / np.sum(t, axis=axis)

    return _bootstrap((passed, total), pooled, paired=True)


@_unavailable_is_none
def mean_interval(values: Sequence[float]) -> Interval | None:
    """The 95 % interval of the mean of per-scenario ``values`` in 0–1 (pass^k): the bootstrap
    over scenarios, Wilson over the scenarios when they all have the same value. None when empty."""
    import numpy as np

    if not values:
        return None
    data = np.array(values, dtype=float)
    if len(data) < 2 or np.all(data == data[0]):
        return _scenario_wilson(float(data.mean()), len(data))
    return _bootstrap((data,), np.mean)


@_unavailable_is_none
def value_interval(values: Sequence[float]) -> Interval | None:
    """The 95 % interval of the mean of per-session ``values`` in any unit (ms: latency), not
    clipped to 0–1: the bootstrap over sessions (BCa, seeded; percentile when BCa is undefined);
    the value itself (``constant``) when all are equal; None below two values."""
    if len(values) < 2:
        return None
    if all(v == values[0] for v in values):
        return Interval(float(values[0]), float(values[0]), "constant")
    a = [0.0] * len(values)
    return difference_interval(a, list(values))  # the mean of (values - 0)


@_unavailable_is_none
def ratio_interval(pairs: Sequence[tuple[int, int]]) -> Interval | None:
    """The 95 % interval of the pooled ratio sum(hits) / sum(total) of per-session (hits, total)
    counts whose hits may pass the total (a WER: edits over reference words), not clipped to 1:
    the bootstrap over sessions (BCa, seeded, the pairs resampled together; percentile when BCa
    is undefined), so it brackets the pooled figure printed beside it. The ratio itself
    (``constant``) when every session has the same ratio; None below two sessions or when the
    bootstrap has no finite bound. Pairs with total 0 are left out."""
    import numpy as np

    kept = [(h, t) for h, t in pairs if t > 0]
    if len(kept) < 2:
        return None
    hits = np.array([h for h, _ in kept], dtype=float)
    total = np.array([t for _, t in kept], dtype=float)
    ratios = hits / total
    if np.all(ratios == ratios[0]):
        return Interval(float(ratios[0]), float(ratios[0]), "constant")

    def pooled(h: np.ndarray, t: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.sum(h, axis=axis) / np.sum(t, axis=axis)

    ci = _bootstrap((hits, total), pooled, paired=True, upper=math.inf)
    if not (math.isfinite(ci.low) and math.isfinite(ci.high)):
        return None
    return ci


def _scenario_wilson(rate: float, scenarios: int) -> Interval | None:
    """Wilson's interval with the scenario count as the sample size (no spread to resample)."""
    ci = wilson(math.floor(rate * scenarios + 0.5), scenarios)
    return None if ci is None else Interval(ci.low, ci.high, WILSON_SCENARIOS)


def _bootstrap(data: tuple[Any, ...], statistic: Any, paired: bool = False, upper: float = 1.0) -> Interval:
    stats = _scipy_stats()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a degenerate resample is handled below, not printed
        res = stats.bootstrap(
            data,
            statistic,
            n_resamples=RESAMPLES,
            paired=paired,
            vectorized=True,
            confidence_level=CONFIDENCE,
            method="BCa",
            rng=_rng(),
        )
        low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
        if math.isnan(low) or math.isnan(high):  # BCa undefined (e.g. one extreme scenario)
            res = stats.bootstrap(
                data,
                statistic,
                n_resamples=RESAMPLES,
                paired=paired,
                vectorized=True,
                confidence_level=CONFIDENCE,
                method="percentile",
                rng=_rng(),
            )
            low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    return Interval(max(0.0, low), min(upper, high), BOOTSTRAP)


def mcnemar(b: int, c: int) -> float:
    """The exact McNemar p-value (two-sided) of ``b`` scenarios that passed only in run A and ``c``
    that passed only in run B: ``scipy.stats.binomtest(b, b + c, 0.5)``; 1.0 when none differ."""
    if b + c == 0:
        return 1.0
    return float(_scipy_stats().binomtest(b, b + c, 0.5).pvalue)


def paired_permutation(a: Sequence[float], b: Sequence[float]) -> float:
    """The two-sided p-value of a paired permutation test of the mean difference of per-scenario
    rates ``b`` − ``a`` (the runs' labels swapped within scenarios; seeded); 1.0 when no scenario
    differs."""
    import numpy as np

    x, y = np.array(a, dtype=float), np.array(b, dtype=float)
    if len(x) != len(y):
        raise ValueError(f"paired samples of {len(x)} and {len(y)} scenarios")
    if not np.any(x != y) or len(x) < 2:  # one scenario: both labellings are as extreme
        return 1.0

    def mean_difference(u: np.ndarray, v: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.mean(v - u, axis=axis)

    res = _scipy_stats().permutation_test(
        (x, y),
        mean_difference,
        permutation_type="samples",
        vectorized=True,
        n_resamples=RESAMPLES,
        rng=_rng(),
    )
    return float(res.pvalue)


#: The fewest paired scenarios a difference gets an interval from.
MIN_PAIRED = 2
#: The method of :func:`paired_proportion_interval`.
NEWCOMBE = "newcombe"


@_unavailable_is_none
def paired_proportion_interval(both: int, only_a: int, only_b: int, neither: int) -> Interval | None:
    """The 95 % interval of p_B − p_A (−1..1) for two runs' verdicts on the same scenarios, one
    verdict each: ``both`` passed in both runs, ``only_a`` / ``only_b`` passed in that run alone,
    ``neither`` in none. Newcombe's hybrid score interval for paired proportions (Newcombe 1998,
    *Statistics in Medicine* 17: 2635, method 10): each run's :func:`wilson` interval, combined with
    the phi correlation of the 2×2 table. Never zero-width: five scenarios all worse give about
    −100 to −39 pt, not −100 to −100. None without a scenario."""
    n = both + only_a + only_b + neither
    if n == 0:
        return None
    wa, wb = wilson(both + only_a, n), wilson(both + only_b, n)
    if wa is None or wb is None:
        return None
    pa, pb = (both + only_a) / n, (both + only_b) / n
    denominator = (both + only_a) * (only_b + neither) * (both + only_b) * (only_a + neither)
    phi = (both * neither - only_a * only_b) / math.sqrt(denominator) if denominator else 0.0
    down = math.sqrt(
        max(0.0, (pb - wb.low) ** 2 - 2 * phi * (pb - wb.low) * (wa.high - pa) + (wa.high - pa) ** 2)
    )
    up = math.sqrt(
        max(0.0, (wb.high - pb) ** 2 - 2 * phi * (wb.high - pb) * (pa - wa.low) + (pa - wa.low) ** 2)
    )
    difference = pb - pa
    return Interval(max(-1.0, difference - down), min(1.0, difference + up), NEWCOMBE)


@_unavailable_is_none
def difference_interval(a: Sequence[float], b: Sequence[float]) -> Interval | None:
    """The 95 % interval of the mean per-scenario difference ``b`` − ``a`` (−1..1): the bootstrap
    over scenarios (BCa, seeded); when every scenario differs by the same amount the interval is
    that amount (``method`` ``"constant"``: nothing varies to resample). None below
    :data:`MIN_PAIRED` scenarios (one scenario's difference is no interval) or when the bootstrap
    is degenerate (no finite bound): the caller says "n too small"."""
    import numpy as np

    d = np.array(b, dtype=float) - np.array(a, dtype=float)
    if len(d) < MIN_PAIRED:
        return None
    if np.all(d == d[0]):
        return Interval(float(d[0]), float(d[0]), "constant")
    stats = _scipy_stats()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for method in ("BCa", "percentile"):
            res = stats.bootstrap(
                (d,),
                np.mean,
                n_resamples=RESAMPLES,
                vectorized=True,
                confidence_level=CONFIDENCE,
                method=method,
                rng=_rng(),
            )
            low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
            if not (math.isnan(low) or math.isnan(high)):
                break
    if not (math.isfinite(low) and math.isfinite(high)):
        return None
    return Interval(low, high, BOOTSTRAP)


def smallest_significant_count() -> int:
    """The fewest discordant scenarios, all one way, that an exact two-sided test at
    :data:`ALPHA` can call significant (6: 2 · 0.5⁶ < 0.05)."""
    m = 1
    while mcnemar(m, 0) >= ALPHA:
        m += 1
    return m


@_unavailable_is_none
def minimum_detectable_difference(scenarios: int, variance: float, trials: float = 1) -> float | None:
    """The smallest difference of two rates (0–1) over the same ``scenarios`` with ``trials``
    sessions each that a two-sided test at :data:`ALPHA` detects with :data:`POWER` power:
    (z₀.₉₇₅ + z₀.₈₀) · sqrt(2 · ``variance`` / (scenarios · trials)) (normal approximation,
    ``scipy.stats.norm.ppf``), and never below what the exact test can resolve at all:
    :func:`smallest_significant_count` / (scenarios · trials). ``variance`` is one session's
    Bernoulli variance p(1 − p): the run's for one trial, the mean within-scenario variance with
    trials. At most 1.0 (100 points: a handful of scenarios cannot show any difference); None
    without scenarios or without scipy (:func:`unavailable`)."""
    if scenarios <= 0 or trials <= 0:
        return None
    stats = _scipy_stats()
    z = float(stats.norm.ppf(1 - ALPHA / 2) + stats.norm.ppf(POWER))
    sessions = scenarios * trials
    power = z * math.sqrt(2 * max(variance, 0.0) / sessions)
    return min(1.0, max(power, smallest_significant_count() / sessions))


def within_variance(per_scenario: Sequence[tuple[int, int]]) -> float:
    """The mean within-scenario Bernoulli variance of (passed, trials) counts (unbiased per
    scenario: p(1 − p) · n / (n − 1); scenarios of one trial left out); 0.0 when none has two."""
    parts = [(p / n) * (1 - p / n) * n / (n - 1) for p, n in per_scenario if n > 1]
    return sum(parts) / len(parts) if parts else 0.0


def ci_text(ci: Interval | None, points: bool = False) -> str:
    """`` [95% CI 44.2-71.0%]`` (``points``: a difference, `` [95% CI -3.1 to +8.0 pt]``); empty
    for None."""
    if ci is None:
        return ""
    if points:
        return f" [95% CI {100 * ci.low:+.1f} to {100 * ci.high:+.1f} pt]"
    return f" [95% CI {100 * ci.low:.1f}-{100 * ci.high:.1f}%]"
