"""finish_session / is_complete / finish_run on the mock shop's scenarios (spec loader + its data
root), scored like the domain's default (the DB hash and a clean exit gate), with the test plugin's
two diagnostics (tests/mock_domain/diagnostics.py). eva's gold replay: tests/domains/eva_airline."""

from __future__ import annotations

import json
import os
from dataclasses import replace

import pytest

from engine.core.dbhash import db_hash
from engine.core.model import SIGNALS
from engine.core.options import ScoringOptions
from engine.core.records.metrics import METRICS_SCHEMA
from engine.core.render import render_agent_prompt
from engine.results import scoring_stage as results
from engine.results.scoring_stage import finish_run, finish_session, is_complete, scenario_dir
from engine.spec.loader import load_domain
from engine.util import artifacts
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR
from tests.mock_domain.diagnostics import NAMES, plugins_with_diagnostics
from tests.mock_domain.eva_fixtures import expected_copy, session
from tests.record_helpers import metrics_row

OPTS = ScoringOptions()


class _Plain:
    """The mock scenarios gated like the domain's default: no assertions of their own."""

    def __init__(self) -> None:
        self.loaded = load_domain(MOCK_SPEC_DIR, MOCK_DATA_ROOT, plugins=plugins_with_diagnostics())
        self.domain = self.loaded.domain

    def scenario(self, name: str):
        s = self.loaded.scenario(name)
        return replace(
            s, success_signals=self.domain.success_signals, db_state_assertions=(), nl_assertions=()
        )


@pytest.fixture(scope="module")
def loaded():
    return _Plain()


@pytest.fixture(scope="module")
def sc(loaded):
    s = loaded.scenario("mock__cancel_order")
    assert s.fresh_db() != s.expected_db  # the call changes the DB
    return s


async def test_finish_session_writes_every_artifact(tmp_path, sc):
    final = expected_copy(sc)
    m = (
        await finish_session(
            tmp_path, sc, session(sc, final, actions=[{"action_type": "cancel_order"}]), 1, OPTS
        )
    ).to_json()
    d = tmp_path / sc.name
    names = {p.relative_to(d).as_posix() for p in d.rglob("*") if p.is_file()}
    assert names == {
        "metrics.json",
        "session.json",
        "final_scenario_db_hash.txt",
        "final_db.json",
        "expected_db.json",
        "actions.json",
        "tool_calls.json",
        "transcript.jsonl",
        "scenario_config/metadata.json",
        "scenario_config/agent_prompt.md",
        "scenario_config/user_prompt.md",
        "scenario_config/tools.json",
    }
    rules = sc.domain.hash_rules
    assert (d / "final_scenario_db_hash.txt").read_text() == (
        f"db_hash: {db_hash(final, rules)}\nexpected_db_hash: {db_hash(sc.expected_db, rules)}\n"
    )
    assert json.loads((d / "metrics.json").read_text()) == m
    assert m["is_successful"] is True and m["db_state_match"] is True and m["clean_exit"] is True
    assert list(sc.success_signals) == ["db_state_match", "clean_exit"]
    assert m["success_breakdown"] == {
        "passed": ["db_state_match", "clean_exit"],
        "failed": [],
        "not_applicable": [],
        "excluded": [*(s for s in SIGNALS if s not in sc.success_signals), *NAMES],
    }
    assert m["looked_up"] is True and m["long_agent_lines"] == 0  # no tool call, two short lines
    assert m["duration_s"] == 1.25 and m["usage"]["agent"]["model"] == "replay"
    meta = json.loads((d / "scenario_config" / "metadata.json").read_text())
    assert meta["success_signals"] == ["db_state_match", "clean_exit"]
    assert meta["expected_db_hash"] == m["expected_db_hash"] and "render_error" not in meta
    assert (d / "scenario_config" / "agent_prompt.md").read_text() == render_agent_prompt(sc)
    tools = json.loads((d / "scenario_config" / "tools.json").read_text())
    assert [t["function"]["name"] for t in tools] == list(sc.domain.tools.names)
    assert artifacts.read_jsonl(d / "transcript.jsonl")[0]["role"] == "user"


