"""Acceptance: scenarios whose traces act wrongly fail db_state_match — exactly those — the
summary shows the right k/n, and `evalctl diff` names the differing field of each.

Real eva data, the real runner with replay sides; only the gold traces of four scenarios are
altered (wrong bag count, wrong seat side, wrong refund amount, a cancellation left out).
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

import engine.run.runner as runner
from cli import main
from engine.domains.registry import plugins
from engine.results.diff import diff_run, render_text
from engine.spec.index import whole_index
from engine.spec.loader import LoadedDomain, load_domain
from tests.conftest import SPEC_DIR
from tests.runtime_helpers import alter_gold_call, run_options


def _mutate(trace, tool, change):
    def edit(step):
        if change is None:  # the write never happens
            args = {"confirmation_number": step.arguments["confirmation_number"], "last_name": ""}
            return replace(step, tool="get_reservation", arguments=args)
        return replace(step, arguments={**step.arguments, **change})

    return alter_gold_call(trace, tool, edit)


WRONG = {
    "eva_airline__1_1_3": ("add_baggage_allowance", {"num_bags": 3}, "bags_checked: expected 1, got 3"),
    "eva_airline__voluntary_date_change": ("assign_seat", {"seat_preference": "aisle"}, ".seat: expected '"),
    "eva_airline__5_1_2": ("process_refund", {"refund_amount": 1.5}, "refund_amount: expected"),
    "eva_airline__5_2_2": ("cancel_reservation", None, ".status: expected 'cancelled', got 'confirmed'"),
}
RIGHT = ("eva_airline__4_1_1", "eva_airline__7_2_8")


@pytest.fixture(scope="module")
def wrong_run(data_root, tmp_path_factory):
    loaded = load_domain(SPEC_DIR, data_root, plugins=plugins())
    altered = tuple(
        replace(s, gold_trace=_mutate(s.gold_trace, *WRONG[s.name][:2])) if s.name in WRONG else s
        for s in loaded.scenarios
    )
    patched = LoadedDomain(loaded.domain, altered, loaded.prompts_rendered)
    run_dir = tmp_path_factory.mktemp("wrong") / "run"
    mp = pytest.MonkeyPatch()
    mp.setattr(runner, "index_domain", lambda *a, **k: whole_index(patched))
    try:
        opts = run_options(
            spec_dir=SPEC_DIR,
            data_root=data_root,
            scenarios=(*WRONG, *RIGHT),
            output_dir=run_dir,
            concurrency=3,
            progress=False,
            allow_gold_mismatch=True,  # the WRONG scenarios' gold traces are altered on purpose
        )
        report = runner.run_cli(opts)
    finally:
        mp.undo()
    assert not report.scoring_errors
    return run_dir


def test_exactly_the_wrong_scenarios_fail_db_state_match(wrong_run):
    verdicts = {
        p.parent.name: json.loads(p.read_text())["db_state_match"] for p in wrong_run.glob("*/metrics.json")
    }
    assert verdicts == {**{n: False for n in WRONG}, **{n: True for n in RIGHT}}


def test_summary_shows_the_right_counts(wrong_run):
    text = (wrong_run / "all_summary.txt").read_text()
    assert "Overall Success Rate: 33.3% (2/6 scenarios; 0 errors)" in text
    assert "db_state_match: 33.3% (2/6 scenarios) [95% CI 9.7-70.0%] [gating]" in text
    summary = json.loads((wrong_run / "summary.json").read_text())
    assert sorted(f["scenario"] for f in summary["failed"]) == sorted(WRONG)


def test_diff_names_the_differing_field(wrong_run):
    diffs = {d.scenario: d for d in diff_run(wrong_run)}
    assert sorted(diffs) == sorted(WRONG)
    for name, (_, _, needle) in WRONG.items():
        lines = [str(x) for x in diffs[name].fields]
        assert any(needle in line for line in lines), (name, lines)
        assert diffs[name].failed_signals == ["db_state_match"]
        # the action list is shown next to the difference (5_2_2's only write was left out)
        assert diffs[name].actions == json.loads((wrong_run / name / "actions.json").read_text())
        assert bool(diffs[name].actions) is (name != "eva_airline__5_2_2")


def test_diff_cli_text_and_json(wrong_run, capsys):
    assert main(["diff", str(wrong_run)]) == 0
    out = capsys.readouterr().out
    assert "== eva_airline__1_1_3: FAIL" in out and "bags_checked: expected 1, got 3" in out
    assert "actions (" in out and "add_baggage_allowance(" in out
    assert main(["diff", str(wrong_run), "eva_airline__5_1_2", "--json"]) == 0
    (body,) = json.loads(capsys.readouterr().out)
    assert body["scenario"] == "eva_airline__5_1_2" and body["failed_signals"] == ["db_state_match"]
    assert any("refund_amount" in f["path"] for f in body["fields"])


def test_diff_takes_a_record_id_as_run_does(wrong_run, capsys):
    """Found by a new-user pass: ``run --scenarios 5.1.2`` works, ``diff RUN 5.1.2`` said no such scenario."""
    assert main(["diff", str(wrong_run), "5.1.2", "--json"]) == 0
    (body,) = json.loads(capsys.readouterr().out)
    assert body["scenario"] == "eva_airline__5_1_2" and body["failed_signals"] == ["db_state_match"]


def test_diff_unknown_scenario_is_one_line_error(wrong_run, capsys):
    assert main(["diff", str(wrong_run), "eva_airline__1_1_33"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no scenario named 'eva_airline__1_1_33'" in err


def test_diff_of_a_scenario_the_run_did_not_select_says_so(wrong_run, capsys):
    """Found by a new-user pass: a real scenario left out of the run was "no scenario named
    '2.1.2' (did you mean '1.3.2'?)", as if it did not exist."""
    assert main(["diff", str(wrong_run), "2.1.2"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "'2.1.2' is a scenario of the run's spec folder (scenarios/2.1.2.yaml)" in err
    assert "did not run (it ran 6 scenarios)" in err


def test_diff_not_a_run_dir(tmp_path, capsys):
    assert main(["diff", str(tmp_path)]) == 2
    assert "no scored scenarios" in capsys.readouterr().err


def test_report_prints_table_failures_and_hint(wrong_run, capsys):
    assert main(["report", str(wrong_run)]) == 0
    out = capsys.readouterr().out
    assert "db_state_match" in out and "2/6 scenarios" in out
    assert "eva_airline__5_2_2: db_state_match" in out
    assert f"evalctl diff {wrong_run}" in out.replace("\n", "")


def test_report_without_summary_is_one_line_error(tmp_path, capsys):
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not an evalctl run directory" in err and "--resume" not in err
    (tmp_path / "run.json").write_text("{}")  # a run that never finished: resume is the way on
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no summary.json yet" in err and f"--resume {tmp_path}" in err


async def test_diff_reports_records_added_and_removed(data_root, tmp_path):
    from engine.core.options import ScoringOptions
    from engine.results.scoring_stage import finish_session
    from tests.mock_domain.eva_fixtures import expected_copy, session

    loaded = load_domain(SPEC_DIR, data_root, plugins=plugins())
    extra, missing = (
        loaded.scenario("eva_airline__5_1_2"),
        loaded.scenario("eva_airline__cancellation_refund"),
    )
    doubled = expected_copy(extra)
    (refund_id,) = doubled["refunds"]
    doubled["refunds"]["REF-BOGUS-009"] = dict(doubled["refunds"][refund_id], refund_id="REF-BOGUS-009")
    await finish_session(tmp_path, extra, session(extra, doubled), 1, ScoringOptions())
    emptied = expected_copy(missing)
    (lost_id,) = emptied["refunds"]
    emptied["refunds"] = {}
    await finish_session(tmp_path, missing, session(missing, emptied), 1, ScoringOptions())
    diffs = {d.scenario: d for d in diff_run(tmp_path)}
    assert [line.path for line in diffs[extra.name].records_added] == ["refunds.REF-BOGUS-009"]
    assert [line.path for line in diffs[missing.name].records_removed] == [f"refunds.{lost_id}"]
    assert not diffs[extra.name].fields and not diffs[missing.name].fields
    text = render_text(list(diffs.values()), tmp_path)
    assert "+ record refunds.REF-BOGUS-009 (not expected)" in text
    assert f"- record refunds.{lost_id} (expected, missing)" in text


def _gold_agent_skipping(scenario, skip: str):
    """A ``python:`` agent factory playing ``scenario``'s gold agent turns (the replay agent's
    cut) but never calling ``skip``."""
    from engine.session.backends.replay import gold_script

    turns = gold_script(scenario).agent_turns

    def make_agent(session, tools):
        done = [0]

        async def turn(caller_line):
            k = done[0]
            done[0] += 1
            gold = turns[k] if k < len(turns) else None
            calls = [(n, json.dumps(a)) for n, a in (gold.calls if gold else ()) if n != skip]
            if calls:
                await tools.call_many(calls)
            if gold is None or k == len(turns) - 1:
                await tools.call("end_conversation", "{}", say=gold.text if gold else "Goodbye.")
                return None
            return gold.text

        return turn

    return make_agent


def test_diff_names_a_skipped_gold_call_as_missing_not_wrong_tool(data_root, tmp_path, capsys):
    """Found by a new-user pass: an agent following 1.1.3's gold conversation but never calling
    ``assign_seat`` led ``diff`` with "wrong tool: called add_baggage_allowance, the gold calls
    assign_seat here": nothing wrong was called, a call was missing (its next call is the gold's
    next one)."""
    from engine.session.backends.python_agent import register_agent

    name = "eva_airline__1_1_3"
    scenario = load_domain(SPEC_DIR, data_root, plugins=plugins()).scenario(name)
    spec = register_agent(_gold_agent_skipping(scenario, "assign_seat"), "skips_assign_seat")
    out = tmp_path / "run"
    argv = ["run", str(SPEC_DIR), "--data-root", str(data_root), "--scenarios", "1.1.3", "--agent", spec]
    main([*argv, "--output-dir", str(out), "--no-progress", "--workers", "1"])
    metrics = json.loads((out / name / "metrics.json").read_text())
    assert metrics["is_successful"] is False and metrics["db_state_match"] is False
    calls = [a["action_type"] for a in json.loads((out / name / "actions.json").read_text())]
    assert "assign_seat" not in calls and "add_baggage_allowance" in calls
    attribution = metrics["attribution"]
    assert attribution["cause"] == "agent"
    assert attribution["evidence"].startswith("missing write: the agent never called assign_seat("), (
        attribution
    )
    assert "wrong tool" not in attribution["evidence"]
    event = json.loads((out / name / "transcript.jsonl").read_text().splitlines()[attribution["turn"]])
    assert event["type"] == "tool_call" and event["content"]["name"] == "add_baggage_allowance"
    capsys.readouterr()
    assert main(["diff", str(out), name]) == 0
    shown = capsys.readouterr().out.splitlines()
    assert shown[1].startswith("cause: agent: missing write: the agent never called assign_seat("), shown


def test_a_genuinely_wrong_or_reordered_tool_is_still_a_wrong_tool(data_root):
    """The skip is told from a wrong tool: a write the gold never makes, or the skipped write made
    later (out of order), stays "wrong tool"."""
    from engine.core.model import SessionResult
    from engine.scoring.attribution import attribute

    scenario = load_domain(SPEC_DIR, data_root, plugins=plugins()).scenario("eva_airline__1_1_3")
    gold = {s.tool: s.arguments for s in scenario.gold_trace.steps if s.kind == "tool_call"}

    def cause(*names):
        transcript = [
            {"role": "agent", "type": "tool_call", "content": {"name": n, "arguments": gold.get(n, {})}}
            for n in names
        ]
        result = SessionResult(scenario.name, 1, "exit", transcript=transcript)
        return attribute(scenario, result, ("db_state_match",), False, None).evidence

    skipped = cause("rebook_flight", "add_baggage_allowance")
    assert skipped.startswith("missing write: the agent never called assign_seat(")
    assert "(and" not in skipped
    both = cause("add_baggage_allowance")  # rebook_flight and assign_seat skipped
    assert both.startswith("missing write: the agent never called rebook_flight(")
    assert both.endswith("(and 1 more gold write)")
    swapped = cause("rebook_flight", "add_baggage_allowance", "assign_seat")
    assert swapped == "wrong tool: called add_baggage_allowance, the gold calls assign_seat here"
    other = cause("rebook_flight", "cancel_reservation", "assign_seat", "add_baggage_allowance")
    assert other == "wrong tool: called cancel_reservation, the gold calls assign_seat here"


def test_diff_of_a_run_names_passing_results_that_left_the_gold_path(data_root, tmp_path, capsys):
    """Found by a new-user pass: an agent that skipped a read of 1.1.3's gold still passes (eva's
    gate is the final DB and the call's end) and ``evalctl diff RUN`` said only "no failed
    scenarios"; the gold-path departure it had found showed only in ``diff RUN SCENARIO``."""
    from engine.session.backends.python_agent import register_agent

    name = "eva_airline__1_1_3"
    scenario = load_domain(SPEC_DIR, data_root, plugins=plugins()).scenario(name)
    spec = register_agent(_gold_agent_skipping(scenario, "get_reservation"), "skips_a_read")
    out = tmp_path / "run"
    argv = ["run", str(SPEC_DIR), "--data-root", str(data_root), "--scenarios", "1.1.3", "--no-progress"]
    main([*argv, "--agent", spec, "--output-dir", str(out), "--workers", "1"])
    main([*argv, "--output-dir", str(tmp_path / "replay")])
    assert json.loads((out / name / "metrics.json").read_text())["is_successful"] is True
    capsys.readouterr()
    assert main(["diff", str(out)]) == 0
    text = capsys.readouterr().out
    assert f"{out}: no failed scenarios." in text
    assert (
        "note: 1 passing result left the gold path (the verdict's signals allow it: a skipped read, a "
        f"write that changed nothing): {name}; `evalctl diff {out} NAME` shows where"
    ) in text
    assert main(["diff", str(tmp_path / "replay")]) == 0
    assert "left the gold path" not in capsys.readouterr().out  # the replay agent follows it
