"""Scoring a stored session, and the run's summaries.

- ``score_session(run_dir, scenario, result, trials, options, judge, superseded) -> MetricsRecord``
  — the signals, the composite and ``metrics.json`` of a session whose artifacts are stored
  (``engine.results.session_files.write_session``), given the judge's outcome (asked by
  ``engine.results.scorer.Scorer``, which runs this stage for the runner and ``evalctl rescore``);
- ``await finish_session(run_dir, scenario, result, trials, options) -> MetricsRecord`` — store,
  judge and score one session in one call (tests, benchmarks);
- ``finish_run(run_dir, run_info) -> SummaryRecord`` — at the end of a run, also after Ctrl-C;
  ``run_totals(run_dir) -> SummaryTotals`` — the summary's running totals of a run folder's
  stored metrics (small rows only), which it builds the summary from.

Per (scenario, trial) directory (``engine.results.session_files.scenario_dir``) scoring writes
``judge_result.json`` (judge on), ``user_rubric.json`` (judge on, a model caller) and LAST
``metrics.json``: its presence (parsing as an ``engine.core.records.metrics.MetricsRecord`` that
names this scenario and trial) marks the result complete.

``run_info`` (a plain dict from the runner; every key optional) — what ``run.json`` and the
summary need: ``argv`` (list of str), ``args`` (dict of parsed options), ``spec_dir`` (str),
``data_root`` (str), ``models`` (``{agent, user, judge}`` → model or backend string),
``trials`` (int), ``scenarios`` (planned scenario names, to report missing ones),
``min_agent_turns`` (int), ``started_at`` / ``finished_at`` (ISO 8601), ``wall_time_s``
(seconds), ``interrupted`` (bool, True after Ctrl-C).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Callable, Collection
from datetime import datetime
from pathlib import Path
from typing import Any

from engine import __version__
from engine.core.dbhash import db_hash
from engine.core.model import Scenario, SessionResult
from engine.core.options import ScoringOptions
from engine.core.records.common import ErrorCause, ErrorSource, SpentUsage
from engine.core.records.fidelity import FIDELITY_ERROR, UserFidelity
from engine.core.records.metrics import (
    ERROR_VERDICT,
    EXTRA_SIGNALS,
    SIGNALS,
    Breakdown,
    MetricsRecord,
    SignalFields,
    Usage,
)
from engine.core.records.run import RunRecord
from engine.core.records.session import SessionRecord
from engine.core.records.summary import SummaryRecord
from engine.core.records.voice import VoiceSummary
from engine.results.adaptive_record import read_adaptive
from engine.results.provenance import resume_command, run_provenance
from engine.results.session_files import (
    JUDGE_RESULT,
    METRICS,
    SESSION,
    USER_RUBRIC,
    attempts_dir,
    db_hashes,
    open_folder,
    read_metrics,
    read_session,
    result_files,
    stage_session,
    stored_voice,
    write_session,
)
from engine.results.session_files import is_complete as is_complete  # re-exported (older callers)
from engine.results.session_files import scenario_dir as scenario_dir  # re-exported (older callers)
from engine.results.unreadable import note
from engine.scoring.attribution import attribute
from engine.scoring.composite import compute_composite, stalled_threshold
from engine.scoring.fidelity import check_fidelity
from engine.scoring.judge import Judge, JudgeOutcome, judge_gates
from engine.scoring.registry import fidelity_checks, signals
from engine.scoring.rubric import RubricOutcome, ask_rubric, with_rubric
from engine.scoring.signals import SignalInputs, compute_signals
from engine.scoring.summary import SummaryTotals, render_summary_text
from engine.scoring.summary_rows import SummaryRow
from engine.spec.gold_replay import gold_replay
from engine.util.artifacts import FolderWrite, read_json, read_record, write_json, write_text
from engine.util.errors import UsageError
from engine.util.untrusted import one_line

log = logging.getLogger(__name__)


def gold_db(scenario: Scenario) -> dict[str, Any] | None:
    """The DB the scenario's gold trace ends with (for domain diagnostics), replayed once per
    scenario (``engine.spec.gold_replay.gold_replay``); None without a gold trace or when the replay fails."""
    if scenario.gold_trace is None:
        return None
    try:
        return gold_replay(scenario).db
    except Exception as exc:  # diagnostics are optional: never let them break scoring
        log.debug("gold replay for %s failed: %s", scenario.name, exc)
        return None


def verdict_error(scenario: Scenario, result: SessionResult, judge: JudgeOutcome | None) -> ErrorCause | None:
    """Why this result can have no verdict, or None: the session's infrastructure failure
    (``result.error_source``), else a judge that was asked and failed while one of its signals
    gates the scenario (``nl_assertion`` only when the scenario has claims)."""
    if result.error_source:
        return ErrorCause(result.error_source, one_line(result.error or "session error"))
    if judge is None or not judge.error:
        return None
    if judge_gates(scenario):
        return ErrorCause(ErrorSource.JUDGE, one_line(judge.error))
    return None


def fidelity_error(fidelity: UserFidelity) -> ErrorCause | None:
    """A caller that broke its instructions (and can be regenerated: not the replay caller)
    makes the result ``error``, source ``user_simulator``, the message naming its first finding
    (``caller fidelity: caller turn N: ...``); None else."""
    if not fidelity.enforced or not fidelity.findings:
        return None
    first = fidelity.findings[0]
    return ErrorCause(ErrorSource.USER_SIMULATOR, one_line(f"{FIDELITY_ERROR}{first.line()} ({first.check})"))


def gold_reaches(scenario: Scenario, expected_hash: str | None) -> bool | None:
    """Whether the scenario's gold conversation, replayed, ends on its expected DB (None without
    a gold trace, an expected DB, or when the replay fails to run)."""
    if expected_hash is None or scenario.gold_trace is None:
        return None
    final = gold_db(scenario)
    return None if final is None else db_hash(final, scenario.domain.hash_rules) == expected_hash


def replaced_attempts(sdir: Path, name: str, trial: int) -> tuple[int, tuple[str, ...]]:
    """``(attempt number, reasons of the attempts replaced)`` of the result in ``sdir``: read from
    the earlier attempts kept under the run's ``.regenerated/`` folder (``attempt_<k>``, each with
    its ``metrics.json``); ``(0, ())`` when there is none."""
    run_dir = sdir.parent.parent if sdir.name.startswith("trial_") else sdir.parent
    folder = attempts_dir(run_dir, name, trial, 2 if sdir.name.startswith("trial_") else 1)
    if not os.path.lexists(folder):  # nearly every result: no attempt was ever replaced
        return 0, ()
    reasons = []
    for k in range(1, 100):
        record = read_metrics(folder / f"attempt_{k}" / METRICS)
        if record is None:
            break
        fid = record.user_fidelity
        reasons.append(fid.reason if fid is not None and fid.reason else "error")
    return len(reasons), tuple(reasons)


def signal_error(scenario: Scenario, fields: dict[str, Any]) -> ErrorCause | None:
    """A gating installed signal that could not be measured (it raised or returned garbage:
    its ``extra_signals.<name>.error``) makes the result ``error``, source ``engine`` (the
    plugin's failure, never the agent's), the message naming the signal; None else."""
    extra = fields.get(EXTRA_SIGNALS, {})
    for name in scenario.success_signals:
        note = extra.get(name, {}).get("error")
        if note:
            return ErrorCause(ErrorSource.ENGINE, one_line(note))
    return None


def score_session(
    run_dir: Path,
    scenario: Scenario,
    result: SessionResult,
    trials: int,
    options: ScoringOptions,
    judge: JudgeOutcome | None = None,
    superseded: tuple[SpentUsage, ...] = (),
    rubric: RubricOutcome | None = None,
) -> MetricsRecord:
    """Score a stored session and write ``judge_result.json`` (when ``judge``),
    ``user_rubric.json`` (when ``rubric``) and, last, ``metrics.json`` (one durable sync for
    all); returns the metrics. ``judge`` is the judge's outcome (None: judge off); ``rubric`` the
    judged caller rubric's (None: judge off or not a model caller); ``superseded`` the model use
    this result replaced (see
    ``engine.results.session_files.spent_before``). An audio session's voice summary is read from its
    stored ``voice.json``. Raises OSError only when the folder cannot be written."""
    metrics, batch = stage_score_session(
        run_dir, scenario, result, trials, options, judge, superseded, rubric
    )
    batch.commit()
    return metrics


def stage_score_session(
    run_dir: Path,
    scenario: Scenario,
    result: SessionResult,
    trials: int,
    options: ScoringOptions,
    judge: JudgeOutcome | None = None,
    superseded: tuple[SpentUsage, ...] = (),
    rubric: RubricOutcome | None = None,
) -> tuple[MetricsRecord, FolderWrite]:
    """:func:`score_session` without the commit: returns the metrics and the folder's pending
    batch for a group commit (``engine.util.artifacts.commit_folders``). Raises OSError."""
    sdir = scenario_dir(Path(run_dir), scenario.name, result.trial, trials)
    batch = FolderWrite(sdir)
    try:
        return stage_metrics(batch, scenario, result, options, judge, superseded, rubric=rubric), batch
    except BaseException:
        batch.abandon()
        raise


def stage_metrics(
    batch: FolderWrite,
    scenario: Scenario,
    result: SessionResult,
    options: ScoringOptions,
    judge: JudgeOutcome | None = None,
    superseded: tuple[SpentUsage, ...] = (),
    hashes: tuple[str | None, str | None] | None = None,
    rubric: RubricOutcome | None = None,
    fresh: bool = False,
) -> MetricsRecord:
    """Score the session whose folder ``batch`` writes: ``judge_result.json`` (when ``judge``),
    ``user_rubric.json`` (when ``rubric``: its findings join the caller-fidelity ones) and
    ``metrics.json`` as a marker (it lands when the batch is committed); returns the metrics.
    ``hashes``: the final and expected DB hashes when already known
    (``engine.results.session_files.db_hashes``). ``fresh``: the folder was just cleared and
    holds no audio (``stage_store_and_score`` without a voice writer): no ``voice.json`` to
    read, no earlier verdict file to remove."""
    sdir = batch.folder
    voice_run, voice = (False, None) if fresh else stored_voice(sdir)
    if not fresh:
        (sdir / METRICS).unlink(missing_ok=True)  # incomplete until the new verdict lands
    actual_hash, expected_hash = hashes or db_hashes(scenario, result)
    inputs = SignalInputs(
        scenario,
        result,
        options.strict_match,
        actual_hash,
        expected_hash,
        judge,
        gold_db(scenario),
        voice_run=voice_run,
        voice=voice,
    )
    registry = signals()
    values, fields = compute_signals(inputs, registry)
    # an audio session is also scored on the voice signals (speech_matches_text), whatever its spec
    gates = tuple(scenario.success_signals)
    if voice_run:
        gates += tuple(n for n in registry.voice_gates() if n not in gates)
    goal_met = None if expected_hash is None else actual_hash == expected_hash
    fidelity = check_fidelity(
        scenario, result, goal_met, fidelity_checks(), *replaced_attempts(sdir, scenario.name, result.trial)
    )
    fidelity = with_rubric(fidelity, rubric)  # a rubric that failed only notes its judge_error
    cause = (
        verdict_error(scenario, result, judge) or fidelity_error(fidelity) or signal_error(scenario, fields)
    )
    min_turns = stalled_threshold(options.min_agent_turns, scenario.gold_trace)
    # a broken caller makes what was measured not the agent's outcome, as a session error does
    session_erred = bool(result.error_source) or (
        cause is not None and cause.message.startswith(FIDELITY_ERROR)
    )
    stalled = not session_erred and result.agent_turns < min_turns
    comp = compute_composite(
        values, gates, stalled, error=cause is not None, measured_stand=not session_erred
    )
    if comp.is_successful != ERROR_VERDICT:
        cause = None  # a measured failure decided the verdict: the judge's failure is in judge_error
    attribution = None
    if comp.is_successful is False:
        failed = tuple(comp.breakdown["failed"])
        attribution = attribute(
            scenario, result, failed, comp.stalled, fidelity, gold_reaches(scenario, expected_hash), voice_run
        )
    usage = {role: dict(u) for role, u in result.usage.items()}
    if judge is not None:
        batch.put_json(JUDGE_RESULT, judge.to_json())
        usage["judge"] = dict(judge.usage)
    elif not fresh:
        (sdir / JUDGE_RESULT).unlink(missing_ok=True)
    if rubric is not None:
        batch.put_json(USER_RUBRIC, rubric.to_json())
        usage["judge"] = _sum_usage(usage.get("judge"), rubric.usage)
    elif not fresh:
        (sdir / USER_RUBRIC).unlink(missing_ok=True)
    metrics = MetricsRecord(
        scenario_name=scenario.name,
        record_id=scenario.record_id,
        domain=scenario.domain.name,
        trial=result.trial,
        is_successful=comp.is_successful,
        is_task_successful=comp.is_task_successful,
        error_cause=cause,
        success_breakdown=Breakdown.from_json(comp.breakdown),
        success_signals=gates,
        stalled=comp.stalled,
        min_agent_turns=min_turns,
        stop_reason=result.stop_reason,
        signals=SignalFields.from_outputs(
            fields, tuple(n for n in values if n not in SIGNALS and n not in fields.get(EXTRA_SIGNALS, {}))
        ),
        db_hash=actual_hash,
        expected_db_hash=expected_hash,
        agent_turns=result.agent_turns,
        user_turns=result.user_turns,
        num_actions=len(result.actions),
        num_tool_calls=len(result.tool_calls),
        started_at=result.started_at,
        duration_s=round(result.duration_s, 6),
        engine_time_s=round(result.engine_time_s, 6),
        agent_backend=result.agent_backend,
        user_backend=result.user_backend,
        usage={role: Usage.from_json(u) for role, u in usage.items() if u},
        judge_model=judge.model if judge else None,
        judge_prompt_sha256=judge.prompt_sha256 if judge else None,
        error=result.error,
        evalctl_version=__version__,
        superseded_usage=superseded,
        voice_run=voice_run,
        voice=voice,
        attribution=attribution,
        user_fidelity=fidelity,
    )
    batch.put_json(METRICS, metrics.to_json(), marker=True)
    return metrics


def _sum_usage(a: dict[str, Any] | None, b: dict[str, Any]) -> dict[str, Any]:
    """Two ``{model, prompt_tokens, completion_tokens, calls}`` of the same judge, added."""
    if not a:
        return dict(b)
    keys = ("prompt_tokens", "completion_tokens", "calls")
    return {"model": a.get("model") or b.get("model"), **{k: a.get(k, 0) + b.get(k, 0) for k in keys}}


def store_and_score(
    run_dir: Path,
    scenario: Scenario,
    result: SessionResult,
    trials: int,
    options: ScoringOptions,
    invocation: str,
    superseded: tuple[SpentUsage, ...] = (),
    voice: Callable[[FolderWrite], VoiceSummary | None] | None = None,
) -> tuple[SessionRecord, MetricsRecord | None, Exception | None]:
    """Store a session that just ended and score it without a judge, all in ONE write of its
    folder (one durable sync; ``session.json`` then ``metrics.json`` land last). Returns the
    session record, the metrics and None, or the record, None and the exception scoring raised
    (the session is then stored unscored: a ``--resume`` scores it). Raises OSError only when the
    folder cannot be written."""
    staged, batch = stage_store_and_score(
        run_dir, scenario, result, trials, options, invocation, superseded, voice
    )
    batch.commit()
    return staged


def stage_store_and_score(
    run_dir: Path,
    scenario: Scenario,
    result: SessionResult,
    trials: int,
    options: ScoringOptions,
    invocation: str,
    superseded: tuple[SpentUsage, ...] = (),
    voice: Callable[[FolderWrite], VoiceSummary | None] | None = None,
) -> tuple[tuple[SessionRecord, MetricsRecord | None, Exception | None], FolderWrite]:
    """:func:`store_and_score` without the commit: its value and the folder's pending batch, for
    a group commit (``engine.util.artifacts.commit_folders``). Raises OSError."""
    hashes = db_hashes(scenario, result)
    batch = open_folder(run_dir, scenario.name, result.trial, trials)
    try:
        record = stage_session(batch, scenario, result, invocation, superseded, voice, hashes)
        metrics: MetricsRecord | None = None
        failure: Exception | None = None
        try:
            fresh = voice is None  # open_folder cleared it; only a voice writer adds voice.json
            metrics = stage_metrics(batch, scenario, result, options, None, superseded, hashes, fresh=fresh)
        except Exception as err:  # scoring trouble: the session is still stored
            failure = err
    except BaseException:
        batch.abandon()
        raise
    return (record, metrics, failure), batch


async def finish_session(
    run_dir: Path,
    scenario: Scenario,
    result: SessionResult,
    trials: int,
    options: ScoringOptions,
    voice: Callable[[FolderWrite], VoiceSummary | None] | None = None,
) -> MetricsRecord:
    """Store, judge (when ``options.judge_model``) and score one session in one call; returns its
    metrics. ``voice`` writes an audio session's artifacts (``engine.session.voice.run.VoiceRun.artifacts``).
    Judge failures are recorded, never raised. Raises OSError only when the run directory cannot
    be written."""
    write_session(run_dir, scenario, result, trials, invocation="", voice=voice)
    if not options.judge_model:
        return score_session(run_dir, scenario, result, trials, options)
    judge = Judge(options)
    try:
        verdict = await judge.ask(scenario, result)
        rubric = await ask_rubric(judge, scenario, result)
    finally:
        await judge.aclose()
    return score_session(run_dir, scenario, result, trials, options, verdict, rubric=rubric)


def scored_dirs(run_dir: Path) -> list[tuple[Path, MetricsRecord]]:
    """``(directory, metrics)`` of every complete result under ``run_dir`` (``<name>/`` and
    ``<name>/trial_<k>/``), one per (scenario, trial), sorted by name then trial. Torn or foreign
    ``metrics.json`` files, and copies in the wrong directory, are skipped."""
    run_dir = Path(run_dir)
    seen: dict[tuple[str, int], tuple[Path, MetricsRecord]] = {}
    for path in result_files(run_dir, METRICS):
        record = read_metrics(path)
        if record is None:
            continue
        if _misplaced(run_dir, path, record):
            continue  # a copy in the wrong place must not count twice
        seen[(record.scenario_name, record.trial)] = (path.parent, record)
    return [seen[k] for k in sorted(seen)]


def _misplaced(run_dir: Path, path: Path, record: MetricsRecord) -> bool:
    """Whether ``path`` is not where the result it records is written (noted when so)."""
    nested = path.parent.parent != run_dir
    if scenario_dir(run_dir, record.scenario_name, record.trial, 2 if nested else 1) == path.parent:
        return False
    note(path, f"records {record.scenario_name} trial {record.trial}, not this folder's result (a copy?)")
    return True


def load_run_metrics(run_dir: Path) -> list[MetricsRecord]:
    """The metrics records of :func:`scored_dirs`."""
    return [m for _, m in scored_dirs(run_dir)]


def run_totals(
    run_dir: Path,
    known: SummaryTotals | None = None,
    trials: int | None = None,
    planned: Collection[str] | None = None,
    outside: list[str] | None = None,
) -> SummaryTotals:
    """The summary's running totals of every complete result under ``run_dir`` (the results of
    :func:`scored_dirs`), read one ``metrics.json`` at a time and kept as small rows. ``known``:
    totals already counted by the caller for results it wrote itself into this run (laid out for
    ``trials``); their folders are not read again, and the totals returned are ``known`` itself,
    completed. ``planned``: the run's scenario names, when known: a result of another scenario
    (a folder the run did not make: copied in, or written by an agent's code) is not counted, its
    folder's name added to ``outside``. The scale-out paths (``--workers``, shards, merge) build a
    run's summary from its folder with this."""
    run_dir = Path(run_dir)
    totals = known if known is not None else SummaryTotals()
    counted = set()
    if known is not None and trials is not None:
        counted = {scenario_dir(run_dir, *key, trials) for key in known}
    wanted = None if planned is None else set(planned)
    for path in result_files(run_dir, METRICS):
        if path.parent in counted:
            continue
        if wanted is not None and _folder_scenario(run_dir, path) not in wanted:
            if outside is not None:
                outside.append(str(path.parent.relative_to(run_dir)))
            continue
        record = read_metrics(path)
        if record is None:
            continue
        if _misplaced(run_dir, path, record):
            continue  # a copy in the wrong place must not count twice
        totals.add(record)  # a later path of the same key replaces the row, as in scored_dirs
    return totals


def _folder_scenario(run_dir: Path, path: Path) -> str:
    """The scenario whose result folder holds ``path`` (``<name>/`` or ``<name>/trial_<k>/``)."""
    return path.relative_to(run_dir).parts[0]


def _with_defaults(run_dir: Path, rows: list[SummaryRow], run_info: dict[str, Any]) -> dict[str, Any]:
    """Fill what the runner left out from the results themselves: spec dir and data root (from a
    scenario's metadata.json), ``wall_time_s`` (alias ``wall_s``), ``models`` (from ``agent`` /
    ``user`` backend strings and the usage records), ``min_agent_turns`` (from metrics)."""
    info = dict(run_info)
    if info.get("wall_time_s") is None and info.get("wall_s") is not None:
        info["wall_time_s"] = info["wall_s"]
    if not info.get("spec_dir") or not info.get("data_root"):
        found = [
            *run_dir.glob("*/scenario_config/metadata.json"),
            *run_dir.glob("*/trial_*/scenario_config/metadata.json"),
        ]
        with contextlib.suppress(OSError, ValueError, IndexError, AttributeError):
            meta = read_json(sorted(found)[0])
            info["spec_dir"] = info.get("spec_dir") or meta.get("spec_dir")
            info["data_root"] = info.get("data_root") or meta.get("data_root")
    if not info.get("models"):
        models: dict[str, Any] = {r: info[r] for r in ("agent", "user") if info.get(r)}
        for row in rows:
            for role, model in row.models:
                if role not in models or role == "judge":
                    models[role] = model
        info["models"] = models
    if info.get("min_agent_turns") is None and rows:
        info["min_agent_turns"] = rows[0].min_agent_turns
    return info


def _instant(text: str | None) -> datetime | None:
    try:
        return datetime.fromisoformat(text) if text else None
    except ValueError:
        return None


def wall_time(run_dir: Path, record: RunRecord) -> float | None:
    """Seconds of every invocation of the run, summed: each one's ``wall_time_s``; for one that was
    killed (none recorded), from its start to the end of the last session it stored (its
    ``session.json`` records name it; read only when some invocation was killed). None when no
    invocation says."""
    ends: dict[str, datetime] = {}
    if any(inv.wall_time_s is None for inv in record.invocations):
        for path in result_files(run_dir, SESSION):
            session = read_session(path.parent)
            end = _instant(session.ended_at) if session is not None else None
            if session is not None and end is not None:
                ends[session.invocation] = max(end, ends.get(session.invocation, end))
    total, known = 0.0, False
    for inv in record.invocations:
        if inv.wall_time_s is not None:
            total, known = total + inv.wall_time_s, True
            continue
        start = _instant(inv.started_at)
        if start is not None and inv.id in ends:
            total, known = total + max(0.0, (ends[inv.id] - start).total_seconds()), True
    return round(total, 3) if known else None


def finish_run(
    run_dir: Path, run_info: dict[str, Any], known: SummaryTotals | None = None, trials: int | None = None
) -> SummaryRecord:
    """Recompute the run summary over every scenario directory in ``run_dir`` and write
    ``all_summary.txt``, ``summary.json`` and ``run.json``; returns the summary.

    Safe to call repeatedly (after a resume, after Ctrl-C): results are read from disk one at a
    time (:func:`run_totals`), each (scenario, trial) counted once; ``known`` / ``trials``: the
    running totals of the results this process wrote itself (not read again). The summary's wall
    time covers every invocation of the run (:func:`wall_time`). Nothing but the summary's small
    per-result rows is held.
    """
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    planned = run_info.get("scenarios")
    outside: list[str] = []
    counted = run_totals(run_dir, known, trials, planned if isinstance(planned, list) else None, outside)
    if outside:
        shown = ", ".join(outside[:5]) + (f" and {len(outside) - 5} more" if len(outside) > 5 else "")
        print(
            f"evalctl: {len(outside)} result folder(s) of scenarios this run did not select are not "
            f"counted (made outside the run: copied in, or by an agent's code?): {one_line(shown, 400)}",
            file=sys.stderr,
        )
    rows = counted.rows()
    run_info = _with_defaults(run_dir, rows, run_info)
    adaptive = read_adaptive(run_dir)
    if adaptive is not None:  # an adaptive-trials run: its spend, and which trials it planned
        run_info = {**run_info, "adaptive": adaptive}
    record = run_provenance(run_dir, run_info)
    write_json(run_dir / "run.json", record.to_json())
    totals = {"wall_time_s": wall_time(run_dir, record), "invocations": len(record.invocations)}
    summary = counted.summary({**run_info, **totals}, run_dir=str(run_dir))
    write_json(run_dir / "summary.json", summary.to_json())
    write_text(run_dir / "all_summary.txt", render_summary_text(summary, title=str(run_dir)))
    return summary


def load_summary(run_dir: Path) -> SummaryRecord:
    """The ``summary.json`` of a run; raises UsageError when ``run_dir`` is not a finished run."""
    path = Path(run_dir) / "summary.json"
    try:
        return SummaryRecord.from_json(read_record(path))
    except FileNotFoundError:
        if not (Path(run_dir) / "run.json").is_file():
            raise UsageError(f"{run_dir}: not an evalctl run directory (no run.json)") from None
        raise UsageError(
            f"{run_dir}: no summary.json yet: the run is still going (its summary comes at its end), "
            f"or it stopped before writing one (`{resume_command(run_dir)}` completes it)"
        ) from None
    except (OSError, ValueError) as exc:  # bad JSON, not the record (RecordError), not a file
        raise UsageError(
            f"{path}: unreadable ({exc}); `{resume_command(run_dir)}` rewrites it"
        ) from None