async def test_missing_final_db_fails_db_state_match(tmp_path, sc):
    m = (
        await finish_session(
            tmp_path, sc, session(sc, None, stop_reason="error", error="agent crashed"), 1, OPTS
        )
    ).to_json()
    assert m["db_state_match"] is False and m["clean_exit"] is False and m["error"] == "agent crashed"
    assert m["success_breakdown"]["failed"] == ["db_state_match", "clean_exit"]
    assert (tmp_path / sc.name / "final_scenario_db_hash.txt").read_text().startswith("db_hash: none\n")


async def test_timeout_fails_only_clean_exit(tmp_path, sc):
    m = (
        await finish_session(tmp_path, sc, session(sc, expected_copy(sc), stop_reason="timeout"), 1, OPTS)
    ).to_json()
    assert m["is_successful"] is False and m["is_task_successful"] is True


async def test_is_complete_tracks_metrics(tmp_path, sc):
    assert not is_complete(tmp_path, sc.name, 1, 1)
    await finish_session(tmp_path, sc, session(sc, expected_copy(sc)), 1, OPTS)
    assert is_complete(tmp_path, sc.name, 1, 1)
    metrics = tmp_path / sc.name / "metrics.json"
    metrics.write_text(metrics.read_text()[:200])  # a torn file is not a result
    assert not is_complete(tmp_path, sc.name, 1, 1)
    metrics.write_text(json.dumps({"schema": METRICS_SCHEMA, "scenario_name": "other", "trial": 1}))
    assert not is_complete(tmp_path, sc.name, 1, 1)
    body = (await finish_session(tmp_path, sc, session(sc, expected_copy(sc)), 1, OPTS)).to_json()
    metrics.write_text(json.dumps({**body, "scenario_name": "other"}))  # a copy of another's result
    assert not is_complete(tmp_path, sc.name, 1, 1)
    metrics.write_text(json.dumps({**body, "extra": 1}))  # not what evalctl writes
    assert not is_complete(tmp_path, sc.name, 1, 1)
    metrics.write_text(json.dumps(body))
    assert is_complete(tmp_path, sc.name, 1, 1)


async def test_trials_nest_and_pass_hat_k(tmp_path, sc, loaded):
    other = loaded.scenario("mock__late_delivery_credit")
    for trial, ok in enumerate([True, True, False], start=1):
        await finish_session(
            tmp_path, sc, session(sc, expected_copy(sc) if ok else sc.fresh_db(), trial=trial), 3, OPTS
        )
        await finish_session(tmp_path, other, session(other, expected_copy(other), trial=trial), 3, OPTS)
    assert is_complete(tmp_path, sc.name, 2, 3) and not is_complete(tmp_path, sc.name, 2, 1)
    assert scenario_dir(tmp_path, sc.name, 2, 3) == tmp_path / sc.name / "trial_2"
    s = finish_run(tmp_path, {"trials": 3, "spec_dir": str(MOCK_SPEC_DIR)}).to_json()
    assert s["overall"] == {
        "passed": 5,
        "failed": 1,
        "not_applicable": 0,
        "errors": 0,
        "total": 6,
        "rate": 5 / 6,
        "ci": s["overall"]["ci"],  # the bootstrap over the two scenarios (tests/unit/scoring/test_stats.py)
    }
    assert s["overall"]["ci"]["method"] == "bootstrap" and s["overall"]["ci"]["low"] <= 5 / 6
    assert s["pass_hat_k"]["per_scenario"][sc.name] == {
        "1": pytest.approx(2 / 3),
        "2": pytest.approx(1 / 3),
        "3": 0.0,
    }
    assert s["pass_hat_k"]["overall"]["3"] == 0.5
    text = (tmp_path / "all_summary.txt").read_text()
    assert "Overall Success Rate: 83.3% (5/6 sessions; 0 errors)" in text and "pass^3 = 0.500" in text


