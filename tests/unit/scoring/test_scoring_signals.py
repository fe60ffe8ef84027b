"""Each signal function on hand-made cases, on the mock shop's DBs (``mock__cancel_order``: order
O-100 goes from placed to cancelled). eva's predicates on eva's DBs: tests/domains/eva_airline."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine.core.dbhash import db_hash
from engine.core.model import SIGNALS
from engine.domains.registry import plugins
from engine.scoring.judge import JudgeOutcome
from engine.scoring.predicates import evaluate_db_state_assertion
from engine.scoring.signals import (
    BUILTIN_REGISTRY,
    SignalInputs,
    clean_exit_signal,
    compute_signals,
    db_state_assertion_signal,
    db_state_match_signal,
    judge_passed_signal,
    nl_assertion_signal,
)
from engine.spec.loader import load_domain
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR
from tests.mock_domain.eva_fixtures import expected_copy, session


@pytest.fixture(scope="module")
def sc():
    """mock__cancel_order without its own assertions (each test sets the ones it checks)."""
    from dataclasses import replace

    return replace(
        load_domain(MOCK_SPEC_DIR, MOCK_DATA_ROOT, plugins=plugins()).scenario("mock__cancel_order"),
        db_state_assertions=(),
    )


def _inputs(sc, final_db, **kw):
    rules = sc.domain.hash_rules
    return SignalInputs(
        sc,
        session(sc, final_db, **kw.pop("session_kw", {})),
        db_hash=db_hash(final_db, rules) if final_db is not None else None,
        expected_db_hash=db_hash(sc.expected_db, rules),
        **kw,
    )


def test_signal_table_covers_the_six_signals_in_order():
    # the six, then the audio sessions' speech_matches_text (voice runs only)
    assert tuple(BUILTIN_REGISTRY) == (*SIGNALS, "speech_matches_text")
    assert [d.order for d in BUILTIN_REGISTRY.values()] == [10, 20, 30, 40, 50, 60, 70]
    assert [d.voice_only for d in BUILTIN_REGISTRY.values()] == [False] * 6 + [True]


def test_speech_matches_text_is_left_out_of_text_runs_and_not_applicable_without_hearing(sc):
    from engine.core.records.voice import Hearing, TurnStats, VoiceSummary
    from engine.scoring.signals import compute_signals, speech_matches_text_signal

    values, fields = compute_signals(_inputs(sc, expected_copy(sc)))
    assert "speech_matches_text" not in values and "extra_signals" not in fields  # a text run
    stats = TurnStats(0, None, None, None, None)
    deaf = VoiceSummary(16000, 1.0, 1, stats, stats, 0.0, 0, 1.0, 1.0, None, "tone", 0.0, None)
    out = speech_matches_text_signal(_inputs(sc, expected_copy(sc), voice_run=True, voice=deaf))
    assert out.value is None and out.fields["reason"] == "no recogniser"

    def heard(matched_words: int, silent: int = 0) -> VoiceSummary:
        h = Hearing(4, 4, 3, silent, 100, matched_words, 0, 0, 0)
        return VoiceSummary(16000, 1.0, 1, stats, stats, 0.0, 0, 1.0, 1.0, 0.8, "t", 0.0, "r", 4, None, h)

    def value(v: VoiceSummary) -> object:
        return speech_matches_text_signal(_inputs(sc, expected_copy(sc), voice_run=True, voice=v)).value

    assert value(heard(75)) is True and value(heard(74)) is False and value(heard(100, silent=1)) is False


def test_db_state_match_expected_db_passes(sc):
    assert db_state_match_signal(_inputs(sc, expected_copy(sc))).value is True


def test_db_state_match_session_key_is_ignored(sc):
    db = expected_copy(sc)
    assert "session" in sc.domain.hash_rules.excluded_keys
    db["session"] = {"order_id": "O-100", "caller": "x"}
    assert db_state_match_signal(_inputs(sc, db)).value is True


def test_db_state_match_initial_db_fails(sc):
    assert db_state_match_signal(_inputs(sc, sc.fresh_db())).value is False


def test_db_state_match_missing_final_db_is_false(sc):
    assert db_state_match_signal(_inputs(sc, None)).value is False


def test_db_state_match_without_expected_db_is_not_applicable(sc):
    inp = SignalInputs(sc, session(sc, sc.fresh_db()), db_hash="x", expected_db_hash=None)
    assert db_state_match_signal(inp).value is None


@pytest.mark.parametrize(
    ("stop", "clean"),
    [("exit", True), ("transfer", True), ("user_hangup", False), ("timeout", False), ("error", False)],
)
def test_clean_exit(sc, stop, clean):
    assert clean_exit_signal(_inputs(sc, None, session_kw={"stop_reason": stop})).value is clean


def _assertions(sc):
    """Three assertions whose values are read from the scenario's expected DB: the first changes
    during the call (placed -> cancelled), the other two hold on the initial DB as well."""
    want = sc.expected_db
    return [
        {
            "func_name": "order_status",
            "arguments": {"order_id": "O-100"},
            "assert_value": want["orders"]["O-100"]["status"],
            "side": "agent",
        },
        {
            "func_name": "order_status",
            "arguments": {"order_id": "O-101"},
            "assert_value": want["orders"]["O-101"]["status"],
            "side": "agent",
        },
        {"func_name": "credit_balance", "arguments": {"customer_id": "C-1"}, "assert_value": 0},
    ]


def test_the_assertions_differ_between_initial_and_expected_db(sc):
    initial, expected = sc.fresh_db(), sc.expected_db
    assert initial["orders"]["O-100"]["status"] != expected["orders"]["O-100"]["status"]
    assert initial["orders"]["O-101"] == expected["orders"]["O-101"]
    assert initial["customers"]["C-1"]["credit"] == expected["customers"]["C-1"]["credit"] == 0


def test_db_state_assertion_all_pass_on_expected_db(sc):
    out = db_state_assertion_signal(_inputs_with(sc, _assertions(sc), expected_copy(sc)))
    assert [v["passed"] for v in out.fields["db_state_assertion_verdicts"]] == [True, True, True], out.fields
    assert out.value == 1.0


def _inputs_with(sc, assertions, final_db, user_db=None):
    from dataclasses import replace

    scen = replace(sc, db_state_assertions=tuple(assertions))
    return SignalInputs(scen, session(scen, final_db, user_db=user_db))


def test_db_state_assertion_rate_on_initial_db(sc):
    out = db_state_assertion_signal(_inputs_with(sc, _assertions(sc), sc.fresh_db()))
    assert out.value == pytest.approx(2 / 3)  # O-100's status is the one that changes
    assert [v["passed"] for v in out.fields["db_state_assertion_verdicts"]] == [False, True, True]
    assert (
        out.fields["db_state_assertion_verdicts"][0]["actual"] == sc.fresh_db()["orders"]["O-100"]["status"]
    )


def test_db_state_assertion_unknown_predicate_fails_with_error(sc):
    out = db_state_assertion_signal(
        _inputs_with(sc, [{"func_name": "nope", "arguments": {}, "assert_value": 1}], expected_copy(sc))
    )
    (verdict,) = out.fields["db_state_assertion_verdicts"]
    assert out.value == 0.0 and verdict["passed"] is False and "unknown predicate 'nope'" in verdict["error"]


def test_db_state_assertion_raising_predicate_fails_with_error(sc):
    bad = {
        "func_name": "order_status",
        "arguments": {"order_id": "NOSUCH"},
        "assert_value": "x",
    }
    (verdict,) = db_state_assertion_signal(_inputs_with(sc, [bad], expected_copy(sc))).fields[
        "db_state_assertion_verdicts"
    ]
    assert verdict["passed"] is False and verdict["error"].startswith("KeyError")


def test_db_state_assertion_user_side_without_user_db_errors(sc):
    user = {**_assertions(sc)[0], "side": "user"}
    (verdict,) = db_state_assertion_signal(_inputs_with(sc, [user], expected_copy(sc))).fields[
        "db_state_assertion_verdicts"
    ]
    assert verdict["passed"] is False and verdict["error"] == "no user DB for this session"


def test_db_state_assertion_user_side_reads_user_db(sc):
    user = {**_assertions(sc)[0], "side": "user"}
    out = db_state_assertion_signal(_inputs_with(sc, [user], sc.fresh_db(), user_db=expected_copy(sc)))
    assert out.value == 1.0


def test_db_state_assertion_none_declared_is_not_applicable(sc):
    assert db_state_assertion_signal(_inputs(sc, expected_copy(sc))).value is None


def test_predicates_come_from_the_domain_plugin(sc):
    assert set(sc.domain.plugin.predicates) == {"order_status", "credit_balance"}
    assert evaluate_db_state_assertion({}, _assertions(sc)[0], {})["error"].startswith("unknown predicate")


def _judge(**kw) -> JudgeOutcome:
    return JudgeOutcome(model="m", base_url=None, threshold=0.9, prompt="p", prompt_sha256="h", **kw)


def test_judge_signals_off_are_not_applicable(sc):
    inp = _inputs(sc, expected_copy(sc))
    assert judge_passed_signal(inp).value is None and nl_assertion_signal(inp).value is None


def test_judge_error_is_not_applicable_with_the_error(sc):
    out = judge_passed_signal(_inputs(sc, expected_copy(sc), judge=_judge(error="APIError: boom")))
    assert out.value is None and out.fields["judge_error"] == "APIError: boom"


def test_judge_verdict_and_nl_rate(sc):
    from dataclasses import replace

    scen = replace(sc, nl_assertions=("a", "b"))
    j = _judge(
        score=0.95,
        passed=True,
        nl_assertion_pass_rate=0.5,
        nl_assertion_verdicts=[{"index": 1, "passed": True}, {"index": 2, "passed": False}],
    )
    inp = SignalInputs(scen, session(scen, None), judge=j)
    assert judge_passed_signal(inp).value is True and judge_passed_signal(inp).fields["judge_score"] == 0.95
    assert nl_assertion_signal(inp).value == 0.5


def test_compute_signals_returns_contract_fields(sc):
    values, fields = compute_signals(_inputs(sc, expected_copy(sc)))
    assert list(values) == list(SIGNALS) and not sc.domain.plugin.diagnostics  # eva's: domains/eva_airline
    for key in (
        "is_action_match",
        "db_state_match",
        "db_state_assertion_pass_rate",
        "nl_assertion_pass_rate",
        "judge_passed",
        "judge_score",
        "clean_exit",
    ):
        assert key in fields


@pytest.mark.parametrize(
    ("returned", "assert_value", "passed", "error"),
    [
        (("FL1", "FL2"), ["FL1", "FL2"], True, None),  # before: a tuple never equalled the YAML list
        (float("nan"), 0.0, False, "not JSON data"),  # before: NaN written into metrics.json
        ({"FL1"}, ["FL1"], False, "not JSON data"),  # before: a set written as the string "{'FL1'}"
        (1, True, False, None),  # True is not 1
        ([True, False], [1, 0], False, None),  # before: nested booleans equalled 1 and 0
        ({"refunded": True}, {"refunded": 1}, False, None),
        ({"a": [1.0, "x"]}, {"a": [1, "x"]}, True, None),
        (1.0, 1, True, None),
    ],
    ids=["tuple", "nan", "set", "int-vs-bool", "nested-bools", "dict-bool", "nested-float", "float-vs-int"],
)
def test_predicate_values_are_compared_as_json(
    monkeypatch: pytest.MonkeyPatch, returned: Any, assert_value: Any, passed: bool, error: str | None
) -> None:
    from engine.scoring import predicates
    from engine.util.artifacts import dumps_json

    verdict = predicates.evaluate_db_state_assertion(
        {"odd": lambda db: returned}, {"func_name": "odd", "arguments": {}, "assert_value": assert_value}, {}
    )
    assert verdict["passed"] is passed
    if error is None:
        assert "error" not in verdict
    else:
        assert error in verdict["error"]
    json.loads(dumps_json(verdict), parse_constant=lambda c: pytest.fail(f"{c} in metrics"))
