"""Gold parity of the tau2 airline and retail handlers against tau2's own results (the oracle).

For every task of the ``base`` split, the gold actions are replayed with our handlers on the real
upstream DB (from the data root); the end state's tau2 hash and every tool result must equal what
tau2-bench 17e07b1's code computed (``tau2-17e07b1-gold.json``). A second check replays every gold
action under an audit: nothing outside a tool's WRITES declaration may change.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine.core.tools.writeset import json_copy, parse_writes
from engine.domains.tau2_common import Replay, Session, Tau2Hasher, replay_actions, tau2_db_hash
from engine.domains.tau2_common.shapes import render
from tests.domains.tau2.conftest import Tau2Domain

DOMAINS = ("airline", "retail")
#: The oracle's own counts (oracles/README.md, issue #13): tasks, gold calls, gold calls that raise
#: in tau2 and the tasks holding them, tasks whose gold end state is the initial DB.
EXPECTED = {
    "airline": {"tasks": 50, "calls": 142, "errors": 0, "error_tasks": 0, "initial": 24},
    "retail": {"tasks": 114, "calls": 550, "errors": 18, "error_tasks": 15, "initial": 11},
}


@pytest.fixture(scope="module")
def replays(tau2: dict[str, Tau2Domain]) -> dict[str, dict[str, Replay]]:
    """Every base task of both domains replayed once (on copy-on-write views of the shared DB)."""
    return {
        name: {
            tid: replay_actions(d.db, d.actions(tid), d.package.HANDLERS, d.package.WRITES) for tid in d.base
        }
        for name, d in tau2.items()
    }


@pytest.fixture(scope="module")
def hashers(tau2: dict[str, Tau2Domain]) -> dict[str, Tau2Hasher]:
    return {name: Tau2Hasher(d.db, d.package.NULL_DEFAULTS) for name, d in tau2.items()}


def _shown(result: dict[str, Any]) -> tuple[bool, str]:
    """(tau2's error flag, tau2's text) of a handler result."""
    failed = result["status"] == "error"
    return failed, result["message"] if failed else result["content"]


@pytest.mark.parametrize("name", DOMAINS)
def test_the_base_split_is_what_the_oracle_covers(name: str, tau2, tau2_oracle) -> None:
    domain = tau2[name]
    assert len(domain.base) == EXPECTED[name]["tasks"] == len(tau2_oracle[name])
    assert set(domain.base) == set(tau2_oracle[name])
    assert sum(len(domain.actions(t)) for t in domain.base) == EXPECTED[name]["calls"]


@pytest.mark.parametrize("name", DOMAINS)
def test_gold_end_state_hash_equals_the_oracle(name: str, tau2, tau2_oracle, replays, hashers) -> None:
    oracle = tau2_oracle[name]
    matched = [
        t
        for t in tau2[name].base
        if hashers[name].hash(replays[name][t].db) == oracle[t]["gold_end_state_tau2_hash"]
    ]
    assert sorted(set(tau2[name].base) - set(matched), key=int) == []
    assert len(matched) == EXPECTED[name]["tasks"]


@pytest.mark.parametrize("name", DOMAINS)
def test_every_gold_result_equals_the_oracle(name: str, tau2, tau2_oracle, replays) -> None:
    compared, differing, errors, error_tasks = 0, [], 0, set()
    for tid in tau2[name].base:
        gold = tau2_oracle[name][tid]["gold_responses"]
        ours = replays[name][tid].results
        assert len(ours) == len(gold), tid
        for result, expected in zip(ours, gold, strict=True):
            compared += 1
            if _shown(result) != (expected["error"], expected["content"]):
                differing.append((tid, expected["name"]))
            if expected["error"]:
                errors += 1
                error_tasks.add(tid)
            assert all(isinstance(v, str) for v in result.values()), "a result must hold texts only"
    assert differing == []
    assert compared == EXPECTED[name]["calls"]
    assert (errors, len(error_tasks)) == (EXPECTED[name]["errors"], EXPECTED[name]["error_tasks"])


@pytest.mark.parametrize("name", DOMAINS)
def test_initial_db_hash_is_what_the_oracle_implies(name: str, tau2, tau2_oracle, hashers) -> None:
    """Tasks whose gold makes no successful write end in the initial DB: the oracle's hash for them
    is tau2's hash of the initial DB, which the raw file plus the null defaults must reproduce
    (so must the declared record shapes, which the shown texts use)."""
    domain, oracle = tau2[name], tau2_oracle[name]
    writes = domain.package.WRITES
    untouched = [
        tid
        for tid in domain.base
        if not any(writes[g["name"]] and not g["error"] for g in oracle[tid]["gold_responses"])
    ]
    assert len(untouched) == EXPECTED[name]["initial"]
    initial = tau2_db_hash(domain.db, domain.package.NULL_DEFAULTS)
    assert {oracle[tid]["gold_end_state_tau2_hash"] for tid in untouched} == {initial}
    assert hashers[name].hash(domain.db) == initial
    shaped = json.dumps(render(domain.db, domain.package.shapes.DB), sort_keys=True, default=str)
    assert tau2_db_hash(json.loads(shaped), {}) == initial


@pytest.mark.parametrize("name", DOMAINS)
def test_fast_hash_equals_the_plain_one_on_changed_states(name: str, tau2, replays, hashers) -> None:
    writes = tau2[name].package.WRITES
    changed = [t for t in tau2[name].base if any(writes[a["name"]] for a in tau2[name].actions(t))][:6]
    assert len(changed) == 6
    for tid in changed:
        end = replays[name][tid].db
        assert hashers[name].hash(end) == tau2_db_hash(end, tau2[name].package.NULL_DEFAULTS), tid


def test_retail_known_upstream_gold_errors(tau2, tau2_oracle, replays, hashers) -> None:
    """tau2 issue #499: 16 reads fail by design (a wrong id first), two writes fail: task 64's
    exchange on a pending order (the next action does the work) and task 105's only action, whose
    expected DB is therefore the initial DB."""
    failing = [
        (tid, r["name"])
        for tid in tau2["retail"].base
        for r in tau2_oracle["retail"][tid]["gold_responses"]
        if r["error"]
    ]
    writes = tau2["retail"].package.WRITES
    assert sorted((f for f in failing if writes[f[1]]), key=lambda f: int(f[0])) == [
        ("64", "exchange_delivered_order_items"),
        ("105", "exchange_delivered_order_items"),
    ]
    assert _shown(replays["retail"]["105"].results[0]) == (
        True,
        "Error: Insufficient gift card balance to pay for the price difference",
    )
    initial = hashers["retail"].hash(tau2["retail"].db)
    assert hashers["retail"].hash(replays["retail"]["105"].db) == initial
    assert tau2_oracle["retail"]["105"]["gold_end_state_tau2_hash"] == initial


_MISSING = object()


def _audit(session: Session, domain: Tau2Domain, name: str, args: dict[str, Any]) -> list[str]:
    """Run one call and list every change outside the tool's WRITES (tables and records by id)."""
    nodes: set[tuple[str, ...]] = set()
    containers: set[str] = set()
    for path in parse_writes(domain.package.WRITES[name]):
        concrete = path.resolve(args)
        assert concrete is not None and len(concrete) == (1 if path.entries else 2), (
            "/<table>/{id} or /<table>/-"
        )
        if path.entries:
            containers.add(concrete[0])
        else:
            nodes.add(concrete)
    touched = containers | {p[0] for p in nodes}
    before = {t: (table, dict(table)) for t, table in session.db.items()}
    private = {
        (t, k): json_copy(v)
        for t, (_, entries) in before.items()
        for k, v in entries.items()
        if v is not domain.db[t].get(k)
    }
    session.call(domain.package.HANDLERS, domain.package.WRITES, name, args)
    problems: list[str] = []
    if set(session.db) != set(before):
        problems.append(f"top-level keys changed: {sorted(set(session.db) ^ set(before))}")
    for t, (old_table, entries) in before.items():
        table = session.db.get(t, {})
        if t not in touched and table is not old_table:
            problems.append(f"/{t} replaced")
        for k, old in entries.items():
            if (t, k) in nodes:
                continue
            new = table.get(k, _MISSING)
            if new is not old:
                if t not in containers:
                    problems.append(f"/{t}/{k} replaced or removed")
            elif (t, k) in private and new != private[(t, k)]:
                problems.append(f"/{t}/{k} changed in place")
        added = [k for k in table if k not in entries and (t, k) not in nodes]
        if added and t not in containers:
            problems.append(f"/{t}: entries added {added}")
    return problems


