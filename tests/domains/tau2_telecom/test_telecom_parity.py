"""Gold parity of the tau2 telecom domain against what tau2 17e07b1's own code computed (the oracle).

Two replays of every base task (see ``engine.domains.tau2_telecom.gold``):

- ``evaluator``: init, gold actions with no sync between them. Before its final sync this is
  tau2's gold environment itself: its hashes are the oracle's ``gold_end_state_tau2_hash`` and
  ``tau2_user_hash``.
- ``live``: a sync after every call, as in a tau2 conversation. The oracle's synced end state,
  ``gold_responses`` and ``env_assertions_synced`` are what this mode gives, for all 114 tasks.

The evaluator replay plus one final sync reaches the same end state for 108 tasks; the other 6
(the overdue-bill tasks whose gold pays the bill) differ, as pinned below.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from engine.core.tools.writeset import json_copy
from engine.domains.tau2_telecom import (
    AGENT_HANDLERS,
    INIT_FUNCTIONS,
    PREDICATES,
    USER_HANDLERS,
    check_assertion,
    initialise,
    tau2_content,
    tau2_hash,
)
from engine.domains.tau2_telecom.gold import Replay
from tests.domains.tau2_telecom.conftest import Telecom
from tests.domains.tau2_telecom.test_telecom_agent_tools import AGENT_TOOLS_TESTED
from tests.domains.tau2_telecom.test_telecom_user_tools import USER_TOOLS_TESTED


def _gold(task: dict[str, Any]) -> list[dict[str, Any]]:
    return task["evaluation_criteria"]["actions"]


def _payment_tasks(telecom: Telecom) -> set[str]:
    return {t["id"] for t in telecom.tasks if any(a["name"] == "make_payment" for a in _gold(t))}


def test_the_task_set_is_the_114_base_tasks_with_their_counts(telecom: Telecom) -> None:
    tasks = telecom.tasks
    sides = Counter(a["requestor"] for t in tasks for a in _gold(t))
    assert len(tasks) == 114 and set(telecom.oracle) == {t["id"] for t in tasks}
    assert sides == {"assistant": 123, "user": 393}
    assert sum(len(t["initial_state"]["initialization_actions"]) for t in tasks) == 803
    assert sum(len(t["evaluation_criteria"]["env_assertions"]) for t in tasks) == 209
    used_init = {
        (a["env_type"], a["func_name"]) for t in tasks for a in t["initial_state"]["initialization_actions"]
    }
    side = {"assistant": "agent", "user": "user"}
    assert all(name in INIT_FUNCTIONS[side[env]] for env, name in used_init)
    used_predicates = {a["func_name"] for t in tasks for a in t["evaluation_criteria"]["env_assertions"]}
    assert used_predicates <= set(PREDICATES) and len(used_predicates) == 6


def test_every_tool_missing_from_gold_has_its_own_tests(telecom: Telecom) -> None:
    in_gold = {a["name"] for t in telecom.tasks for a in _gold(t)}
    missing = (set(AGENT_HANDLERS) | set(USER_HANDLERS)) - in_gold
    assert len(AGENT_HANDLERS) == 13 and len(USER_HANDLERS) == 30 and len(missing) == 26
    assert missing <= AGENT_TOOLS_TESTED | USER_TOOLS_TESTED


def test_evaluator_replay_before_its_final_sync_is_tau2s_gold_environment(
    telecom: Telecom, evaluator_replays: dict[str, Replay]
) -> None:
    agent = sum(
        tau2_hash(r.unsynced_agent_db, "agent") == telecom.oracle[i]["gold_end_state_tau2_hash"]
        for i, r in evaluator_replays.items()
    )
    user = sum(
        tau2_hash(r.unsynced_user_db, "user") == telecom.oracle[i]["tau2_user_hash"]
        for i, r in evaluator_replays.items()
    )
    assert (agent, user) == (114, 114)


def test_live_replay_reaches_the_oracles_synced_end_state(
    telecom: Telecom, live_replays: dict[str, Replay]
) -> None:
    agent = user = 0
    for task_id, replay in live_replays.items():
        entry = telecom.oracle[task_id]
        expected = entry.get("synced_end_state_tau2_hash", entry["gold_end_state_tau2_hash"])
        agent += tau2_hash(replay.agent_db, "agent") == expected
        user += tau2_hash(replay.user_db, "user") == entry["synced_end_state_tau2_user_hash"]
    assert (agent, user) == (114, 114)
    assert sum("synced_end_state_tau2_hash" in e for e in telecom.oracle.values()) == 6


def test_live_replay_gives_every_gold_tool_result(telecom: Telecom, live_replays: dict[str, Replay]) -> None:
    compared = equal = 0
    for task_id, replay in live_replays.items():
        expected = telecom.oracle[task_id]["gold_responses"]
        assert [(s.name, s.side) for s in replay.steps] == [
            (g["name"], "agent" if g["requestor"] == "assistant" else "user") for g in expected
        ]
        for step, gold in zip(replay.steps, expected, strict=True):
            compared += 1
            equal += tau2_content(step.result) == (gold["error"], gold["content"])
    assert (equal, compared) == (516, 516)


def test_live_replay_meets_every_env_assertion(telecom: Telecom, live_replays: dict[str, Replay]) -> None:
    verdicts = []
    for task in telecom.tasks:
        replay = live_replays[task["id"]]
        mine = [
            check_assertion(replay.agent_db, replay.user_db, a)
            for a in task["evaluation_criteria"]["env_assertions"]
        ]
        assert mine == telecom.oracle[task["id"]]["env_assertions_synced"]
        verdicts.extend(mine)
    assert (sum(verdicts), len(verdicts)) == (209, 209)


def test_evaluator_replay_with_one_final_sync_differs_only_in_the_six_payment_tasks(
    telecom: Telecom, evaluator_replays: dict[str, Replay], live_replays: dict[str, Replay]
) -> None:
    payment = _payment_tasks(telecom)
    assert len(payment) == 6
    differing = {
        task_id
        for task_id, replay in evaluator_replays.items()
        if tau2_hash(replay.agent_db, "agent") != tau2_hash(live_replays[task_id].agent_db, "agent")
        or tau2_hash(replay.user_db, "user") != tau2_hash(live_replays[task_id].user_db, "user")
    }
    assert differing == payment
    for task_id in payment:
        evaluator, live = evaluator_replays[task_id], live_replays[task_id]
        # without a sync the phone never saw the payment request, so nothing was paid ...
        assert [s.result["content"] for s in evaluator.steps if s.name == "make_payment"] == [
            "You do not have a payment request."
        ]
        bill = next(b for b in evaluator.agent_db["bills"] if b["bill_id"] == "B1234321")
        assert bill["status"] == "Awaiting Payment"
        assert next(b for b in live.agent_db["bills"] if b["bill_id"] == "B1234321")["status"] == "Paid"
        # ... and the device action after resume_line still saw the suspended line (no service)
        last = evaluator.steps[-1]
        assert last.name in ("reboot_device", "reseat_sim_card") and "No Signal" in last.result["content"]
        assert evaluator.user_db["surroundings"]["payment_request"] == {
            "bill_id": "B1234321",
            "amount_due": 65.0,
            "paid": False,
        }


def test_evaluator_replay_results_and_assertions_outside_the_payment_tasks(
    telecom: Telecom, evaluator_replays: dict[str, Replay]
) -> None:
    payment = _payment_tasks(telecom)
    same = Counter()
    failing_assertions = Counter()
    for task in telecom.tasks:
        replay = evaluator_replays[task["id"]]
        gold = telecom.oracle[task["id"]]["gold_responses"]
        for step, expected in zip(replay.steps, gold, strict=True):
            key = "payment" if task["id"] in payment else "other"
            same[key, tau2_content(step.result) == (expected["error"], expected["content"])] += 1
        for assertion in task["evaluation_criteria"]["env_assertions"]:
            if not check_assertion(replay.agent_db, replay.user_db, assertion):
                assert task["id"] in payment
                failing_assertions[assertion["func_name"]] += 1
    assert same["other", False] == 0 and same["payment", False] == 12
    assert same["other", True] + same["payment", True] == 504
    assert failing_assertions == {"assert_service_status": 6, "assert_no_overdue_bill": 6}


def test_after_initialisation_alone_exactly_the_twenty_action_tasks_pass(telecom: Telecom) -> None:
    passing = set()
    for task in telecom.tasks:
        agent_db, user_db = json_copy(telecom.agent_db), json_copy(telecom.user_db)
        initialise(agent_db, user_db, task["initial_state"])
        if all(check_assertion(agent_db, user_db, a) for a in task["evaluation_criteria"]["env_assertions"]):
            passing.add(task["id"])
    action_tasks = {t["id"] for t in telecom.tasks if "ACTION" in t["evaluation_criteria"]["reward_basis"]}
    assert len(action_tasks) == 20 and passing == action_tasks
    transfers = {
        t["id"] for t in telecom.tasks if any(a["name"] == "transfer_to_human_agents" for a in _gold(t))
    }
    assert transfers == action_tasks
