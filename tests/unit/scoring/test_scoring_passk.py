"""pass^k (tau2-bench): C(c,k)/C(n,k) per scenario, mean over scenarios."""

from __future__ import annotations

import pytest

from engine.scoring.passk import pass_hat_k, pass_hat_k_table


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (4, 4, 4, 1.0),
        (4, 3, 1, 0.75),
        (4, 3, 2, 0.5),
        (4, 2, 3, 0.0),
        (3, 0, 1, 0.0),
        (2, 2, 3, None),
    ],
    ids=["all-pass", "k1-is-mean", "k2-3of4", "k-exceeds-c", "none-pass", "k-exceeds-n"],
)
def test_pass_hat_k(n, c, k, expected):
    assert pass_hat_k(n, c, k) == expected


def test_table_means_over_scenarios():
    table = pass_hat_k_table({"a": [True, True, True], "b": [True, False, False]}, 3)
    assert table["per_scenario"]["b"] == {"1": pytest.approx(1 / 3), "2": 0.0, "3": 0.0}
    assert table["overall"]["1"] == pytest.approx((1 + 1 / 3) / 2)
    assert table["overall"]["3"] == pytest.approx(0.5)


def test_bad_counts_raise():
    with pytest.raises(ValueError):
        pass_hat_k(2, 3, 1)
