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


def test_pass_hat_k_leaves_out_trials_without_a_verdict() -> None:
    from engine.scoring.summary import build_summary
    from tests.record_helpers import metrics_row

    rows = [metrics_row("qa_1", 1, True), metrics_row("qa_1", 2, "N/A"), metrics_row("qa_1", 3, True)]
    summary = build_summary(rows, {"trials": 3}).to_json()
    # before: the judge's N/A counted as a failure: pass^1 0.667, pass^2 0.333, while the
    # composite rate (which leaves N/A out) read 100%
    assert summary["overall"]["rate"] == 1.0
    assert summary["pass_hat_k"]["per_scenario"]["qa_1"] == {"1": 1.0, "2": 1.0}
    assert summary["pass_hat_k"]["overall"] == {"1": 1.0, "2": 1.0}
