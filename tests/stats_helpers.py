"""Statistics written out by hand from their papers' formulas (not through engine.scoring.stats nor
scipy's interval code): the independent expectations of the statistics tests."""

from __future__ import annotations

import numpy as np

#: The 97.5 % point of the standard normal distribution.
Z = 1.959963984540054


def wilson_by_hand(k: int, n: int, z: float = Z) -> tuple[float, float]:
    """The Wilson score interval of k / n: the centre and half-width of the score test."""
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return float(centre - half), float(centre + half)


def newcombe_by_hand(both: int, only_a: int, only_b: int, neither: int) -> tuple[float, float]:
    """Newcombe (1998) method 10, the hybrid score interval of p_B - p_A for paired verdicts."""
    n = both + only_a + only_b + neither
    pa, pb = (both + only_a) / n, (both + only_b) / n
    (la, ua), (lb, ub) = wilson_by_hand(both + only_a, n), wilson_by_hand(both + only_b, n)
    margins = (both + only_a) * (only_b + neither) * (both + only_b) * (only_a + neither)
    phi = (both * neither - only_a * only_b) / np.sqrt(margins) if margins else 0.0
    delta = np.sqrt((pb - lb) ** 2 - 2 * phi * (pb - lb) * (ua - pa) + (ua - pa) ** 2)
    eps = np.sqrt((ub - pb) ** 2 - 2 * phi * (ub - pb) * (pa - la) + (pa - la) ** 2)
    return max(-1.0, float(pb - pa - delta)), min(1.0, float(pb - pa + eps))
