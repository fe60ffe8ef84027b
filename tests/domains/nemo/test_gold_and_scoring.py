"""The derived gold conversations of all 35 scenarios replay cleanly with the domain handlers and
score as they should; a silent agent fails every action-matched scenario."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from engine.core.gold import events_trace
from engine.domains import customer_service as cs
from engine.domains import qa, restaurant
from engine.domains.nemo_common import END_TOOL, GOLD_SOURCE, domain_of, evalctl_name, to_gold_events
from engine.scoring import predicates as engine_predicates
from engine.scoring.action_match import is_action_match
from engine.session.backends.replay import split_trace
from tests.domains.nemo.helpers import names, package, release_records, replay

ACTION_MATCHED = names("restaurant", "customer_service")


def _record(name: str) -> dict[str, Any]:
    return release_records()[name]


def test_the_release_has_35_scenarios_in_three_domains() -> None:
    assert len(names()) == 35
    assert (len(names("restaurant")), len(names("customer_service")), len(names("qa"))) == (12, 10, 13)
    assert len(ACTION_MATCHED) == 22
    scenario_names = [evalctl_name(r) for r in release_records().values()]
    assert len(set(scenario_names)) == 35
    assert {"restaurant__fastbite", "qa__simple_qa_1", "qa__simple_qa_3"} <= set(scenario_names)
    assert all(
        n.startswith(f"{domain_of(r)}__")
        for n, r in zip(scenario_names, release_records().values(), strict=True)
    )


def _assert_db_assertions(
    record: dict[str, Any], db: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> list[bool]:
    """Each assertion through the engine's evaluator, with this domain's predicates registered."""
    pkg = package(record)
    verdicts = [
        engine_predicates.evaluate_db_state_assertion(pkg.PREDICATES, a, db)
        for a in pkg.db_state_assertions(record)
    ]
    assert all("error" not in v for v in verdicts), verdicts
    return [v["passed"] for v in verdicts]


@pytest.mark.parametrize("name", names())
def test_gold_replays_and_reproduces_the_reference(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    record = _record(name)
    pkg = package(record)
    db, actions, called = replay(record)
    reference = pkg.reference_answer(record)
    if reference is not None:
        assert is_action_match(reference, actions, pkg.match_options(record)) is True
        assert is_action_match(reference, actions, pkg.match_options(record), strict=True) is True
    checks = _assert_db_assertions(record, db, monkeypatch)
    assert checks and all(checks)
    expected = pkg.expected_db(record)
    if expected is not None:
        assert db == expected
    assert called[-1] == END_TOOL and called.count(END_TOOL) == 1


@pytest.mark.parametrize("name", names("restaurant"))
def test_restaurant_gold_places_the_reference_order(name: str) -> None:
    record = _record(name)
    db, actions, _ = replay(record)
    if restaurant.is_waitlist(record):
        assert [a["action_type"] for a in actions] == ["JoinWaitListTool", "DropWaitListTool"]
        joined = record["reference_answer"][0]["waitlist"]
        assert db["waitlist"] == joined[:-1] == record["reference_answer"][1]["waitlist"]
        return
    ref = record["reference_answer"]
    (order,) = db["orders"]
    assert [(i["name"], f"{i['unit_price']:.2f}", str(i["quantity"])) for i in order["items"]] == [
        (i["name"], i["unit_price"], i["quantity"]) for i in ref["items"]
    ]
    assert f"{order['total_price']:.2f}" == ref["total_price"]
    assert (order["customer_name"], order["customer_phone"]) == (ref["customer_name"], ref["customer_phone"])


@pytest.mark.parametrize("name", names("customer_service"))
def test_customer_service_gold_reproduces_the_account_snapshot(name: str) -> None:
    record = _record(name)
    db, _, called = replay(record)
    ref = record["reference_answer"]
    assert db["accounts"][ref["account_id"]] == ref["account"]  # every field, free text included
    (ticket,) = db["tickets"]
    assert {k: ticket[k] for k in ("issue_summary", "resolution_type", "resolution_details")} == {
        k: ref[k] for k in ("issue_summary", "resolution_type", "resolution_details")
    }
    assert called[0] == "LookupAccountTool"
    assert ("CheckOrderStatusTool" in called) == ("CheckOrderStatusTool" in record["agent_tools"])


@pytest.mark.parametrize("name", names("qa"))
def test_qa_gold_logs_the_reference_answer(name: str) -> None:
    record = _record(name)
    db, actions, called = replay(record)
    assert db["qa_log"] == [qa.judge_reference(record)]
    assert actions == [{"action_type": "SaveQuestionAnswerTool", **qa.judge_reference(record)}]
    assert ("GetCityWeatherTool" in called) == (qa.weather_city(record) is not None)
    assert qa.reference_answer(record) is None and qa.nl_assertions(record) == []


def test_a_silent_agent_fails_every_action_matched_scenario() -> None:
    passed = [
        name
        for name in ACTION_MATCHED
        if is_action_match(
            package(_record(name)).reference_answer(_record(name)),
            [],
            package(_record(name)).match_options(_record(name)),
        )
        is not False
    ]
    assert passed == []
    assert len(ACTION_MATCHED) == 22


def _actions(name: str) -> list[dict[str, Any]]:
    return replay(_record(name))[1]


def test_restaurant_refuses_extra_orders_and_compares_numbers_as_numbers() -> None:
    record = _record("restaurant__pizza_party_order")
    ref, opts = restaurant.reference_answer(record), restaurant.match_options(record)
    gold = _actions("restaurant__pizza_party_order")
    assert is_action_match(ref, gold, opts) is True
    assert is_action_match(ref, gold + copy.deepcopy(gold), opts) is False  # a second order
    extra_item = copy.deepcopy(gold)
    extra_item[0]["items"].append({"name": "Iced Tea", "unit_price": 2.29, "quantity": 1})
    assert is_action_match(ref, extra_item, opts) is False
    as_text = copy.deepcopy(gold)
    as_text[0]["items"][0]["unit_price"] = "11.99"
    assert is_action_match(ref, as_text, opts) is False  # the engine must hand numbers, not strings
    as_float = copy.deepcopy(gold)
    as_float[0]["items"][0]["quantity"] = 2.0
    assert is_action_match(ref, as_float, opts) is True
    shouted = copy.deepcopy(gold)
    shouted[0]["items"][1]["name"] = "CAESAR SALAD!"
    assert is_action_match(ref, shouted, opts) is True  # upstream's case and punctuation flags


def test_waitlist_needs_both_the_join_and_the_drop() -> None:
    record = _record("restaurant__waitlist_join_then_drop")
    ref, opts = restaurant.reference_answer(record), restaurant.match_options(record)
    gold = _actions("restaurant__waitlist_join_then_drop")
    assert is_action_match(ref, gold[:1], opts) is False
    wrong_size = copy.deepcopy(gold)
    wrong_size[0]["party_size"] = 3
    assert is_action_match(ref, wrong_size, opts) is False


def test_customer_service_matches_structured_arguments_only() -> None:
    record = _record("customer_service__billing_dispute")
    ref, opts = cs.reference_answer(record), cs.match_options(record)
    gold = _actions("customer_service__billing_dispute")
    reworded = copy.deepcopy(gold)
    reworded[0]["description"] = "unauthorised warranty"
    reworded[1]["issue_summary"] = "Caller disputes a warranty charge."
    reworded[1]["resolution_details"] = "Refunded the charge."
    assert is_action_match(ref, reworded, opts) is True
    for index, key, value in (
        (0, "amount", 50.0),
        (0, "account_id", "TC-11111"),
        (1, "resolution_type", "escalation"),
    ):
        wrong = copy.deepcopy(gold)
        wrong[index][key] = value
        assert is_action_match(ref, wrong, opts) is False, key


@pytest.mark.parametrize("name", names("customer_service"))
def test_customer_service_assertions_fail_when_the_change_is_missing(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = _record(name)
    untouched = _assert_db_assertions(record, cs.initial_db(record), monkeypatch)
    changes = cs.operation(record) is not None
    assert all(untouched) is not changes  # only the two inform/escalate tasks leave the account as it was


def test_customer_service_free_text_becomes_nl_claims() -> None:
    claims = {n: cs.nl_assertions(_record(n)) for n in names("customer_service")}
    assert all(len(c) >= 2 for c in claims.values())
    billing = " ".join(claims["customer_service__billing_dispute"])
    assert (
        "Extended Warranty" in billing
        and _record("customer_service__billing_dispute")["reference_answer"]["issue_summary"] in billing
    )
    assert any('"wrong item"' in c for c in claims["customer_service__wrong_item"])


@pytest.mark.parametrize("name", names("qa"))
def test_qa_key_term_check_fails_on_an_empty_or_wrong_log(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    record = _record(name)
    assert _assert_db_assertions(record, qa.initial_db(record), monkeypatch) == [False]
    wrong = {"qa_log": [{"question": "q", "answer": "I am not sure, sorry."}]}
    assert _assert_db_assertions(record, wrong, monkeypatch) == [False]


@pytest.mark.parametrize("name", names())
def test_gold_steps_have_one_shape_and_play_as_an_agent_first_trace(name: str) -> None:
    record = _record(name)
    steps = package(record).gold_steps(record)
    for step in steps:
        assert set(step) == {"kind", "text", "tool", "arguments"}
        assert step["kind"] in ("user", "agent", "tool_call")
        assert (
            isinstance(step["text"], str)
            and isinstance(step["tool"], str)
            and isinstance(step["arguments"], dict)
        )
        assert bool(step["tool"]) == (step["kind"] == "tool_call")
        assert bool(step["text"]) == (step["kind"] != "tool_call")
    assert steps[0]["kind"] == "agent"  # the agent greets first, after the kickoff
    assert steps[0]["text"] in record["reference_rendered_prompts"]["agent"]
    script = split_trace(events_trace(to_gold_events(steps)), user_first=False)
    assert list(script.user_lines) == [s["text"] for s in steps if s["kind"] == "user"]
    assert len(script.agent_turns) == len(script.user_lines) + 1
    assert script.agent_turns[0].calls == () and script.agent_turns[0].text == steps[0]["text"]
    assert script.agent_turns[-1].calls[-1] == (END_TOOL, {})
    assert "evalctl" in GOLD_SOURCE and "not upstream" in GOLD_SOURCE
