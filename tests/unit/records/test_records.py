"""metrics.json and summary.json of a mock-shop replay run: key order and values pinned.

The files are what other tools read, so their bytes must not move when the code that writes them
does. Each test runs mock scenarios with the replay sides and the mock plugin with two diagnostics
(tests/mock_domain/diagnostics.py) and compares the files with the expected keys and values:
deterministic values computed here from the mock data (its gold traces, expected DBs and
assertions), times by type only. eva's values (its diagnostics, 3.1.5 and 5.1.5): tests/domains/
eva_airline/test_records_eva.py.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import scipy.stats

from engine import __version__
from engine.core.dbhash import db_hash
from engine.core.options import ScoringOptions
from engine.core.records.fields import RecordError
from engine.core.records.metrics import SIGNALS, MetricsRecord, Signal, Usage
from engine.core.records.run import RunRecord
from engine.core.records.summary import StrictTally, SummaryRecord
from engine.core.validation import schema_text
from engine.domains.registry import plugins
from engine.run.runner import run_cli
from engine.scoring.signals import BUILTIN_REGISTRY
from engine.scoring.summary import render_summary_text
from engine.spec.loader import load_domain
from engine.util.artifacts import dumps_json
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR, REPO
from tests.mock_domain.diagnostics import LONG_LINE, plugins_with_diagnostics
from tests.runtime_helpers import run_options

ISO_SECOND = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$")


def _run(tmp_path: Path, scenarios: tuple[str, ...], **options: Any) -> Path:
    out = tmp_path / "run"
    opts = run_options(
        spec_dir=MOCK_SPEC_DIR,
        data_root=MOCK_DATA_ROOT,
        plugins=plugins_with_diagnostics(),
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


#: The test plugin's diagnostics: a bool, then a count of agent lines (0 = clean).
DIAGNOSTICS = ("looked_up", "long_agent_lines")
CANCEL, SHIPPED = "mock__cancel_order", "mock__shipped_refusal"


def _gold(name: str) -> dict[str, Any]:
    """Figures of a mock scenario's gold conversation as the replay sides play it: one agent turn per
    caller line; each run of consecutive tool calls is one more agent model call; the replay agent
    adds an end_conversation call."""
    scenario = load_domain(MOCK_SPEC_DIR, MOCK_DATA_ROOT, plugins=plugins()).scenario(name)
    trace = scenario.record["trace"]
    kinds = [e["event_type"] for e in trace]
    turns = kinds.count("user_utterance")
    tools = [e["tool_name"] for e in trace if e["event_type"] == "tool_call"]
    runs = sum(1 for i, k in enumerate(kinds) if k == "tool_call" and (i == 0 or kinds[i - 1] != "tool_call"))
    writes = {t.name for t in scenario.domain.tools.tools if t.kind == "write"}
    agent_lines = [e["utterance"] for e in trace if e["event_type"] == "agent_utterance"]
    return {
        "scenario": scenario,
        "turns": turns,
        "actions": sum(1 for t in tools if t in writes),
        "tool_calls": len(tools) + 1,
        "agent_calls": turns + runs,
        "long_lines": sum(1 for line in agent_lines if len(line) > LONG_LINE),
    }


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
    *DIAGNOSTICS,
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
def one_scenario_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """mock__cancel_order replayed once (gated by its assertions, the action list and a clean exit)."""
    return _run(tmp_path_factory.mktemp("one"), (CANCEL,))


def test_metrics_json_of_one_mock_scenario(one_scenario_run: Path) -> None:
    gold = _gold(CANCEL)
    scenario = gold["scenario"]
    assert gold["long_lines"] > 0 and gold["actions"] > 0  # both counts are exercised
    expected_hash = db_hash(scenario.expected_db, scenario.domain.hash_rules)
    predicates = scenario.domain.plugin.predicates
    verdicts = [
        {
            "func_name": a["func_name"],
            "arguments": a["arguments"],
            "side": a.get("side", "agent"),
            "assert_value": a["assert_value"],
            "actual": predicates[a["func_name"]](scenario.expected_db, **a["arguments"]),
            "passed": True,
        }
        for a in scenario.db_state_assertions
    ]
    gating = list(scenario.success_signals)
    body = _read(one_scenario_run / CANCEL / "metrics.json")
    assert list(body) == METRICS_KEYS
    times = {k: body.pop(k) for k in ("started_at", "duration_s", "engine_time_s")}
    assert ISO_SECOND.match(times["started_at"])
    assert _seconds(times["duration_s"]) and _seconds(times["engine_time_s"])
    assert times["engine_time_s"] <= times["duration_s"]
    replay_usage = {"model": "replay", "prompt_tokens": 0, "completion_tokens": 0}
    assert body == {
        "schema": "evalctl.metrics/5",
        "scenario_name": CANCEL,
        "record_id": scenario.record_id,
        "domain": "mock",
        "trial": 1,
        "is_successful": True,
        "is_task_successful": True,
        "error_cause": None,
        "attribution": None,  # a pass: nothing to attribute
        "success_breakdown": {
            "passed": gating,
            "failed": [],
            "not_applicable": [],
            "excluded": [*(s for s in SIGNALS if s not in gating), *DIAGNOSTICS],
        },
        "success_signals": gating,
        "stalled": False,
        "min_agent_turns": 3,
        "stop_reason": "exit",
        "is_action_match": True,
        "db_state_match": True,
        "db_state_assertion_pass_rate": 1.0,
        "db_state_assertion_verdicts": verdicts,
        "nl_assertion_pass_rate": None,
        "nl_assertion_verdicts": [],
        "judge_passed": None,
        "judge_score": None,
        "clean_exit": True,
        "looked_up": True,
        "long_agent_lines": gold["long_lines"],
        "db_hash": expected_hash,
        "expected_db_hash": expected_hash,
        "agent_turns": gold["turns"],
        "user_turns": gold["turns"],
        "num_actions": gold["actions"],
        "num_tool_calls": gold["tool_calls"],
        "agent_backend": "replay",
        "user_backend": "replay",
        "usage": {
            "user": {**replay_usage, "calls": gold["turns"]},
            "agent": {**replay_usage, "calls": gold["agent_calls"]},
        },
        "superseded_usage": [],
        "judge_model": None,
        "judge_prompt_sha256": None,
        "error": None,
        # the replay caller plays the gold lines: checked, never an error (issue #26)
        "user_fidelity": {
            "checks": dict.fromkeys(
                ("persona_facts", "early_hangup", "invented_request", "agent_speak"), True
            ),
            "findings": [],
            "turns": gold["turns"],
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


def test_metrics_are_read_back_through_the_record_unchanged(tmp_path: Path) -> None:
    names = (CANCEL, SHIPPED)
    run_dir = _run(tmp_path, names, max_turns=3)  # the cancel caller has 4 lines: stops with an error
    assert _gold(CANCEL)["turns"] > 3 >= _gold(SHIPPED)["turns"]
    for name in names:
        text = (run_dir / name / "metrics.json").read_text(encoding="utf-8")
        record = MetricsRecord.from_json(json.loads(text))
        assert dumps_json(record.to_json()) == text
    stopped = MetricsRecord.from_json(json.loads((run_dir / CANCEL / "metrics.json").read_text()))
    assert stopped.error == "max turns (3 agent turns) reached" and stopped.stop_reason == "timeout"
    assert stopped.signals.diagnostics == {"looked_up": True, "long_agent_lines": _gold(CANCEL)["long_lines"]}
    assert stopped.usage["agent"] == Usage("replay", 0, 0, stopped.usage["agent"].calls)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda b: b.pop("db_hash"), "metrics: no db_hash"),
        (lambda b: b.update(extra=1), "metrics: unknown key(s) extra"),
        (lambda b: b.update(trial="1"), "trial: str is not int"),
        (lambda b: b.update(trial=True), "trial: True is not int"),
        (lambda b: b.pop("looked_up"), "metrics: no looked_up"),
        (lambda b: b.update(eva_id="M1"), "metrics: unknown key(s) eva_id"),
        (
            lambda b: b.update(schema="evalctl.metrics/6"),
            "newer evalctl (this one reads evalctl.metrics/1 to /5)",
        ),
        (lambda b: b.update(is_successful="error"), "is_successful is 'error' exactly when error_cause"),
        (lambda b: b.update(is_successful="maybe"), "is_successful: 'maybe' is not a verdict"),
        (lambda b: b.update(error_cause={"source": "moon", "message": ""}), "error_cause.source: 'moon'"),
        (lambda b: b["usage"]["agent"].pop("calls"), "usage: no calls"),
        (lambda b: b["success_breakdown"].update(failed="x"), "failed: str is not list"),
    ],
    ids=[
        "missing",
        "unknown",
        "type",
        "bool-for-int",
        "diagnostic",
        "two-ids",
        "schema",
        "error-without-cause",
        "verdict",
        "cause-source",
        "usage",
        "breakdown",
    ],
)
def test_a_metrics_body_that_is_not_the_record_is_refused(
    one_scenario_run: Path, change: Any, message: str
) -> None:
    body = json.loads((one_scenario_run / CANCEL / "metrics.json").read_text())
    change(body)
    with pytest.raises(RecordError) as info:
        MetricsRecord.from_json(body)
    assert message in str(info.value)


def test_a_diagnostic_is_any_value_the_plugin_contract_allows(one_scenario_run: Path) -> None:
    body = json.loads((one_scenario_run / CANCEL / "metrics.json").read_text())
    lines = body["long_agent_lines"]
    # engine.core.plugin.Diagnostic: bool, number, string, None
    for value in (0.5, 2, "partial", None, False):
        record = MetricsRecord.from_json({**body, "looked_up": value})
        assert record.signals.diagnostics == {"looked_up": value, "long_agent_lines": lines}
        assert record.to_json() == {**body, "looked_up": value}
    with pytest.raises(RecordError, match="looked_up: list is not"):
        MetricsRecord.from_json({**body, "looked_up": [True]})


def test_the_json_schemas_name_the_signals_of_the_record() -> None:
    for name, path in (
        ("domain", ("$defs", "success_signals")),
        ("scenario", ("properties", "success_signals")),
    ):
        node = json.loads((REPO / "schemas" / f"{name}.schema.json").read_text(encoding="utf-8"))
        for key in path:
            node = node[key]
        assert tuple(node["items"]["enum"]) == SIGNALS, name
        # the committed file is the one `make schemas` writes from the registry's built-in signals
        committed = (REPO / "schemas" / f"{name}.schema.json").read_text(encoding="utf-8")
        assert committed == schema_text(name, BUILTIN_REGISTRY.gating_names()), f"{name}: run make schemas"
    # the six, then the audio sessions' own signal (never in a spec's enum: every voice run gates on it)
    assert tuple(BUILTIN_REGISTRY) == (*SIGNALS, "speech_matches_text") and tuple(Signal) == SIGNALS
    assert BUILTIN_REGISTRY.voice_gates() == ("speech_matches_text",)


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
    "attribution",  # issue #26: FAILs by cause, regenerated callers, a caller that cannot test
    "regenerated",
    "caller_note",
    "pass_hat_k",
    "noise",
]


def _wilson(passed: int, total: int, method: str = "wilson") -> dict[str, Any]:
    """scipy's Wilson interval, as summary.json writes it."""
    ci = scipy.stats.binomtest(passed, total).proportion_ci(0.95, method="wilson")
    return {"low": ci.low, "high": ci.high, "method": method}


