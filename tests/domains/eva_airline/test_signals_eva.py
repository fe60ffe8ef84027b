"""The signals on eva's real DBs (scenario 1.1.2, a voluntary date change): eva's predicates on the
initial and expected DB, and the diagnostics the eva plugin adds to every metrics record. The signal
logic itself is tested on the mock shop in tests/unit/scoring/test_scoring_signals.py."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from engine.core.model import SIGNALS
from engine.scoring.signals import SignalInputs, compute_signals, db_state_assertion_signal
from tests.mock_domain.eva_fixtures import eva_scenario, expected_copy, session

ASSERTIONS = [
    {
        "func_name": "reservation_status",
        "arguments": {"confirmation_number": "ZK3FFW"},
        "assert_value": "changed",
        "side": "agent",
    },
    {
        "func_name": "active_journeys",
        "arguments": {"confirmation_number": "zk3ffw"},
        "assert_value": ["FL_SK703_20260325"],
        "side": "agent",
    },
    {"func_name": "refund_total", "arguments": {"confirmation_number": "ZK3FFW"}, "assert_value": 0},
]


@pytest.fixture(scope="module")
def sc(data_root: Path):
    return replace(eva_scenario(data_root, "1.1.2"), db_state_assertions=tuple(ASSERTIONS))


def test_eva_predicates_all_pass_on_the_expected_db(sc) -> None:
    out = db_state_assertion_signal(SignalInputs(sc, session(sc, expected_copy(sc))))
    assert [v["passed"] for v in out.fields["db_state_assertion_verdicts"]] == [True, True, True], out.fields
    assert out.value == 1.0


def test_eva_predicates_on_the_initial_db(sc) -> None:
    out = db_state_assertion_signal(SignalInputs(sc, session(sc, sc.fresh_db())))
    assert out.value == pytest.approx(1 / 3)  # only refund_total (0) still holds
    assert out.fields["db_state_assertion_verdicts"][0]["actual"] == "confirmed"


def test_eva_diagnostics_follow_the_six_signals(sc) -> None:
    values, _ = compute_signals(SignalInputs(sc, session(sc, expected_copy(sc))))
    spoken = ["unspelled_codes", "internal_ids_spoken", "leaked_tool_text"]
    assert list(values) == [*SIGNALS, "authenticated", *spoken]
    assert set(sc.domain.plugin.predicates) >= {"reservation_status", "active_journeys", "refund_total"}