async def test_finish_run_headlines_stalled_and_denominators(tmp_path, loaded):
    names = ("mock__late_delivery_credit", "mock__cancel_order", "mock__shipped_refusal")
    a, b, c = (loaded.scenario(n) for n in names)
    assert b.fresh_db() != b.expected_db  # b's DB is wrong: it stops before the write
    await finish_session(tmp_path, a, session(a, expected_copy(a)), 1, OPTS)
    await finish_session(tmp_path, b, session(b, b.fresh_db(), stop_reason="timeout"), 1, OPTS)
    await finish_session(tmp_path, c, session(c, expected_copy(c), agent_turns=1), 1, OPTS)  # stalled
    s = finish_run(tmp_path, {"trials": 1, "wall_s": 2.5}).to_json()
    text = (tmp_path / "all_summary.txt").read_text()
    assert "Overall Success Rate: 33.3% (1/3 scenarios; 0 errors)" in text
    assert "Task Success Rate (excl. clean_exit): 33.3% (1/3 scenarios)" in text
    # the stalled scenario is left out of the per-signal rates but stays in the composite's
    assert "db_state_match: 50.0% (1/2 scenarios) [95% CI 9.5-90.5%] [gating]" in text
    assert "clean_exit: 50.0% (1/2 scenarios) [95% CI 9.5-90.5%] [gating]" in text
    stalled = "WARNING: 1 stalled scenarios (fewer than 3 agent turns, or than the gold's)"
    assert stalled in text and c.name in text
    assert "Wall time: 2.5 s" in text and "agent (replay)" in text
    assert s["signals"]["db_state_match"] == {
        "passed": 1,
        "total": 2,
        "rate": 0.5,
        "unit": "scenarios",
        "role": "gating",
        "errors_left_out": 0,
        "ci": {"low": pytest.approx(0.0945312057), "high": pytest.approx(0.9054687943), "method": "wilson"},
    }
    assert json.loads((tmp_path / "summary.json").read_text()) == s


async def test_predicate_and_assertion_denominators(tmp_path, sc):
    asserted = replace(
        sc,
        db_state_assertions=(
            {
                "func_name": "order_status",
                "arguments": {"order_id": "O-100"},
                "assert_value": sc.expected_db["orders"]["O-100"]["status"],
            },
            {
                "func_name": "credit_balance",
                "arguments": {"customer_id": "C-1"},
                "assert_value": sc.expected_db["customers"]["C-1"]["credit"] + 10,
            },
        ),
    )
    m = (await finish_session(tmp_path, asserted, session(asserted, expected_copy(sc)), 1, OPTS)).to_json()
    assert m["db_state_assertion_pass_rate"] == 0.5
    finish_run(tmp_path, {})
    assert (
        "db_state_assertion: 50.0% (1/2 predicates) [95% CI 9.5-90.5%] [informational]"
        in (tmp_path / "all_summary.txt").read_text()
    )