#: Two scenarios, one passing every trial and one failing every trial: the bootstrap over
#: scenarios resamples {0, 1} and its 95 % interval spans everything.
EVERYTHING = {"low": 0.0, "high": 1.0, "method": "bootstrap"}


@pytest.fixture
def two_trial_run(tmp_path: Path) -> Path:
    """Two trials of mock__cancel_order (4 caller lines, stopped by --max-turns 3 below
    --min-agent-turns 4: stalled, fails) and mock__shipped_refusal (3 caller lines: passes)."""
    return _run(tmp_path, (CANCEL, SHIPPED), trials=2, max_turns=3, scoring=ScoringOptions(min_agent_turns=4))


def test_summary_json_of_a_two_trial_run(two_trial_run: Path) -> None:
    cancel, shipped = _gold(CANCEL), _gold(SHIPPED)
    assert cancel["turns"] > 3 >= shipped["turns"]
    body = _read(two_trial_run / "summary.json")
    assert list(body) == SUMMARY_KEYS
    wall, session_time = body.pop("wall_time_s"), body.pop("session_time_s")
    assert _seconds(wall) and list(session_time) == ["total", "mean", "max"]
    assert all(_seconds(v) for v in session_time.values())
    assert session_time["mean"] == pytest.approx(session_time["total"] / 4)
    metrics = {
        (name, k): json.loads((two_trial_run / name / f"trial_{k}" / "metrics.json").read_text())
        for name in (CANCEL, SHIPPED)
        for k in (1, 2)
    }
    calls = {role: sum(m["usage"][role]["calls"] for m in metrics.values()) for role in ("agent", "user")}
    for k in (1, 2):  # the summary adds up the sessions' calls; the passing ones are the gold's
        assert metrics[SHIPPED, k]["usage"]["user"]["calls"] == shipped["turns"]
        assert metrics[SHIPPED, k]["usage"]["agent"]["calls"] == shipped["agent_calls"]

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
        # the two shipped sessions are one scenario: the scenario is the unit of the interval
        return {
            "passed": passed,
            "total": total,
            "rate": passed / total if total else None,
            "unit": unit,
            "role": role,
            "errors_left_out": 0,
            "ci": _wilson(passed // 2, 1, "wilson-scenarios") if total else None,
        }

    def count_rate(clean: int, total: int, unit: str, found: int, most: float) -> dict[str, Any]:
        return {**rate(clean, total, unit, "diagnostic"), "kind": "count", "sum": found, "max": most}

    usage = {"models": ["replay"], "prompt_tokens": 0, "completion_tokens": 0}
    # The cancel caller's third line ("yes") is answered with the cancellation: the DB and the
    # action list are right, only the end of the call is missing.
    failure = {
        "scenario": CANCEL,
        "verdict": False,
        "failed_signals": ["clean_exit"],
        "stalled": True,
        "stop_reason": "timeout",
        "error": "max turns (3 agent turns) reached",
        "error_cause": None,
        # every write matches the gold: the agent stalled (the --max-turns cut, as attributed)
        "attribution": {
            "cause": "agent",
            "turn": None,
            "evidence": "stalled: 3 agent turns (stop reason timeout)",
        },
    }
    long_lines = shipped["long_lines"]
    assert long_lines > 0
    # Stalled results are left out of the signal rates: the rates are the two shipped sessions'.
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
            "is_action_match": rate(2, 2, "sessions", "gating"),
            "db_state_match": rate(2, 2, "sessions", "gating"),
            "db_state_assertion": rate(0, 0, "predicates", "gating"),
            "nl_assertion": rate(0, 0, "assertions", "informational"),
            "judge_passed": rate(0, 0, "sessions", "informational"),
            "clean_exit": rate(2, 2, "sessions", "gating"),
            "looked_up": rate(2, 2, "sessions", "diagnostic"),
            "long_agent_lines": count_rate(0, 2, "sessions", 2 * long_lines, float(long_lines)),
        },
        "stalled": {
            "count": 2,
            "scenarios": [f"{CANCEL}#trial_1", f"{CANCEL}#trial_2"],
            "min_agent_turns": 4,
        },
        "stop_reasons": {"exit": 2, "timeout": 2},
        "errors": 0,  # a stop by --max-turns is the agent's: a verdict (stalled, failed), not an error
        "first_error": None,
        "judge_errors": 0,
        "first_judge_error": None,
        "usage": {"agent": {**usage, "calls": calls["agent"]}, "user": {**usage, "calls": calls["user"]}},
        "invocations": 1,
        "failed": [{**failure, "trial": 1}, {**failure, "trial": 2}],
        "attribution": {"agent": 2, "user_simulator": 0, "speech": 0, "data": 0, "infrastructure": 0},
        "regenerated": {"sessions": 0, "attempts": 0, "reasons": {}},
        "caller_note": "replay caller: this run is a conformance check (does the agent follow the gold "
        "path?), not a score of a model; use --user openai:MODEL to score an agent",
        "pass_hat_k": {
            "per_scenario": {
                CANCEL: {"1": 0.0, "2": 0.0},
                SHIPPED: {"1": 1.0, "2": 1.0},
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
            # 4 sessions cannot show any difference (6 discordant scenarios are the fewest a test sees)
            "minimum_detectable_difference": 1.0,
            "per_scenario": {
                CANCEL: {"passed": 0, "trials": 2, "rate": 0.0, "flaky": False},
                SHIPPED: {"passed": 2, "trials": 2, "rate": 1.0, "flaky": False},
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


def test_summary_is_read_back_through_the_record_unchanged(two_trial_run: Path) -> None:
    text = (two_trial_run / "summary.json").read_text(encoding="utf-8")
    record = SummaryRecord.from_json(json.loads(text))
    assert dumps_json(record.to_json()) == text
    assert record.pass_hat_k is not None and record.pass_hat_k.overall == {"1": 0.5, "2": 0.5}
    assert [f.trial for f in record.failed] == [1, 2] and record.stalled.count == 2
    body = json.loads(text)
    body["failed"][0]["why"] = "?"
    with pytest.raises(RecordError, match="failed: unknown key"):
        SummaryRecord.from_json(body)


def test_a_summary_before_version_4_gets_its_strict_rate_from_overall() -> None:
    # the frozen version 3 run (tests/records/v3): no strict rate, no intervals; the strict rate is
    # derived from overall (no error result was left out of it), the intervals are None
    body = json.loads((REPO / "tests/records/v3/summary.json").read_text(encoding="utf-8"))
    record = SummaryRecord.from_json(body)
    ov = record.overall
    assert record.strict == StrictTally(ov.passed, ov.failed, ov.errors, ov.total + ov.errors, ov.rate)
    assert ov.ci is None and record.task.ci is None
    assert "Strict Success Rate (errors count as failures): 50.0% (1/2 scenarios; 0 errors)" in (
        render_summary_text(record)
    )
    with pytest.raises(RecordError, match=r"evalctl\.summary/9"):
        SummaryRecord.from_json({**body, "schema": "evalctl.summary/9"})


def test_run_json_is_read_back_through_the_record_unchanged(two_trial_run: Path) -> None:
    text = (two_trial_run / "run.json").read_text(encoding="utf-8")
    body = json.loads(text)
    assert list(body) == [
        "schema",
        "evalctl_version",
        "git",
        "python",
        "spec_dir",
        "spec_files",
        "templates",
        "data_root",
        "data_root_files",
        "data_root_changed_from_pins",
        "hash_notes",
        "models",
        "settings",
        "trials",
        "args",
        "argv",
        "created_at",
        "scenarios",
        "invocations",
    ]
    record = RunRecord.from_json(body)
    assert dumps_json(record.to_json()) == text
    assert record.trials == 2 and record.scenarios == (CANCEL, SHIPPED)
    assert record.models == {"agent": "replay", "user": "replay"}
    [invocation] = record.invocations
    assert invocation.finished_at is not None and invocation.interrupted is False
    assert invocation.command == "run" and re.fullmatch(r"[0-9a-f]{16}", invocation.id)
    assert record.settings["agent"] == "replay" and record.settings["trials"] == 2
    assert (
        record.settings["scoring"]["min_agent_turns"] == 4
        and record.settings["scoring"]["judge_model"] is None
    )
    assert invocation.args["trials"] == 2 and invocation.args["scoring"]["min_agent_turns"] == 4
    assert "plugins" not in invocation.args and "progress" not in invocation.args
    with pytest.raises(RecordError, match="invocation: no args"):
        RunRecord.from_json(
            {**body, "invocations": [{k: v for k, v in body["invocations"][0].items() if k != "args"}]}
        )


def test_a_version_1_metrics_file_is_still_read(one_scenario_run: Path) -> None:
    body = json.loads((one_scenario_run / CANCEL / "metrics.json").read_text())
    old = {
        k: v
        for k, v in body.items()
        if k not in ("error_cause", "superseded_usage", "attribution", "user_fidelity")
    }
    record = MetricsRecord.from_json({**old, "schema": "evalctl.metrics/1"})
    assert record.error_cause is None and record.superseded_usage == () and record.is_successful is True
    with pytest.raises(RecordError, match="metrics: no error_cause"):
        MetricsRecord.from_json(old)  # version 2 without its new keys is not a record
    with pytest.raises(RecordError, match="unknown key"):
        MetricsRecord.from_json({**body, "schema": "evalctl.metrics/1"})  # nor version 1 with them


def test_a_session_record_is_read_back_unchanged(one_scenario_run: Path) -> None:
    from engine.core.records.session import SessionRecord

    text = (one_scenario_run / CANCEL / "session.json").read_text(encoding="utf-8")
    record = SessionRecord.from_json(json.loads(text))
    assert dumps_json(record.to_json()) == text
    assert record.stop_reason == "exit" and record.error_cause is None and record.final_db
    assert re.fullmatch(r"[0-9a-f]{16}", record.invocation) and record.ended_at >= record.started_at
    with pytest.raises(RecordError, match="session: unknown key"):
        SessionRecord.from_json({**json.loads(text), "extra": 1})


def test_an_interrupted_summary_says_how_many_scenarios_were_selected(two_trial_run: Path) -> None:
    # a run stopped before any trial of some scenarios: "Scenarios: 1" read as if it selected one
    record = SummaryRecord.from_json(_read(two_trial_run / "summary.json"))
    assert f"Scenarios: 2, trials: 2, results: {record.results}" in render_summary_text(record)
    lost = ("mock__late_delivery_credit#trial_1", "mock__late_delivery_credit#trial_2", f"{CANCEL}#trial_2")
    partial = replace(record, scenarios=2, missing=lost, interrupted=True)
    assert "Scenarios: 2 of 3 selected (1 with no result yet), trials: 2" in render_summary_text(partial)
    some = replace(record, missing=(f"{CANCEL}#trial_2",), interrupted=True)  # no scenario without one
    assert "Scenarios: 2, trials: 2" in render_summary_text(some)
