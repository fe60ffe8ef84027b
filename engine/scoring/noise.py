"""What trials tell of a run's noise: pass^k with its intervals and denominators, and the noise
floor (per-scenario pass rates over trials, the flaky share, the minimum detectable difference).

Input is ``outcomes``: scenario name → its trials' composite verdicts (True / False; trials with
the verdict ``error`` or ``"N/A"`` left out by the caller).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from engine.core.records.intervals import Noise, ScenarioTrials
from engine.core.records.summary import PassHatK
from engine.scoring.passk import pass_hat_k_table
from engine.scoring.stats import mean_interval, minimum_detectable_difference, within_variance


def pass_hat_k_record(outcomes: Mapping[str, Sequence[bool]], trials: int, errors: int) -> PassHatK:
    """pass^k for k = 1..``trials`` (``engine.scoring.passk``), with per k the scenarios it is the
    mean over and its 95 % interval (``engine.scoring.stats.mean_interval``: the bootstrap over
    scenarios); ``errors`` the error trials left out."""
    table = pass_hat_k_table(outcomes, trials)
    per: Mapping[str, Mapping[str, float]] = table["per_scenario"]
    overall: Mapping[str, float] = table["overall"]
    values = {k: [row[k] for row in per.values() if k in row] for k in overall}
    return PassHatK(
        per,
        overall,
        {k: len(v) for k, v in values.items()},
        {k: mean_interval(v) for k, v in values.items()},
        errors,
    )


def noise_floor(outcomes: Mapping[str, Sequence[bool]]) -> Noise:
    """Each scenario's pass rate over its trials and whether it is flaky (its verdicts disagree);
    the flaky share over the scenarios with a verdict; the minimum detectable difference
    (``engine.scoring.stats.minimum_detectable_difference``) of a paired comparison with a run of
    the same n and K (K the mean trials with a verdict per scenario), from the mean
    within-scenario variance (0 when no scenario is flaky: then the exact test's resolution)."""
    per = {
        name: ScenarioTrials(
            sum(trials),
            len(trials),
            sum(trials) / len(trials) if trials else None,
            0 < sum(trials) < len(trials),
        )
        for name, trials in sorted(outcomes.items())
    }
    measured = {name: s for name, s in per.items() if s.trials}
    flaky = tuple(name for name, s in measured.items() if s.flaky)
    sessions = sum(s.trials for s in measured.values())
    n = len(measured)
    mdd = None
    if n:
        variance = within_variance([(s.passed, s.trials) for s in measured.values()])
        mdd = minimum_detectable_difference(n, variance, sessions / n)
    return Noise(n, len(flaky), len(flaky) / n if n else None, flaky, mdd, per)
