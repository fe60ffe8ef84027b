"""Record versions: every frozen run folder of tests/records/ (one per version, as the evalctl of
that version wrote it) reads with today's readers and through the verbs, and the field names
today's writers produce are pinned per schema version, so a change of fields without a version
bump (and a new frozen folder) fails here with what to do."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import cli
from engine.core.records.common import ErrorCause, SpentUsage, Usage
from engine.core.records.fidelity import Finding, UserFidelity
from engine.core.records.intervals import Adaptive, Interval, Noise, ScenarioTrials
from engine.core.records.metrics import METRICS_SCHEMA, SIGNALS, MetricsRecord
from engine.core.records.run import RUN_SCHEMA, Git, RunRecord
from engine.core.records.session import SESSION_SCHEMA, SessionRecord
from engine.core.records.summary import (
    COUNT,
    SUMMARY_SCHEMA,
    FailedResult,
    PassHatK,
    Regenerated,
    SignalRate,
    SummaryRecord,
)
from engine.core.records.voice import Hearing, Timing, TurnStats, VoiceSummary
from engine.core.records.voice_run import Share, Spread, VoiceFigures
from engine.util.artifacts import dumps_json
from tests.conftest import MOCK_DATA_ROOT, REPO

RECORDS = REPO / "tests" / "records"
VERSIONS = sorted((p for p in RECORDS.iterdir() if p.is_dir()), key=lambda p: int(p.name[1:]))
CANCEL, SHIPPED = "mock__cancel_order", "mock__shipped_refusal"
#: What every frozen run holds: the cancel order stopped by --max-turns 3, the refusal passing.
VERDICTS = {CANCEL: False, SHIPPED: True}


def _body(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


# --- the frozen folders read with today's readers --------------------------------------------


def test_there_is_a_frozen_run_of_every_version() -> None:
    assert [p.name for p in VERSIONS] == [f"v{k}" for k in range(1, len(VERSIONS) + 1)]
    newest = VERSIONS[-1]
    written = {
        "metrics.json": _body(newest / CANCEL / "metrics.json")["schema"],
        "summary.json": _body(newest / "summary.json")["schema"],
        "run.json": _body(newest / "run.json")["schema"],
        "session.json": _body(newest / CANCEL / "session.json")["schema"],
    }
    assert written == {
        "metrics.json": METRICS_SCHEMA,
        "summary.json": SUMMARY_SCHEMA,
        "run.json": RUN_SCHEMA,
        "session.json": SESSION_SCHEMA,
    }, f"the newest frozen run ({newest.name}) is not the version written: add one (tests/records/README.md)"


@pytest.mark.parametrize("folder", VERSIONS, ids=lambda p: p.name)
def test_every_record_of_every_version_reads(folder: Path) -> None:
    for name, verdict in VERDICTS.items():
        metrics = MetricsRecord.from_json(_body(folder / name / "metrics.json"))
        assert (metrics.scenario_name, metrics.is_successful, metrics.domain) == (name, verdict, "mock")
        assert metrics.record_id == {CANCEL: "M1", SHIPPED: "M3"}[name]
        if (folder / name / "session.json").exists():
            session = SessionRecord.from_json(_body(folder / name / "session.json"))
            assert session.scenario_name == name and session.agent_turns == metrics.agent_turns
    summary = SummaryRecord.from_json(_body(folder / "summary.json"))
    assert (summary.results, summary.overall.passed, summary.overall.failed) == (2, 1, 1)
    assert [f.scenario for f in summary.failed] == [CANCEL] and summary.failed[0].verdict is False
    run = RunRecord.from_json(_body(folder / "run.json"))
    assert run.spec_dir == "tests/mock_domain/spec" and run.trials == 1
    assert run.scenarios == (CANCEL, SHIPPED) and run.invocations[0].command == "run"


def test_the_record_id_is_written_as_record_id_and_eva_id_still_reads() -> None:
    old = _body(RECORDS / "v2" / CANCEL / "metrics.json")
    new = _body(VERSIONS[-1] / CANCEL / "metrics.json")
    assert old["eva_id"] == "M1" and "record_id" not in old  # the mock spec says `eva_id: M1`
    assert new["record_id"] == "M1" and "eva_id" not in new
    assert MetricsRecord.from_json(old).record_id == MetricsRecord.from_json(new).record_id == "M1"


def test_the_newest_frozen_run_is_what_todays_writers_write() -> None:
    folder = VERSIONS[-1]
    files = [folder / "summary.json", folder / "run.json"]
    for name in VERDICTS:
        files += [folder / name / "metrics.json", folder / name / "session.json"]
    readers = {"summary": SummaryRecord, "run": RunRecord, "metrics": MetricsRecord, "session": SessionRecord}
    for path in files:
        record = readers[path.stem].from_json(_body(path))  # type: ignore[attr-defined]
        assert dumps_json(record.to_json()) == path.read_text(encoding="utf-8"), path


# --- the frozen folders through the verbs ------------------------------------------------------


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("folder", VERSIONS, ids=lambda p: p.name)
def test_report_diff_and_compare_read_every_version(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _cli(capsys, "report", str(folder))
    assert code == 0 and "warning" not in err and "Overall success" in out and "50.0%" in out
    code, out, err = _cli(capsys, "report", str(folder), "--html", str(tmp_path / "r.html"))
    assert code == 0 and "(2 results," in out and "warning" not in err
    code, out, err = _cli(capsys, "diff", str(folder), "--json")
    assert code == 0 and "warning" not in err
    assert [d["scenario"] for d in json.loads(out)] == [CANCEL]
    code, out, err = _cli(capsys, "compare", str(VERSIONS[-1]), str(folder), "--json")
    body = json.loads(out)
    assert code == 0 and "warning" not in err
    assert (body["pass_to_fail"], body["fail_to_pass"], body["unchanged_pass"], body["unchanged_fail"]) == (
        [],
        [],
        1,
        1,
    )
    assert body["unreadable_a"] == body["unreadable_b"] == 0


@pytest.mark.parametrize("folder", VERSIONS, ids=lambda p: p.name)
def test_rescore_and_merge_read_every_version(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)  # run.json names the spec folder as given: tests/mock_domain/spec
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    code, out, err = _cli(capsys, "rescore", str(copy), "--data-root", str(MOCK_DATA_ROOT))
    assert code == 0 and "warning" not in err, err
    stored = (folder / CANCEL / "session.json").exists()  # version 1 stored no session
    assert ("rescored 2 result(s)" if stored else "rescored 0 result(s), 2 kept as they were") in out
    for name, verdict in VERDICTS.items():
        assert MetricsRecord.from_json(_body(copy / name / "metrics.json")).is_successful == verdict
    assert _body(copy / "summary.json")["schema"] == SUMMARY_SCHEMA
    assert _body(copy / "run.json")["schema"] == RUN_SCHEMA
    merged, source = tmp_path / "merged", tmp_path / "source"
    shutil.copytree(folder, source)  # merge locks its sources: the frozen folder stays as committed
    code, out, err = _cli(capsys, "merge", str(source), "--output-dir", str(merged))
    assert code == 0 and "warning" not in err, err
    summary = SummaryRecord.from_json(_body(merged / "summary.json"))
    assert (summary.results, summary.overall.passed, summary.overall.failed) == (2, 1, 1)


# --- the writers' fields, pinned per version ---------------------------------------------------

#: Paths whose keys are data (role, signal, file, scenario names), shown as ``*``; the free-form
#: ones (``settings``, ``args``, ``models``) are not descended into.
_KEYED = {
    *("usage", "extra_signals", "signals", "stop_reasons", "spec_files", "templates", "data_root_files"),
    *("checks", "reasons"),  # user_fidelity.checks (registered checks), regenerated.reasons (checks)
}
_KEYED_PATHS = {
    "pass_hat_k.per_scenario",
    "pass_hat_k.per_scenario.*",
    "pass_hat_k.overall",
    "pass_hat_k.ci",
    "pass_hat_k.scenarios",
    "noise.per_scenario",
}
_OPAQUE = {
    "extra_signals.*",  # a registered signal's own entry: its value, role and fields, its own to define
    "settings",
    "args",
    "models",
    "invocations[].args",
    "db_state_assertion_verdicts[]",  # a predicate's or claim's verdict: its arguments are the scenario's
    "nl_assertion_verdicts[]",
}


def field_paths(value: Any, prefix: str = "") -> Iterator[str]:
    """Every key path of a JSON body: ``a.b`` for objects, ``a[].b`` inside lists of objects."""
    if isinstance(value, dict):
        keyed = prefix.rsplit(".", 1)[-1] in _KEYED or prefix in _KEYED_PATHS
        for key, item in value.items():
            path = f"{prefix}.{'*' if keyed else key}" if prefix else key
            yield path
            if path not in _OPAQUE:
                yield from field_paths(item, path)
    elif isinstance(value, list) and f"{prefix}[]" not in _OPAQUE:
        for item in value:
            yield from field_paths(item, f"{prefix}[]")


def fingerprint(body: dict[str, Any]) -> list[str]:
    """The sorted field paths of a record body. The signal fields of the six contract signals are
    kept (pinned below); a plugin's diagnostics are not fields of the record (open-ended, named by
    the breakdown), so a record built without any has none."""
    return sorted(set(field_paths(body)))


def _usage() -> Usage:
    return Usage("m", 1, 2, 3)


def _full_metrics() -> dict[str, Any]:
    """A metrics record with every optional field set (judge error, error verdict, superseded
    usage, a voice summary with WER turns, a registered signal outside the six)."""
    base = MetricsRecord.from_json(_body(VERSIONS[-1] / CANCEL / "metrics.json"))
    stats = TurnStats(1, 1.0, 1.0, 1.0, 1.0, 1.0)
    timing = Timing("webrtcvad", stats, 0, 1, 1, 0, 0.0, (1.0,), (2.0,))
    hearing = Hearing(1, 1, 1, 0, 10, 10, 2, 1, 0)
    voice = VoiceSummary(
        16000, 1.0, 1, stats, stats, 0.0, 0, 1.0, 1.0, 0.1, "espeak-ng", 0.5, "whisper", 2, timing, hearing
    )
    record = replace(
        base,
        is_successful="error",
        is_task_successful="error",
        error_cause=ErrorCause("judge", "x"),
        signals=replace(
            base.signals,
            judge_error="x",
            judge_passed=None,
            extra={"latency_ok": {"value": True, "role": "gating", "latency_ok": True}},
        ),
        usage={"agent": _usage(), "judge": _usage()},
        superseded_usage=(SpentUsage("judge", _usage()),),
        voice_run=True,
        voice=voice,
        user_fidelity=UserFidelity(
            {"persona_facts": False},
            (Finding("persona_facts", 1, "says X", "X"),),
            2,
            attempt=1,
            replaced=("x",),
        ),
    )
    return record.to_json()


def _full_summary() -> dict[str, Any]:
    base = SummaryRecord.from_json(_body(VERSIONS[-1] / "summary.json"))
    count = SignalRate(1, 2, 0.5, "scenarios", "diagnostic", 0, COUNT, 3, 2)
    failed = FailedResult("s", 1, (), False, None, "boom", "error", ErrorCause("engine", "x"))
    record = replace(
        base,
        signals={**base.signals, "unspelled_codes": count},
        failed=(*base.failed, failed),
        pass_hat_k=PassHatK(
            {"s": {"1": 1.0, "2": 0.5}},
            {"1": 1.0, "2": 0.5},
            {"1": 1, "2": 1},
            {"1": Interval(0.2, 1.0, "wilson"), "2": None},
            0,
        ),
        noise=Noise(1, 1, 1.0, ("s",), 0.4, {"s": ScenarioTrials(1, 2, 0.5, True)}),
        adaptive=Adaptive(6, 2, 8, 0.1, 0.3, "max trials"),
        regenerated=Regenerated(1, 2, {"persona_facts": 2}),
        caller_note="note",
        voice=VoiceFigures(
            1,
            Spread(2, 1.0, 1.0, 1.0, 1.0, 1.0, Interval(0.5, 1.5, "bootstrap")),
            Spread(0, None, None, None, None, None, None),
            0,
            1,
            1,
            0,
            Share(1, 10, 0.1, Interval(0.0, 0.4, "wilson")),
            None,
        ),
    )
    return record.to_json()


def _full_run() -> dict[str, Any]:
    base = RunRecord.from_json(_body(VERSIONS[-1] / "run.json"))
    return replace(base, git=Git("abc", False)).to_json()


def _full_session() -> dict[str, Any]:
    base = SessionRecord.from_json(_body(VERSIONS[-1] / CANCEL / "session.json"))
    record = replace(
        base, error_cause=ErrorCause("transport", "x"), superseded_usage=(SpentUsage("agent", _usage()),)
    )
    return record.to_json()


#: The :func:`fingerprint` of each record as today's writer writes it, by schema (space
#: separated). Versions no longer written are pinned by their frozen folder in tests/records/.
PINNED = {
    "evalctl.metrics/5": """
        agent_backend agent_turns attribution attribution.cause attribution.evidence
        attribution.turn clean_exit db_hash db_state_assertion_pass_rate db_state_assertion_verdicts
        db_state_match domain duration_s engine_time_s error error_cause error_cause.message
        error_cause.source evalctl_version expected_db_hash extra_signals extra_signals.*
        is_action_match is_successful is_task_successful judge_error judge_model judge_passed
        judge_prompt_sha256 judge_score min_agent_turns nl_assertion_pass_rate nl_assertion_verdicts
        num_actions num_tool_calls record_id scenario_name schema stalled started_at stop_reason
        success_breakdown success_breakdown.excluded success_breakdown.failed
        success_breakdown.not_applicable success_breakdown.passed success_signals superseded_usage
        superseded_usage[].calls superseded_usage[].completion_tokens superseded_usage[].model
        superseded_usage[].prompt_tokens superseded_usage[].role trial usage usage.* usage.*.calls
        usage.*.completion_tokens usage.*.model usage.*.prompt_tokens user_backend user_fidelity
        user_fidelity.attempt user_fidelity.checks user_fidelity.checks.* user_fidelity.dropped
        user_fidelity.enforced user_fidelity.findings user_fidelity.findings[].check
        user_fidelity.findings[].detail user_fidelity.findings[].text user_fidelity.findings[].turn
        user_fidelity.judge_error user_fidelity.judged user_fidelity.replaced user_fidelity.turns
        user_turns voice voice.agent_speech_ms voice.agent_turns_with_audio voice.caller_speech_ms
        voice.hearing voice.hearing.entities voice.hearing.entities_heard voice.hearing.errors
        voice.hearing.matched voice.hearing.matched_words voice.hearing.silent
        voice.hearing.transcribed voice.hearing.turns voice.hearing.words voice.latency_ms
        voice.latency_ms.count voice.latency_ms.max voice.latency_ms.mean voice.latency_ms.p50
        voice.latency_ms.p90 voice.latency_ms.p95 voice.media_ms voice.overlap_ms voice.recognizer
        voice.sample_rate voice.timing voice.timing.barge_ins voice.timing.barge_ins_yielded
        voice.timing.long_silences voice.timing.longest_silence_ms voice.timing.stamp_diff_ms
        voice.timing.stamp_diff_ms.count voice.timing.stamp_diff_ms.max
        voice.timing.stamp_diff_ms.mean voice.timing.stamp_diff_ms.p50
        voice.timing.stamp_diff_ms.p90 voice.timing.stamp_diff_ms.p95 voice.timing.turn_latency_ms
        voice.timing.turn_ttfa_ms voice.timing.turns_talking_over voice.timing.vad voice.ttfa_ms
        voice.ttfa_ms.count voice.ttfa_ms.max voice.ttfa_ms.mean voice.ttfa_ms.p50 voice.ttfa_ms.p90
        voice.ttfa_ms.p95 voice.tts voice.tts_s voice.turns_with_overlap voice.wer voice.wer_turns
    """,
    "evalctl.metrics/4": """
        agent_backend agent_turns attribution attribution.cause attribution.evidence
        attribution.turn clean_exit db_hash db_state_assertion_pass_rate db_state_assertion_verdicts
        db_state_match domain duration_s engine_time_s error error_cause error_cause.message
        error_cause.source evalctl_version expected_db_hash extra_signals extra_signals.*
        is_action_match is_successful is_task_successful judge_error judge_model judge_passed
        judge_prompt_sha256 judge_score min_agent_turns nl_assertion_pass_rate nl_assertion_verdicts
        num_actions num_tool_calls record_id scenario_name schema stalled started_at stop_reason
        success_breakdown success_breakdown.excluded success_breakdown.failed
        success_breakdown.not_applicable success_breakdown.passed success_signals superseded_usage
        superseded_usage[].calls superseded_usage[].completion_tokens superseded_usage[].model
        superseded_usage[].prompt_tokens superseded_usage[].role trial usage usage.* usage.*.calls
        usage.*.completion_tokens usage.*.model usage.*.prompt_tokens user_backend user_fidelity
        user_fidelity.attempt user_fidelity.checks user_fidelity.checks.* user_fidelity.enforced
        user_fidelity.findings user_fidelity.findings[].check user_fidelity.findings[].detail
        user_fidelity.findings[].text user_fidelity.findings[].turn user_fidelity.judged
        user_fidelity.replaced user_fidelity.turns user_turns voice voice.agent_speech_ms
        voice.agent_turns_with_audio voice.caller_speech_ms voice.hearing voice.hearing.entities
        voice.hearing.entities_heard voice.hearing.errors voice.hearing.matched
        voice.hearing.matched_words voice.hearing.silent voice.hearing.transcribed
        voice.hearing.turns voice.hearing.words voice.latency_ms voice.latency_ms.count
        voice.latency_ms.max voice.latency_ms.mean voice.latency_ms.p50 voice.latency_ms.p90
        voice.latency_ms.p95 voice.media_ms voice.overlap_ms voice.recognizer voice.sample_rate
        voice.timing voice.timing.barge_ins voice.timing.barge_ins_yielded
        voice.timing.long_silences voice.timing.longest_silence_ms voice.timing.stamp_diff_ms
        voice.timing.stamp_diff_ms.count voice.timing.stamp_diff_ms.max
        voice.timing.stamp_diff_ms.mean voice.timing.stamp_diff_ms.p50
        voice.timing.stamp_diff_ms.p90 voice.timing.stamp_diff_ms.p95 voice.timing.turn_latency_ms
        voice.timing.turn_ttfa_ms voice.timing.turns_talking_over voice.timing.vad voice.ttfa_ms
        voice.ttfa_ms.count voice.ttfa_ms.max voice.ttfa_ms.mean voice.ttfa_ms.p50 voice.ttfa_ms.p90
        voice.ttfa_ms.p95 voice.tts voice.tts_s voice.turns_with_overlap voice.wer voice.wer_turns
    """,
    "evalctl.metrics/3": """
        agent_backend agent_turns clean_exit db_hash db_state_assertion_pass_rate
        db_state_assertion_verdicts db_state_match domain duration_s engine_time_s error error_cause
        error_cause.message error_cause.source evalctl_version expected_db_hash extra_signals
        extra_signals.* is_action_match
        is_successful is_task_successful judge_error judge_model judge_passed judge_prompt_sha256
        judge_score min_agent_turns nl_assertion_pass_rate nl_assertion_verdicts num_actions
        num_tool_calls record_id scenario_name schema stalled started_at stop_reason
        success_breakdown success_breakdown.excluded success_breakdown.failed
        success_breakdown.not_applicable success_breakdown.passed success_signals superseded_usage
        superseded_usage[].calls superseded_usage[].completion_tokens superseded_usage[].model
        superseded_usage[].prompt_tokens superseded_usage[].role trial usage usage.* usage.*.calls
        usage.*.completion_tokens usage.*.model usage.*.prompt_tokens user_backend user_turns voice
        voice.agent_speech_ms voice.agent_turns_with_audio voice.caller_speech_ms voice.latency_ms
        voice.latency_ms.count voice.latency_ms.max voice.latency_ms.mean voice.latency_ms.p50
        voice.latency_ms.p90 voice.media_ms voice.overlap_ms voice.recognizer voice.sample_rate
        voice.ttfa_ms voice.ttfa_ms.count voice.ttfa_ms.max voice.ttfa_ms.mean voice.ttfa_ms.p50
        voice.ttfa_ms.p90 voice.tts voice.tts_s voice.turns_with_overlap voice.wer voice.wer_turns
    """,
    "evalctl.summary/5": """
        adaptive adaptive.max_trials adaptive.rounds adaptive.sessions adaptive.stopped
        adaptive.target_width adaptive.width attribution attribution.agent attribution.data
        attribution.infrastructure attribution.speech attribution.user_simulator caller_note errors
        evalctl_version failed failed[].attribution failed[].attribution.cause
        failed[].attribution.evidence failed[].attribution.turn failed[].error failed[].error_cause
        failed[].error_cause.message failed[].error_cause.source failed[].failed_signals
        failed[].scenario failed[].stalled failed[].stop_reason failed[].trial failed[].verdict
        first_error first_judge_error interrupted invocations judge_errors missing noise noise.flaky
        noise.flaky_scenarios noise.flaky_share noise.minimum_detectable_difference
        noise.per_scenario noise.per_scenario.* noise.per_scenario.*.flaky
        noise.per_scenario.*.passed noise.per_scenario.*.rate noise.per_scenario.*.trials
        noise.scenarios overall overall.ci overall.ci.high overall.ci.low overall.ci.method
        overall.errors overall.failed overall.not_applicable overall.passed overall.rate
        overall.total pass_hat_k pass_hat_k.ci pass_hat_k.ci.* pass_hat_k.ci.*.high
        pass_hat_k.ci.*.low pass_hat_k.ci.*.method pass_hat_k.errors_left_out pass_hat_k.overall
        pass_hat_k.overall.* pass_hat_k.per_scenario pass_hat_k.per_scenario.*
        pass_hat_k.per_scenario.*.* pass_hat_k.scenarios pass_hat_k.scenarios.* regenerated
        regenerated.attempts regenerated.reasons regenerated.reasons.* regenerated.sessions results
        run_dir scenarios schema session_time_s session_time_s.max session_time_s.mean
        session_time_s.total signals signals.* signals.*.ci signals.*.ci.high signals.*.ci.low
        signals.*.ci.method signals.*.errors_left_out signals.*.kind signals.*.max signals.*.passed
        signals.*.rate signals.*.role signals.*.sum signals.*.total signals.*.unit stalled
        stalled.count stalled.min_agent_turns stalled.scenarios stop_reasons stop_reasons.* strict
        strict.ci strict.ci.high strict.ci.low strict.ci.method strict.errors strict.failed
        strict.passed strict.rate strict.total task task.ci task.ci.high task.ci.low task.ci.method
        task.errors task.failed task.not_applicable task.passed task.rate task.total trials unit
        usage usage.* usage.*.calls usage.*.completion_tokens usage.*.models usage.*.prompt_tokens
        voice voice.barge_ins voice.barge_ins_yielded voice.entities voice.latency_ms
        voice.latency_ms.ci voice.latency_ms.ci.high voice.latency_ms.ci.low
        voice.latency_ms.ci.method voice.latency_ms.max voice.latency_ms.mean voice.latency_ms.p50
        voice.latency_ms.p90 voice.latency_ms.p95 voice.latency_ms.turns voice.long_silences
        voice.sessions voice.talking_over voice.ttfa_ms voice.ttfa_ms.ci voice.ttfa_ms.max
        voice.ttfa_ms.mean voice.ttfa_ms.p50 voice.ttfa_ms.p90 voice.ttfa_ms.p95 voice.ttfa_ms.turns
        voice.wer voice.wer.ci voice.wer.ci.high voice.wer.ci.low voice.wer.ci.method voice.wer.hits
        voice.wer.rate voice.wer.total wall_time_s
    """,
    "evalctl.summary/4": """
        adaptive adaptive.max_trials adaptive.rounds adaptive.sessions adaptive.stopped
        adaptive.target_width adaptive.width errors evalctl_version failed failed[].error
        failed[].error_cause failed[].error_cause.message failed[].error_cause.source
        failed[].failed_signals failed[].scenario failed[].stalled failed[].stop_reason
        failed[].trial failed[].verdict first_error first_judge_error interrupted invocations
        judge_errors missing noise noise.flaky noise.flaky_scenarios noise.flaky_share
        noise.minimum_detectable_difference noise.per_scenario noise.per_scenario.*
        noise.per_scenario.*.flaky noise.per_scenario.*.passed noise.per_scenario.*.rate
        noise.per_scenario.*.trials noise.scenarios overall overall.ci overall.ci.high
        overall.ci.low overall.ci.method overall.errors overall.failed overall.not_applicable
        overall.passed overall.rate overall.total pass_hat_k pass_hat_k.ci pass_hat_k.ci.*
        pass_hat_k.ci.*.high pass_hat_k.ci.*.low pass_hat_k.ci.*.method pass_hat_k.errors_left_out
        pass_hat_k.overall pass_hat_k.overall.* pass_hat_k.per_scenario pass_hat_k.per_scenario.*
        pass_hat_k.per_scenario.*.* pass_hat_k.scenarios pass_hat_k.scenarios.* results run_dir
        scenarios schema session_time_s session_time_s.max session_time_s.mean session_time_s.total
        signals signals.* signals.*.ci signals.*.ci.high signals.*.ci.low signals.*.ci.method
        signals.*.errors_left_out signals.*.kind signals.*.max signals.*.passed signals.*.rate
        signals.*.role signals.*.sum signals.*.total signals.*.unit stalled stalled.count
        stalled.min_agent_turns stalled.scenarios stop_reasons stop_reasons.* strict strict.ci strict.ci.high
        strict.ci.low strict.ci.method strict.errors
        strict.failed strict.passed strict.rate strict.total task task.ci task.ci.high task.ci.low
        task.ci.method task.errors task.failed task.not_applicable task.passed task.rate task.total
        trials unit usage usage.* usage.*.calls usage.*.completion_tokens usage.*.models
        usage.*.prompt_tokens wall_time_s
    """,
    "evalctl.summary/3": """
        errors evalctl_version failed failed[].error failed[].error_cause failed[].error_cause.message
        failed[].error_cause.source failed[].failed_signals failed[].scenario failed[].stalled
        failed[].stop_reason failed[].trial failed[].verdict first_error first_judge_error
        interrupted invocations judge_errors missing overall overall.errors overall.failed
        overall.not_applicable overall.passed overall.rate overall.total pass_hat_k
        pass_hat_k.overall pass_hat_k.overall.* pass_hat_k.per_scenario pass_hat_k.per_scenario.*
        pass_hat_k.per_scenario.*.* results run_dir scenarios schema session_time_s
        session_time_s.max session_time_s.mean session_time_s.total signals signals.*
        signals.*.errors_left_out signals.*.kind signals.*.max signals.*.passed signals.*.rate
        signals.*.role signals.*.sum signals.*.total signals.*.unit stalled stalled.count
        stalled.min_agent_turns stalled.scenarios stop_reasons stop_reasons.* task task.errors
        task.failed task.not_applicable task.passed task.rate task.total trials unit usage usage.*
        usage.*.calls usage.*.completion_tokens usage.*.models usage.*.prompt_tokens wall_time_s
    """,
    "evalctl.run/3": """
        args argv created_at data_root data_root_changed_from_pins data_root_files
        data_root_files.* evalctl_version git git.commit git.dirty hash_notes invocations
        invocations[].args invocations[].argv invocations[].command invocations[].finished_at
        invocations[].id invocations[].interrupted invocations[].started_at
        invocations[].wall_time_s models python scenarios schema settings spec_dir spec_files
        spec_files.* templates templates.* trials
    """,
    "evalctl.session/1": """
        agent_backend agent_turns duration_s ended_at engine_time_s error error_cause
        error_cause.message error_cause.source final_db invocation scenario_name schema started_at
        stop_reason superseded_usage superseded_usage[].calls superseded_usage[].completion_tokens
        superseded_usage[].model superseded_usage[].prompt_tokens superseded_usage[].role trial
        usage usage.* usage.*.calls usage.*.completion_tokens usage.*.model usage.*.prompt_tokens
        user_backend user_db user_turns
    """,
}

WHERE = {
    "metrics": "METRICS_VERSION in engine/core/records/metrics.py",
    "summary": "SUMMARY_VERSION in engine/core/records/summary.py",
    "run": "RUN_VERSION in engine/core/records/run.py",
    "session": "SESSION_SCHEMA in engine/core/records/session.py",
}


def check_fields(record: str, body: dict[str, Any]) -> None:
    """Fail with what to do when ``body`` (a record as written) has other fields than its schema's
    pinned ones."""
    schema = body["schema"]
    paths = fingerprint(body)
    assert schema in PINNED, f"no fields pinned for {schema}: add it to PINNED with these:\n{' '.join(paths)}"
    pinned = sorted(PINNED[schema].split())
    added = sorted(set(paths) - set(pinned))
    removed = sorted(set(pinned) - set(paths))
    assert not added and not removed, (
        f"{record}.json is written with other fields (added: {', '.join(added) or 'none'}; removed: "
        f"{', '.join(removed) or 'none'}) but still says {schema}. Bump {WHERE[record]}, teach its "
        f"from_json to read {schema} as well, write a frozen run of the new version (tests/records/"
        f"README.md) and pin the new version's fields in PINNED (keep {schema}'s)."
    )


@pytest.mark.parametrize(
    ("record", "build"),
    [("metrics", _full_metrics), ("summary", _full_summary), ("run", _full_run), ("session", _full_session)],
)
def test_a_change_of_fields_bumps_the_version(record: str, build: Any) -> None:
    check_fields(record, build())


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda b: b.update(latency_ok=True), "added: latency_ok; removed: none"),
        (lambda b: b.pop("judge_error"), "added: none; removed: judge_error"),
        (lambda b: b["voice"].update(jitter_ms=1), "added: voice.jitter_ms"),
        (lambda b: b.update(schema="evalctl.metrics/6"), "no fields pinned for evalctl.metrics/6"),
    ],
    ids=["added", "removed", "nested", "unpinned-version"],
)
def test_a_field_change_without_a_bump_fails_and_says_what_to_do(change: Any, says: str) -> None:
    body = _full_metrics()
    change(body)
    with pytest.raises(AssertionError) as failed:
        check_fields("metrics", body)
    assert says in str(failed.value)
    if "pinned for" not in says:
        assert "Bump METRICS_VERSION in engine/core/records/metrics.py" in str(failed.value)


def test_the_six_signals_fields_are_part_of_the_metrics_fingerprint() -> None:
    paths = fingerprint(_full_metrics())
    for signal in SIGNALS:
        assert any(p == signal or p.startswith(f"{signal}_") for p in paths), signal