#: Calls of the tools no gold action uses (and a few more writes), audited after the gold ones.
EXTRA_ACTIONS: dict[str, list[dict[str, Any]]] = {
    "airline": [
        {"name": "send_certificate", "arguments": {"user_id": "raj_sanchez_7340", "amount": 100}},
        {
            "name": "search_onestop_flight",
            "arguments": {"origin": "LGA", "destination": "SEA", "date": "2024-05-20"},
        },
        {"name": "get_flight_status", "arguments": {"flight_number": "HAT001", "date": "2024-05-01"}},
        {"name": "list_all_airports", "arguments": {}},
        {
            "name": "update_reservation_flights",
            "arguments": {
                "reservation_id": "Q69X3R",
                "cabin": "basic_economy",
                "flights": [
                    {"flight_number": "HAT243", "date": "2024-05-20"},
                    {"flight_number": "HAT206", "date": "2024-05-23"},
                ],
                "payment_id": "gift_card_4964153",
            },
        },
        {"name": "cancel_reservation", "arguments": {"reservation_id": "Q69X3R"}},
    ],
    "retail": [
        {"name": "list_all_product_types", "arguments": {}},
        {
            "name": "modify_pending_order_payment",
            "arguments": {"order_id": "#W6779827", "payment_method_id": "credit_card_9789590"},
        },
        {
            "name": "cancel_pending_order",
            "arguments": {"order_id": "#W6779827", "reason": "no longer needed"},
        },
    ],
}


@pytest.mark.parametrize("name", DOMAINS)
def test_no_handler_changes_anything_outside_its_writes(name: str, tau2) -> None:
    """Every gold action (and a few calls of the tools gold never uses), audited; then the shared
    DB must still equal the file (a record changed in place through a shared object shows there)."""
    domain = tau2[name]
    problems: list[str] = []
    batches = {tid: domain.actions(tid) for tid in domain.base} | {"extra": EXTRA_ACTIONS[name]}
    called = {a["name"] for actions in batches.values() for a in actions}
    assert called == set(domain.package.HANDLERS), "every tool is audited"
    for tid, actions in batches.items():
        session = Session(domain.db)
        for action in actions:
            problems += [
                f"task {tid} {action['name']}: {p}"
                for p in _audit(session, domain, action["name"], action["arguments"])
            ]
    assert problems == []
    assert domain.db == json.loads(domain.db_path.read_text(encoding="utf-8"))
