"""eva_airline's spoken-form rules and diagnostics (engine.session.voice.spoken with eva's RULES), on the real
gold conversations, on hand-made lines and through a replay run's metrics and summary. Moved from
tests/unit/voice/test_spoken_form.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.core.model import SessionResult
from engine.core.plugin import DiagnosticInputs
from engine.domains.eva_airline.spoken import RULES
from engine.domains.registry import plugins
from engine.run.runner import run
from engine.session.voice.spoken import agent_lines, session_check
from engine.spec.loader import load_domain
from tests.conftest import SPEC_DIR
from tests.runtime_helpers import run_options

#: The eva 2.1.0 gold agent lines that hold tool-call text: (record id, index among the record's
#: agent lines). Found by reading the gold data (and listed in the voice study, part B3); each is the
#: agent's first line, where its model printed the get_reservation call instead of making it.
LEAKED = {("3.1.3", 0), ("3.3.4", 0), ("4.2.5", 0), ("7.2.2", 0), ("7.3.1", 0)}
LEAKED_CODES = {"3.1.3": "EPXYEK", "3.3.4": "1QTFVX", "4.2.5": "NTJBNE", "7.2.2": "XGHYZ6", "7.3.1": "GQSIHM"}


@pytest.fixture(scope="module")
def eva(data_root: Path) -> dict:
    """eva_airline's scenarios by record id."""
    return {s.record_id: s for s in load_domain(SPEC_DIR, data_root, plugins=plugins()).scenarios}


def _check(scenario, *extra):
    results = [s.result for s in scenario.gold_trace if s.kind == "tool_call"]
    return session_check(
        RULES, [scenario.initial_db, *results, *extra], [t.name for t in scenario.tools.tools]
    )


def test_gold_conversations_flag_exactly_the_five_leaked_lines(eva) -> None:
    leaked, codes, internal, checked = set(), {}, set(), 0
    for sc in eva.values():
        lines = sc.gold_trace.lines("agent")
        checked += len(lines)
        for f in _check(sc).report(lines).findings:
            if f.tool_text:
                leaked.add((sc.record_id, f.index))
            if f.codes:
                codes[sc.record_id] = f.codes
            if f.internal_ids:
                internal.add(sc.record_id)
    assert checked == 202
    assert leaked == LEAKED
    # the leaked call text holds the confirmation number as written; no other gold line says a code
    # unspelled or a journey id at all (66 of them spell codes out)
    assert codes == {rid: (code,) for rid, code in LEAKED_CODES.items()}
    assert internal == set()


def test_codes_ids_and_tool_text_on_hand_made_lines(eva) -> None:
    sc = eva["1.1.2"]  # reservation ZK3FFW on journey FL_SK621_20260320
    issued = {"status": "success", "voucher_code": "MEAL-ZK3FFW-PAX0"}
    check = _check(sc, issued)
    lines = [
        "Your confirmation number is Z, K, three, F, F, W.",  # spelled: clean
        "Your confirmation number is Z K three F F W (ZK3FFW).",  # canonical beside spelled
        "You are on SK621 from AUS.",  # flight number and airport code as written
        "Your voucher code is MEAL-ZK3FFW-PAX0.",  # issued in the session (a tool result)
        "I moved you to FL_SK621_20260320.",  # internal id, written
        "That is F L underscore S K six two one underscore two oh two six oh three two zero.",  # spelled
        'get_reservation({"confirmation_number": "ZK3FFW"})',
        "<tool_call>end_conversation</tool_call>",
        "Let me check, one moment.",
    ]
    found = {f.index: f for f in check.report(lines).findings}
    assert sorted(found) == [1, 2, 3, 4, 5, 6, 7]
    assert found[1].codes == ("ZK3FFW",) and not found[1].internal_ids
    assert found[2].codes == ("SK621", "AUS")
    assert found[3].codes == ("MEAL-ZK3FFW-PAX0",)
    assert found[4].internal_ids == ("FL_SK621_20260320",) and not found[4].codes  # an id, not a code
    assert found[5].internal_ids == ("FL_SK621_20260320",)
    assert found[6].tool_text and found[6].codes == ("ZK3FFW",)
    assert found[7].tool_text == ("<tool_call>", "</tool_call>")


def test_diagnostics_count_agent_lines(eva) -> None:
    sc = eva["3.1.3"]
    lines = sc.gold_trace.lines("agent")
    transcript = [{"role": "agent", "type": "utterance", "content": t} for t in lines]
    transcript.insert(0, {"role": "user", "type": "utterance", "content": "ZK3FFW get_reservation("})
    result = SessionResult(sc.name, 1, "exit", transcript=transcript)
    inp = DiagnosticInputs(sc, result)
    diags = sc.domain.plugin.diagnostics
    assert {n: diags[n](inp) for n in ("unspelled_codes", "internal_ids_spoken", "leaked_tool_text")} == {
        "unspelled_codes": 1,
        "internal_ids_spoken": 0,
        "leaked_tool_text": 1,  # the user's line is not the agent's
    }
    assert agent_lines(transcript) == list(lines)


async def test_replay_run_reports_the_leaks(data_root: Path, tmp_path: Path) -> None:
    names = ("eva_airline__missed_flight_standby", "eva_airline__7_2_2", "eva_airline__1_1_3")  # 3.1.3 leaks
    opts = run_options(
        SPEC_DIR, data_root, scenarios=names, output_dir=tmp_path / "run", progress=False, quiet=True
    )
    report = await run(opts)
    metrics = {
        m["scenario_name"]: m
        for m in (json.loads(p.read_text()) for p in (tmp_path / "run").glob("*/metrics.json"))
    }
    assert {n: metrics[n]["leaked_tool_text"] for n in names} == {names[0]: 1, names[1]: 1, names[2]: 0}
    assert all(m["is_successful"] is True for m in metrics.values())  # diagnostics never gate
    assert "leaked_tool_text: 2 found in 2/3 scenarios" in report.summary_text()


def test_the_initial_db_codes_kept_per_scenario_go_with_it(data_root: Path) -> None:
    """The codes of a scenario's initial DB are collected once per scenario and dropped with it, so
    a long process keeps none for the scenarios it let go."""
    import gc
    import weakref

    from engine.domains.eva_airline import spoken

    scenario = load_domain(SPEC_DIR, data_root, plugins=plugins()).scenarios[0]
    base = spoken._base(scenario)
    assert spoken._base(scenario) is base and base[0]  # collected once; eva's DB holds codes
    key, gone = id(scenario), weakref.ref(scenario)
    del scenario
    gc.collect()
    assert gone() is None and key not in spoken._BASE