async def test_run_json_provenance_and_invocations(tmp_path, sc):
    await finish_session(tmp_path, sc, session(sc, expected_copy(sc)), 1, OPTS)
    info = {
        "spec_dir": str(MOCK_SPEC_DIR),
        "data_root": str(MOCK_DATA_ROOT),
        "started_at": "2026-01-01T00:00:00+00:00",
        "argv": ["run", "tests/mock_domain/spec"],
        "agent": "replay",
        "user": "replay",
        "trials": 1,
        "invocation": "first",
    }
    finish_run(tmp_path, info)
    finish_run(tmp_path, info)  # the same invocation finishing twice replaces itself
    # another invocation is another, even when it started in the same second (the flaky resume test)
    finish_run(tmp_path, {**info, "invocation": "second", "argv": ["run", "--resume"], "command": "resume"})
    run = json.loads((tmp_path / "run.json").read_text())
    assert run["evalctl_version"] and len(run["git"]["commit"]) == 40
    spec_files = sorted(
        p.relative_to(MOCK_SPEC_DIR).as_posix() for p in MOCK_SPEC_DIR.rglob("*") if p.is_file()
    )
    assert run["spec_files"]["domain.yaml"] and sorted(run["spec_files"]) == spec_files
    assert set(run["templates"]) >= {"judge.md.j2"}
    data_files = sorted(
        p.relative_to(MOCK_DATA_ROOT).as_posix() for p in MOCK_DATA_ROOT.rglob("*") if p.is_file()
    )
    assert sorted(run["data_root_files"]) == data_files
    assert run["data_root_changed_from_pins"] == []
    assert run["models"] == {"agent": "replay", "user": "replay"}
    assert [i["argv"][-1] for i in run["invocations"]] == ["tests/mock_domain/spec", "--resume"]
    assert [(i["id"], i["command"]) for i in run["invocations"]] == [("first", "run"), ("second", "resume")]
    assert run["created_at"] == "2026-01-01T00:00:00+00:00"


async def test_summary_counts_each_result_once(tmp_path, sc):
    await finish_session(tmp_path, sc, session(sc, expected_copy(sc)), 1, OPTS)
    await finish_session(tmp_path, sc, session(sc, sc.fresh_db()), 1, OPTS)  # the same slot re-scored
    stray = tmp_path / "copy_of_it"
    stray.mkdir()
    (stray / "metrics.json").write_text((tmp_path / sc.name / "metrics.json").read_text())
    s = finish_run(tmp_path, {}).to_json()
    assert s["results"] == 1 and s["overall"]["failed"] == 1


def test_atomic_write_keeps_old_file_on_failure(tmp_path, monkeypatch):
    target = tmp_path / "x.json"
    artifacts.write_json(target, {"v": 1})

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        artifacts.write_json(target, {"v": 2})
    assert json.loads(target.read_text()) == {"v": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]  # no temp file left behind


def test_gold_db_comes_from_the_gold_replay(sc):
    # the gold conversation cancels O-100: its replay ends in the expected DB (eva 7.4.1, whose
    # expected DB differs from its replay: tests/domains/eva_airline/test_gold.py)
    gold = results.gold_db(sc)
    assert gold is not None and gold != sc.fresh_db()
    rules = sc.domain.hash_rules
    assert db_hash(gold, rules) == db_hash(sc.expected_db, rules)
    assert results.gold_db(sc) is results.gold_db(sc)  # replayed once per scenario
    assert results.gold_db(replace(sc, gold_trace=None)) is None


async def test_user_db_hash_is_recorded_not_scored(tmp_path, sc):
    m = (
        await finish_session(tmp_path, sc, session(sc, expected_copy(sc), user_db={"x": 1}), 1, OPTS)
    ).to_json()
    lines = (tmp_path / sc.name / "final_scenario_db_hash.txt").read_text().splitlines()
    assert lines[2] == f"user_db_hash: {db_hash({'x': 1}, sc.domain.hash_rules)}"
    assert m["db_state_match"] is True and json.loads((tmp_path / sc.name / "final_user_db.json").read_text())


async def test_rescoring_a_slot_drops_files_of_the_earlier_attempt(tmp_path, sc):
    await finish_session(tmp_path, sc, session(sc, expected_copy(sc)), 1, OPTS)
    assert (tmp_path / sc.name / "final_db.json").exists()
    (tmp_path / sc.name / ".metrics.json.x.tmp").write_text("{")  # left by a killed write
    await finish_session(tmp_path, sc, session(sc, None, stop_reason="error", error="crash"), 1, OPTS)
    assert not (tmp_path / sc.name / "final_db.json").exists()
    assert not list((tmp_path / sc.name).glob(".*.tmp"))


