"""eva_airline's db_state_assertion predicates."""

from __future__ import annotations


def test_refund_total_is_in_cents_not_a_float_sum() -> None:
    from engine.scoring.predicates import evaluate_db_state_assertion

    refunds = {
        "R1": {"confirmation_number": "ABC123", "refund_amount": 10.1},
        "R2": {"confirmation_number": "ABC123", "refund_amount": 20.2},
        "R3": {"confirmation_number": "ZZZ999", "refund_amount": 5},
    }
    args = {"confirmation_number": "abc123"}
    assertion = {"func_name": "refund_total", "arguments": args, "assert_value": 30.3}
    # before: 10.1 + 20.2 = 30.299999999999997 failed the assertion
    from engine.domains.eva_airline.predicates import PREDICATES

    verdict = evaluate_db_state_assertion(PREDICATES, assertion, {"refunds": refunds})
    assert (verdict["actual"], verdict["passed"]) == (30.3, True)
