"""metrics.json and summary.json of a real eva replay run, with eva's values pinned: the diagnostics
eva_airline adds (``authenticated`` and the spoken-form counts), and the turns, calls and verdicts of
eva 3.1.5 and 5.1.5's gold conversations. The record format itself (key order, reading back,
refusals) is tested on the mock shop in tests/unit/records/test_records.py.

Deterministic values literally (from the eva data), hashes computed here from the scenario's
expected DB, times by type only.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import scipy.stats

from engine import __version__
from engine.core.dbhash import db_hash
from engine.domains.registry import plugins
from engine.run.runner import run_cli
from engine.spec.loader import load_domain
from engine.util.artifacts import dumps_json
from tests.conftest import SPEC_DIR
from tests.runtime_helpers import run_options

ISO_SECOND = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$")


def _run(tmp_path: Path, data_root: Path, scenarios: tuple[str, ...], **options: Any) -> Path:
    out = tmp_path / "run"
    opts = run_options(
        spec_dir=SPEC_DIR,
        data_root=data_root,
        scenarios=scenarios,
        output_dir=out,
        concurrency=2,
        progress=False,
        quiet=True,
        **options,
    )
    report = run_cli(opts)
    assert not report.scoring_errors and not report.interrupted
    return out


def _read(path: Path) -> dict[str, Any]:
    text = path.read_text(encoding="utf-8")
    body = json.loads(text)
    assert text == dumps_json(body), f"{path.name} is not in the writer's format"
    return body


def _seconds(value: Any) -> bool:
    return isinstance(value, float) and value >= 0


#: eva_airline's spoken-form diagnostics (counts of agent lines; engine.session.voice.spoken).
SPOKEN = ("unspelled_codes", "internal_ids_spoken", "leaked_tool_text")

METRICS_KEYS = [
    "schema",
    "scenario_name",
    "record_id",
    "domain",
    "trial",
    "is_successful",
    "is_task_successful",
    "error_cause",
    "attribution",
    "success_breakdown",
    "success_signals",
    "stalled",
    "min_agent_turns",
    "stop_reason",
    "is_action_match",
    "db_state_match",
    "db_state_assertion_pass_rate",
    "db_state_assertion_verdicts",
    "nl_assertion_pass_rate",
    "nl_assertion_verdicts",
    "judge_passed",
    "judge_score",
    "clean_exit",
    "authenticated",
    "unspelled_codes",
    "internal_ids_spoken",
    "leaked_tool_text",
    "db_hash",
    "expected_db_hash",
    "agent_turns",
    "user_turns",
    "num_actions",
    "num_tool_calls",
    "started_at",
    "duration_s",
    "engine_time_s",
    "agent_backend",
    "user_backend",
    "usage",
    "superseded_usage",
    "judge_model",
    "judge_prompt_sha256",
    "error",
    "user_fidelity",
    "evalctl_version",
]


@pytest.fixture(scope="module")
def one_scenario_run(data_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """eva 3.1.5 replayed once (its gold conversation: 4 agent turns, 3 writes)."""
    return _run(tmp_path_factory.mktemp("one"), data_root, ("eva_airline__3_1_5",))


def test_metrics_json_of_one_eva_scenario(one_scenario_run: Path, data_root: Path) -> None:
    name = "eva_airline__3_1_5"
    scenario = load_domain(SPEC_DIR, data_root, plugins=plugins()).scenario(name)
    expected_hash = db_hash(scenario.expected_db, scenario.domain.hash_rules)
    body = _read(one_scenario_run / name / "metrics.json")
    assert list(body) == METRICS_KEYS
    times = {k: body.pop(k) for k in ("started_at", "duration_s", "engine_time_s")}
    assert ISO_SECOND.match(times["started_at"])
    assert _seconds(times["duration_s"]) and _seconds(times["engine_time_s"])
    assert times["engine_time_s"] <= times["duration_s"]
    replay_usage = {"model": "replay", "prompt_tokens": 0, "completion_tokens": 0}
    assert body == {
        "schema": "evalctl.metrics/5",
        "scenario_name": name,
        "record_id": "3.1.5",
        "domain": "eva_airline",
        "trial": 1,
        "is_successful": True,
        "is_task_successful": True,
        "error_cause": None,
        "attribution": None,
        "success_breakdown": {
            "passed": ["db_state_match", "clean_exit"],
            "failed": [],
            "not_applicable": [],
            "excluded": [
                "is_action_match",
                "db_state_assertion",
                "nl_assertion",
                "judge_passed",
                "authenticated",
                *SPOKEN,
            ],
        },
        "success_signals": ["db_state_match", "clean_exit"],
        "stalled": False,
        "min_agent_turns": 3,
        "stop_reason": "exit",
        "is_action_match": "N/A",
        "db_state_match": True,
        "db_state_assertion_pass_rate": None,
        "db_state_assertion_verdicts": [],
        "nl_assertion_pass_rate": None,
        "nl_assertion_verdicts": [],
        "judge_passed": None,
        "judge_score": None,
        "clean_exit": True,
        "authenticated": True,
        **dict.fromkeys(SPOKEN, 0),  # its gold agent spells every code and leaks no tool text
        "db_hash": expected_hash,
        "expected_db_hash": expected_hash,
        "agent_turns": 4,
        "user_turns": 4,
        "num_actions": 3,
        "num_tool_calls": 6,
        "agent_backend": "replay",
        "user_backend": "replay",
        "usage": {"user": {**replay_usage, "calls": 4}, "agent": {**replay_usage, "calls": 6}},
        "superseded_usage": [],
        "judge_model": None,
        "judge_prompt_sha256": None,
        "error": None,
        "user_fidelity": {  # the replay caller: its gold lines hold to its persona (issue #26)
            "checks": dict.fromkeys(
                ("persona_facts", "early_hangup", "invented_request", "agent_speak"), True
            ),
            "findings": [],
            "turns": 4,
            "enforced": False,
            "judged": False,
            "attempt": 0,
            "replaced": [],
            "dropped": 0,
            "judge_error": None,
        },
        "evalctl_version": __version__,
    }
    assert list(body["usage"]["agent"]) == ["model", "prompt_tokens", "completion_tokens", "calls"]


SUMMARY_KEYS = [
    "schema",
    "run_dir",
    "evalctl_version",
    "results",
    "scenarios",
    "trials",
    "unit",
    "missing",
    "interrupted",
    "overall",
    "strict",  # issue #25: errors counted as failures
    "task",
    "signals",
    "stalled",
    "stop_reasons",
    "errors",
    "first_error",
    "judge_errors",
    "first_judge_error",
    "usage",
    "invocations",
    "wall_time_s",
    "session_time_s",
    "failed",
    "attribution",
    "regenerated",
    "caller_note",
    "pass_hat_k",
    "noise",
]
#: Two scenarios, one passing every trial and one failing every trial: the bootstrap over
#: scenarios resamples {0, 1} and its 95 % interval spans everything.
EVERYTHING = {"low": 0.0, "high": 1.0, "method": "bootstrap"}


@pytest.fixture
def two_trial_run(tmp_path: Path, data_root: Path) -> Path:
    """Two trials of 3.1.5 (stalled by --max-turns 2: fails) and 5.1.5 (two agent turns in its gold
    conversation: passes)."""
    return _run(tmp_path, data_root, ("eva_airline__3_1_5", "eva_airline__5_1_5"), trials=2, max_turns=2)


def test_summary_json_of_a_two_trial_run(two_trial_run: Path) -> None:
    body = _read(two_trial_run / "summary.json")
    assert list(body) == SUMMARY_KEYS
    wall, session_time = body.pop("wall_time_s"), body.pop("session_time_s")
    assert _seconds(wall) and list(session_time) == ["total", "mean", "max"]
    assert all(_seconds(v) for v in session_time.values())
    assert session_time["mean"] == pytest.approx(session_time["total"] / 4)

    def tally(passed: int, failed: int) -> dict[str, Any]:
        total = passed + failed
        return {
            "passed": passed,
            "failed": failed,
            "not_applicable": 0,
            "errors": 0,
            "total": total,
            "rate": passed / total,
            "ci": EVERYTHING,
        }

    def rate(passed: int, total: int, unit: str, role: str) -> dict[str, Any]:
        # the two passing sessions are one scenario's: Wilson's interval over that one scenario
        wilson = scipy.stats.binomtest(1, 1).proportion_ci(0.95, method="wilson")
        return {
            "passed": passed,
            "total": total,
            "rate": passed / total if total else None,
            "unit": unit,
            "role": role,
            "errors_left_out": 0,
            "ci": {"low": wilson.low, "high": wilson.high, "method": "wilson-scenarios"} if total else None,
        }

    def count_rate(clean: int, total: int, unit: str, found: int, most: float) -> dict[str, Any]:
        return {**rate(clean, total, unit, "diagnostic"), "kind": "count", "sum": found, "max": most}

    usage = {"models": ["replay"], "prompt_tokens": 0, "completion_tokens": 0}
    failure = {
        "scenario": "eva_airline__3_1_5",
        "verdict": False,
        "failed_signals": ["db_state_match", "clean_exit"],
        "stalled": True,
        "stop_reason": "timeout",
        "error": "max turns (2 agent turns) reached",
        "error_cause": None,
        "attribution": {  # cut after two agent turns: the gold's first write never came
            "cause": "agent",
            "turn": None,
            "evidence": 'missing write: the agent never called rebook_flight(confirmation_number="M9M6FJ", '
            'journey_id="FL_SK715_SK330_20260908", new_journey_id="FL_SK907_20260908", '
            'rebooking_type="same_day", waive_change_fee=false)',
        },
    }
    assert body == {
        "schema": "evalctl.summary/5",
        "run_dir": str(two_trial_run),
        "evalctl_version": __version__,
        "results": 4,
        "scenarios": 2,
        "trials": 2,
        "unit": "sessions",
        "missing": [],
        "interrupted": False,
        "overall": tally(2, 2),
        # no error result: the strict rate and its interval are the overall ones
        "strict": {"passed": 2, "failed": 2, "errors": 0, "total": 4, "rate": 0.5, "ci": tally(2, 2)["ci"]},
        "task": tally(2, 2),
        "signals": {
            "is_action_match": rate(0, 0, "sessions", "informational"),
            "db_state_match": rate(2, 2, "sessions", "gating"),
            "db_state_assertion": rate(0, 0, "predicates", "informational"),
            "nl_assertion": rate(0, 0, "assertions", "informational"),
            "judge_passed": rate(0, 0, "sessions", "informational"),
            "clean_exit": rate(2, 2, "sessions", "gating"),
            "authenticated": rate(2, 2, "sessions", "diagnostic"),
            **{name: count_rate(2, 2, "sessions", 0, 0.0) for name in SPOKEN},
        },
        "stalled": {
            "count": 2,
            "scenarios": ["eva_airline__3_1_5#trial_1", "eva_airline__3_1_5#trial_2"],
            "min_agent_turns": 3,
        },
        "stop_reasons": {"exit": 2, "timeout": 2},
        "errors": 0,  # a stop by --max-turns is the agent's: a verdict (stalled, failed), not an error
        "first_error": None,
        "judge_errors": 0,
        "first_judge_error": None,
        "usage": {"agent": {**usage, "calls": 12}, "user": {**usage, "calls": 10}},
        "invocations": 1,
        "failed": [{**failure, "trial": 1}, {**failure, "trial": 2}],
        "attribution": {"agent": 2, "user_simulator": 0, "speech": 0, "data": 0, "infrastructure": 0},
        "regenerated": {"sessions": 0, "attempts": 0, "reasons": {}},
        "caller_note": "replay caller: this run is a conformance check (does the agent follow the gold "
        "path?), not a score of a model; use --user openai:MODEL to score an agent",
        "pass_hat_k": {
            "per_scenario": {
                "eva_airline__3_1_5": {"1": 0.0, "2": 0.0},
                "eva_airline__5_1_5": {"1": 1.0, "2": 1.0},
            },
            "overall": {"1": 0.5, "2": 0.5},
            "scenarios": {"1": 2, "2": 2},
            "ci": {"1": EVERYTHING, "2": EVERYTHING},
            "errors_left_out": 0,
        },
        "noise": {
            "scenarios": 2,
            "flaky": 0,
            "flaky_share": 0.0,
            "flaky_scenarios": [],
            "minimum_detectable_difference": 1.0,  # 4 sessions cannot show any difference
            "per_scenario": {
                "eva_airline__3_1_5": {"passed": 0, "trials": 2, "rate": 0.0, "flaky": False},
                "eva_airline__5_1_5": {"passed": 2, "trials": 2, "rate": 1.0, "flaky": False},
            },
        },
    }
    assert [list(f) for f in body["failed"]] == [
        [
            *("scenario", "trial", "verdict", "failed_signals", "stalled", "stop_reason", "error"),
            *("error_cause", "attribution"),
        ]
    ] * 2
    assert list(body["signals"]["clean_exit"]) == [
        "passed",
        "total",
        "rate",
        "unit",
        "role",
        "errors_left_out",
        "ci",
    ]
    assert list(body["overall"]) == ["passed", "failed", "not_applicable", "errors", "total", "rate", "ci"]
