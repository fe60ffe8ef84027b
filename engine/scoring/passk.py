"""pass^k over repeated trials, as tau2-bench defines it.

For one scenario run ``n`` times with ``c`` successes, pass^k = C(c, k) / C(n, k): the chance that
k trials drawn without replacement all succeed. The run-level figure is the mean over scenarios.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from math import comb
from typing import TypedDict


class PassHatKTable(TypedDict):
    """pass^k by k (a string key, "1".."max_k"): per scenario, and the mean over scenarios."""

    per_scenario: dict[str, dict[str, float]]
    overall: dict[str, float]


def pass_hat_k(n: int, c: int, k: int) -> float | None:
    """C(c, k) / C(n, k) for ``n`` trials with ``c`` successes; None when k > n or k < 1.

    Raises ValueError when ``c`` is outside 0..n.
    """
    if not 0 <= c <= n:
        raise ValueError(f"successes {c} outside 0..{n}")
    if k < 1 or k > n:
        return None
    return comb(c, k) / comb(n, k)


def pass_hat_k_table(outcomes: Mapping[str, Sequence[bool]], max_k: int) -> PassHatKTable:
    """pass^k for k = 1..max_k, per scenario and overall.

    ``outcomes`` maps scenario name → per-trial success booleans (the caller leaves ``"N/A"``
    trials out, so ``n`` counts the trials with a verdict). Returns
    ``{"per_scenario": {name: {k: value}}, "overall": {k: mean}}``
    with k as a string key (JSON-friendly); a k larger than a scenario's trial count is left out
    of that scenario and of the mean.
    """
    per: dict[str, dict[str, float]] = {}
    for name, trials in sorted(outcomes.items()):
        n, c = len(trials), sum(1 for t in trials if t)
        per[name] = {str(k): v for k in range(1, max_k + 1) if (v := pass_hat_k(n, c, k)) is not None}
    overall: dict[str, float] = {}
    for k in range(1, max_k + 1):
        vals = [row[str(k)] for row in per.values() if str(k) in row]
        if vals:
            overall[str(k)] = sum(vals) / len(vals)
    return {"per_scenario": per, "overall": overall}


def failed_every_trial(outcomes: Mapping[str, Sequence[bool | str]]) -> tuple[str, ...]:
    """The scenarios that failed in every trial with a verdict, sorted: pass^k is 0 for every k.

    ``outcomes`` maps scenario name → per-trial ``is_successful`` (True, False, ``"N/A"``,
    ``"error"``); as in :func:`pass_hat_k_table`, trials without a verdict (``"N/A"``, ``"error"``)
    are left out, so a scenario counts when it has at least one False and no True."""
    return tuple(
        sorted(
            name
            for name, trials in outcomes.items()
            if not any(t is True for t in trials) and any(t is False for t in trials)
        )
    )