@pytest.mark.parametrize(
    ("failed", "expected"),
    [
        pytest.param(
            {"failed_signals": ["db_state_match"], "stop_reason": "exit"}, "db_state_match", id="signal"
        ),
        pytest.param(
            {
                "failed_signals": ["db_state_match", "clean_exit"],
                "stalled": True,
                "stop_reason": "error",
                "error": "agent side reported backend_error: APIConnectionError",
            },
            "db_state_match, clean_exit, stalled, stop=error: agent side reported backend_error: "
            "APIConnectionError",
            id="side-error-is-named-not-just-stalled",
        ),
        pytest.param(
            {"failed_signals": ["clean_exit"], "stop_reason": "timeout"},
            "clean_exit, stop=timeout",
            id="timeout",
        ),
        pytest.param({"failed_signals": [], "stop_reason": "exit"}, "N/A", id="nothing-applicable"),
    ],
)
def test_failure_reason_names_signals_stall_and_side_errors(failed, expected):
    from engine.core.records.summary import FailedResult
    from engine.scoring.summary import failure_reason

    record = FailedResult("a", 1, (), False, None, None)
    changes = {k: tuple(v) if isinstance(v, list) else v for k, v in failed.items()}
    assert failure_reason(replace(record, **changes)) == expected


def test_summary_counts_judge_errors():
    from engine.scoring.summary import build_summary, render_summary_text

    rows = [
        metrics_row("a", signals={"judge_error": "APIConnectionError: Connection error."}),
        metrics_row("b"),
    ]
    summary = build_summary(rows, {"trials": 1})
    assert summary.judge_errors == 1 and str(summary.first_judge_error).startswith("APIConnectionError")
    assert (
        "Judge errors (never an agent failure: the verdict error where a judge signal gates, else not "
        "applicable): 1; first: APIConnectionError" in render_summary_text(summary)
    )


def test_headline_of_an_incomplete_run_says_so():
    from engine.scoring.summary import build_summary, render_summary_text

    rows = [metrics_row("a")]
    text = render_summary_text(build_summary(rows, {"trials": 1, "scenarios": ["a", "b", "c"]}))
    assert (
        "Overall Success Rate: 100.0% (1/1 scenarios; 0 errors) [95% CI 20.7-100.0%]"
        " - INCOMPLETE: 2 results missing" in text
    )
    # each headline says it, not the first alone: the strict and task rates are over part too
    heads = [line for line in text.splitlines() if "Success Rate" in line]
    assert len(heads) == 3 and all(h.endswith(" - INCOMPLETE: 2 results missing") for h in heads)
    complete = render_summary_text(build_summary(rows, {"trials": 1, "scenarios": ["a"]}))
    assert "INCOMPLETE" not in complete


def test_one_missing_result_is_said_in_the_singular(tmp_path, capsys):
    """Before: ``INCOMPLETE: 1 results missing`` on stdout, in all_summary.txt and the HTML report."""
    import shutil

    import cli

    run_dir = tmp_path / "run"
    spec = ["run", str(MOCK_SPEC_DIR), "--data-root", str(MOCK_DATA_ROOT), "--no-progress"]
    names = "mock__cancel_order,mock__shipped_refusal"
    assert cli.main([*spec, "--scenarios", names, "--output-dir", str(run_dir)]) == 0
    shutil.rmtree(run_dir / "mock__shipped_refusal")  # one planned result gone
    capsys.readouterr()
    assert cli.main(["rescore", str(run_dir)]) == 3  # a planned result missing
    said = capsys.readouterr().out + (run_dir / "all_summary.txt").read_text(encoding="utf-8")
    page = tmp_path / "r.html"
    assert cli.main(["report", str(run_dir), "--html", str(page)]) == 0
    for text in (said, page.read_text(encoding="utf-8")):
        assert "INCOMPLETE: 1 result missing" in text and "results missing" not in text
