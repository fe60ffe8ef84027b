"""The statistics of the summaries and of compare (engine/scoring/stats.py) equal scipy's for the
same counts, computed here independently: Wilson over scenarios, the bootstrap over scenarios with
trials (same seed and resamples, as documented), exact McNemar, the paired permutation test, the
minimum detectable difference; and a version 1 summary.json is still read."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
import scipy.stats

from engine.core.records.summary import SUMMARY_SCHEMA, SummaryRecord
from engine.results.paired import paired_rate
from engine.scoring import stats
from engine.scoring.summary import build_summary, render_summary_text
from tests.record_helpers import metrics_row
from tests.stats_helpers import newcombe_by_hand

SEED, RESAMPLES = 20250125, 9999  # the documented seed and resamples of every resampling


def _wilson(k: int, n: int) -> tuple[float, float]:
    ci = scipy.stats.binomtest(k, n).proportion_ci(0.95, method="wilson")
    return ci.low, ci.high


def _cluster_bootstrap(pairs: list[tuple[int, int]]) -> tuple[float, float]:
    """The BCa bootstrap over scenarios of the pooled rate sum(passed) / sum(total)."""
    passed = np.array([p for p, _ in pairs], dtype=float)
    total = np.array([t for _, t in pairs], dtype=float)
    res = scipy.stats.bootstrap(
        (passed, total),
        lambda p, t, axis=-1: p.sum(axis=axis) / t.sum(axis=axis),
        paired=True,
        vectorized=True,
        n_resamples=RESAMPLES,
        method="BCa",
        rng=np.random.default_rng(SEED),
    )
    return res.confidence_interval.low, res.confidence_interval.high


def _flaky_outcomes(scenarios: int = 40, trials: int = 3) -> dict[str, list[bool]]:
    rng = random.Random(7)  # seeded: a third of the scenarios flaky, the rest always pass or fail
    out = {}
    for i in range(scenarios):
        p = (0.5, 1.0, 0.0)[i % 3]
        out[f"s{i:02d}"] = [rng.random() < p for _ in range(trials)]
    return out


@pytest.mark.parametrize(("k", "n"), [(29, 50), (50, 50), (0, 12), (1, 3)])
def test_a_one_trial_rate_has_wilsons_interval(k: int, n: int) -> None:
    rows = [metrics_row(f"s{i:02d}", is_successful=i < k) for i in range(n)]
    summary = build_summary(rows, {"trials": 1})
    body = json.loads(json.dumps(summary.to_json()))
    assert body["schema"] == SUMMARY_SCHEMA
    for rate in (body["overall"], body["task"], body["signals"]["clean_exit"]):
        if rate is body["signals"]["clean_exit"]:
            continue  # every helper row exits cleanly: its own Wilson, below
        assert rate["ci"]["method"] == "wilson"
        assert (rate["ci"]["low"], rate["ci"]["high"]) == pytest.approx(_wilson(k, n), abs=1e-12)
    clean = body["signals"]["clean_exit"]
    assert (clean["ci"]["low"], clean["ci"]["high"]) == pytest.approx(_wilson(n, n), abs=1e-12)
    low, high = _wilson(k, n)
    text = render_summary_text(summary)
    shown = f"[95% CI {100 * low:.1f}-{100 * high:.1f}%]"
    assert f"Overall Success Rate: {100 * k / n:.1f}% ({k}/{n} scenarios; 0 errors) {shown}" in text


def test_with_trials_the_interval_is_the_bootstrap_over_scenarios() -> None:
    outcomes = _flaky_outcomes()
    rows = [metrics_row(name, t, ok) for name, trials in outcomes.items() for t, ok in enumerate(trials, 1)]
    summary = build_summary(rows, {"trials": 3})
    ci = summary.overall.ci
    assert ci is not None and ci.method == "bootstrap"
    pairs = [(sum(v), len(v)) for v in outcomes.values()]
    assert (ci.low, ci.high) == pytest.approx(_cluster_bootstrap(pairs), abs=1e-12)
    # wider than Wilson's over the 120 sessions taken as independent: the scenario is the unit
    passed = sum(p for p, _ in pairs)
    assert ci.high - ci.low > _wilson(passed, 120)[1] - _wilson(passed, 120)[0]
    # pass^k: the mean over scenarios, with its denominator and the bootstrap of that mean
    phk = summary.pass_hat_k
    assert phk is not None and phk.scenarios == {"1": 40, "2": 40, "3": 40} and phk.errors_left_out == 0
    per = [phk.per_scenario[name]["2"] for name in sorted(outcomes)]
    res = scipy.stats.bootstrap(
        (np.array(per),), np.mean, vectorized=True, n_resamples=RESAMPLES, rng=np.random.default_rng(SEED)
    )
    assert phk.ci is not None and phk.ci["2"] is not None
    assert (phk.ci["2"].low, phk.ci["2"].high) == pytest.approx(
        (res.confidence_interval.low, res.confidence_interval.high), abs=1e-12
    )
    # the noise floor: the flaky share and the detectable difference from the within-scenario variance
    noise = summary.noise
    assert noise is not None
    flaky = sorted(name for name, v in outcomes.items() if 0 < sum(v) < len(v))
    assert list(noise.flaky_scenarios) == flaky and noise.flaky_share == pytest.approx(len(flaky) / 40)
    variance = np.mean([(sum(v) / 3) * (1 - sum(v) / 3) * 3 / 2 for v in outcomes.values()])
    z = scipy.stats.norm.ppf(0.975) + scipy.stats.norm.ppf(0.8)
    assert noise.minimum_detectable_difference == pytest.approx(z * np.sqrt(2 * variance / 120))
    assert "Noise floor: " in render_summary_text(summary)


def test_all_alike_scenarios_fall_back_to_wilson_over_the_scenarios() -> None:
    ci = stats.rate_interval([(3, 3)] * 10)
    assert ci is not None and ci.method == "wilson-scenarios"
    assert (ci.low, ci.high) == pytest.approx(_wilson(10, 10))
    half = stats.rate_interval([(1, 2)] * 10)  # no spread: Wilson over the pooled items
    assert half is not None and (half.low, half.high) == pytest.approx(_wilson(10, 20))


def test_mcnemar_and_the_permutation_test_are_scipys() -> None:
    assert (
        stats.mcnemar(10, 0) == pytest.approx(scipy.stats.binomtest(10, 10, 0.5).pvalue)
        and stats.mcnemar(10, 0) < 0.01
    )
    assert stats.mcnemar(7, 3) == pytest.approx(scipy.stats.binomtest(7, 10, 0.5).pvalue)
    assert stats.mcnemar(0, 0) == 1.0
    a = [1.0, 0.5, 0.0, 1.0, 2 / 3, 1 / 3, 1.0, 0.0]
    b = [1.0, 1.0, 0.5, 1.0, 1.0, 2 / 3, 1.0, 1 / 3]
    res = scipy.stats.permutation_test(
        (np.array(a), np.array(b)),
        lambda x, y, axis=-1: np.mean(y - x, axis=axis),
        permutation_type="samples",
        vectorized=True,
        n_resamples=RESAMPLES,
        rng=np.random.default_rng(SEED),
    )
    assert stats.paired_permutation(a, b) == pytest.approx(res.pvalue)


def test_a_paired_rate_says_whether_the_difference_is_real() -> None:
    same = {f"s{i:02d}": (int(i < 40), 1) for i in range(50)}
    none = paired_rate("overall", same, same)
    assert none.p_value == 1.0 and none.difference == 0.0 and none.discordant == (0, 0)
    assert none.verdict.startswith("no detectable difference at n = 50; a difference below ~")
    flipped = {name: (0, 1) if i < 10 else same[name] for i, name in enumerate(sorted(same))}
    worse = paired_rate("overall", same, flipped)
    assert (
        worse.verdict == "worse" and worse.discordant == (10, 0) and worse.difference == pytest.approx(-0.2)
    )
    assert worse.p_value == pytest.approx(scipy.stats.binomtest(10, 10, 0.5).pvalue)
    # one verdict per scenario and run: Newcombe's paired interval (30 both, 10 only in A, 0 only in B)
    assert worse.ci is not None and worse.ci.method == "newcombe"
    assert (worse.ci.low, worse.ci.high) == pytest.approx(newcombe_by_hand(30, 10, 0, 10))
    assert paired_rate("overall", flipped, same).verdict == "better"


def test_a_change_the_test_cannot_confirm_is_not_called_no_difference() -> None:
    """Before: 5 of 6 scenarios pass -> fail read "-83.3 pt [95% CI -97.0 to -27.7 pt], exact McNemar
    p = 0.0625 (5 vs 0 discordant): no detectable difference", the interval and the words at odds
    (a new user's finding). Newcombe's interval can leave 0 out where the exact test cannot reach
    p < 0.05: fewer than 6 discordant scenarios never can."""
    good = {f"s{i}": (1, 1) for i in range(6)}
    five_worse = {name: (0, 1) if i < 5 else good[name] for i, name in enumerate(sorted(good))}
    got = paired_rate("overall", good, five_worse)
    assert got.discordant == (5, 0) and got.p_value == pytest.approx(0.0625)
    assert got.ci is not None and got.ci.high < 0
    assert got.verdict == (
        "inconclusive at n = 6: the 95% interval lies below 0, but exact McNemar does not reach "
        "p < 0.05 (it needs 6 scenarios changing one way at the least); more scenarios would settle it"
    )
    assert paired_rate("overall", five_worse, good).verdict.startswith(
        "inconclusive at n = 6: the 95% interval lies above 0"
    )
    # a change whose interval holds 0: not significant (the rates differ: never "no difference")
    twelve = {f"s{i:02d}": (1, 1) for i in range(12)}
    three_worse = {name: (0, 1) if i < 3 else twelve[name] for i, name in enumerate(sorted(twelve))}
    some = paired_rate("overall", twelve, three_worse)
    assert some.ci is not None and some.ci.low < 0 < some.ci.high
    assert some.verdict.startswith("not significant at n = 12; a difference below ~")


def test_below_six_scenarios_the_verdict_says_no_difference_can_be_significant() -> None:
    """Found by a second breaker pass: ``compare`` of two equal 5-scenario runs said "a difference
    below ~100 pt cannot be seen", as if 100 pt could; with one verdict per scenario exact McNemar
    needs 6 scenarios changing one way, so at n = 5 nothing reaches p < 0.05."""
    five = {f"s{i}": (1, 1) for i in range(5)}
    assert paired_rate("overall", five, five).verdict == (
        "no detectable difference at n = 5; no difference can reach p < 0.05 with so few "
        "(exact McNemar needs 6 scenarios changing one way at the least)"
    )
    one_worse = {name: (0, 1) if name == "s0" else five[name] for name in five}
    assert paired_rate("overall", five, one_worse).verdict.startswith(
        "not significant at n = 5; no difference can reach p < 0.05 with so few"
    )


def test_the_paired_proportion_interval_is_newcombes_and_covers_95_percent() -> None:
    """Before: the bootstrap of the per-scenario differences, zero-width when they were all equal:
    five scenarios all worse read "-100.0 to -100.0 pt" beside "no detectable difference"."""
    for table in ((0, 5, 0, 0), (50, 0, 0, 0), (30, 2, 8, 10), (3, 4, 1, 2)):
        got = stats.paired_proportion_interval(*table)
        assert got is not None and (got.low, got.high) == pytest.approx(newcombe_by_hand(*table))
        assert got.width > 0
    five_worse = stats.paired_proportion_interval(0, 5, 0, 0)
    assert five_worse is not None and five_worse.low == -1.0 and -0.45 < five_worse.high < -0.3
    assert stats.paired_proportion_interval(0, 0, 0, 0) is None
    rng = np.random.default_rng(7)  # coverage near the nominal 95 % (Newcombe's own finding)
    probs, n, truth = (0.5, 0.1, 0.2, 0.2), 40, 0.2 - 0.1
    hits = 0
    for _ in range(1000):
        ci = stats.paired_proportion_interval(*(int(c) for c in rng.multinomial(n, probs)))
        assert ci is not None
        hits += ci.low <= truth <= ci.high
    assert 0.92 <= hits / 1000 <= 0.98


def test_the_minimum_detectable_difference() -> None:
    z = scipy.stats.norm.ppf(0.975) + scipy.stats.norm.ppf(0.8)
    assert stats.minimum_detectable_difference(50, 0.8 * 0.2) == pytest.approx(z * np.sqrt(2 * 0.16 / 50))
    assert stats.smallest_significant_count() == 6  # 2 * 0.5**6 < 0.05 <= 2 * 0.5**5
    assert stats.minimum_detectable_difference(50, 0.0) == pytest.approx(
        6 / 50
    )  # the exact test's resolution
    assert stats.minimum_detectable_difference(3, 0.25) == 1.0
    assert stats.minimum_detectable_difference(0, 0.25) is None


def test_a_version_1_summary_is_still_read() -> None:
    rows = [metrics_row("a"), metrics_row("b", is_successful=False)]
    body = build_summary(rows, {"trials": 1}).to_json()
    del body["schema"]
    for rate in (body["overall"], body["task"], *body["signals"].values()):
        del rate["ci"]
    record = SummaryRecord.from_json(body)
    assert record.overall.ci is None and record.overall.rate == 0.5
    body["overall"]["ci"] = None  # a version 1 file has no interval key
    with pytest.raises(ValueError, match="unknown key"):
        SummaryRecord.from_json(body)
    with pytest.raises(ValueError, match="schema"):
        SummaryRecord.from_json({**body, "schema": "evalctl.summary/9"})


def test_compare_with_one_paired_scenario_prints_no_interval() -> None:
    """Repro 8: one paired scenario printed "-100.0 pt [95% CI -100.0 to -100.0 pt]"."""
    one = paired_rate("overall", {"s1": (1, 1)}, {"s1": (0, 1)})
    assert one.difference == -1.0 and one.ci is None
    assert one.text().startswith("-100.0 pt [95% CI: n too small], exact McNemar")
    assert stats.difference_interval([1.0], [0.0]) is None and stats.difference_interval([], []) is None
    assert stats.difference_interval([1.0, 1.0], [0.0, 0.0]) is not None  # two scenarios agree


def _pooled(h: np.ndarray, t: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.sum(h, axis=axis) / np.sum(t, axis=axis)


def test_a_wers_interval_is_the_bootstrap_of_the_pooled_wer_it_stands_beside() -> None:
    """Issue: the run's WER was the pooled edits / words, its interval that of the mean of the
    per-session WERs, which here lies far from the pooled figure and leaves it out."""
    pairs = [(1, 1)] * 10 + [(5, 100)] * 20  # ten one-word sessions all wrong, long ones at 5 %
    hits = np.array([h for h, _ in pairs], dtype=float)
    total = np.array([t for _, t in pairs], dtype=float)
    pooled = hits.sum() / total.sum()
    ci = stats.ratio_interval(pairs)
    assert ci is not None and ci.method == stats.BOOTSTRAP
    assert ci.low <= pooled <= ci.high
    expected = scipy.stats.bootstrap(
        (hits, total),
        _pooled,
        paired=True,
        vectorized=True,
        n_resamples=RESAMPLES,
        confidence_level=0.95,
        method="BCa",
        rng=np.random.default_rng(SEED),
    ).confidence_interval
    assert (ci.low, ci.high) == pytest.approx((expected.low, expected.high))
    old = stats.value_interval([h / t for h, t in pairs])  # what the interval used to be
    assert old is not None and not old.low <= pooled <= old.high


def test_a_wer_above_one_keeps_its_interval_above_one() -> None:
    ci = stats.ratio_interval([(3, 2), (5, 3), (4, 2), (7, 4)])  # more edits than words
    assert ci is not None and ci.high > 1.0 and ci.low <= 19 / 11 <= ci.high
    assert stats.ratio_interval([(1, 2), (2, 4)]) == stats.Interval(0.5, 0.5, "constant")
    assert stats.ratio_interval([(1, 2)]) is None and stats.ratio_interval([(1, 2), (3, 0)]) is None
