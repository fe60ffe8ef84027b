"""After a session: score it and write its artifacts; after a run: the summaries.

The runner calls only these functions, so scoring and artifacts can change without touching it:

- ``is_complete(run_dir, scenario_name, trial, trials) -> bool`` — decides what ``--resume`` re-runs;
- ``await finish_session(run_dir, scenario, result, trials, options, voice) -> MetricsRecord`` —
  after every session (``voice``: an audio session's artifact writer);
- ``finish_run(run_dir, run_info) -> SummaryRecord`` — at the end of a run, also after Ctrl-C.

Per (scenario, trial) directory (:func:`scenario_dir`), every file written atomically:
``final_db.json``, ``expected_db.json``, ``actions.json``, ``tool_calls.json``,
``transcript.jsonl``, ``final_scenario_db_hash.txt``, ``scenario_config/{metadata.json,
agent_prompt.md, user_prompt.md, tools.json}``, ``judge_result.json`` (judge on), ``voice.json``
and ``audio/{user,agent}.wav`` (audio sessions), and LAST ``metrics.json``: its presence
(parsing as an ``engine.records.metrics.MetricsRecord`` that names this scenario and trial) marks
the result complete.

``run_info`` (a plain dict from the runner; every key optional) — what ``run.json`` and the
summary need: ``argv`` (list of str), ``args`` (dict of parsed options), ``spec_dir`` (str),
``data_root`` (str), ``models`` (``{agent, user, judge}`` → model or backend string),
``trials`` (int), ``scenarios`` (planned scenario names, to report missing ones),
``min_agent_turns`` (int), ``started_at`` / ``finished_at`` (ISO 8601), ``wall_time_s``
(seconds), ``interrupted`` (bool, True after Ctrl-C).
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine import __version__, render
from engine.artifacts import read_json, write_db_json, write_json, write_jsonl, write_text
from engine.dbhash import db_hash
from engine.errors import UsageError
from engine.model import Scenario, SessionResult
from engine.options import ScoringOptions
from engine.provenance import run_provenance
from engine.records.metrics import SIGNALS, Breakdown, MetricsRecord, SignalFields, Usage
from engine.records.summary import SummaryRecord
from engine.records.voice import VoiceSummary
from engine.replay import replay_scenario
from engine.scoring.composite import compute_composite, stalled_threshold
from engine.scoring.judge import run_judge
from engine.scoring.signals import SignalInputs, compute_signals
from engine.scoring.summary import build_summary, render_summary_text

log = logging.getLogger(__name__)

METRICS = "metrics.json"


def scenario_dir(run_dir: Path, scenario_name: str, trial: int, trials: int) -> Path:
    """Where one (scenario, trial) writes: ``run_dir/<name>``, or ``run_dir/<name>/trial_<k>`` when
    trials > 1."""
    return run_dir / scenario_name if trials == 1 else run_dir / scenario_name / f"trial_{trial}"


def read_metrics(path: Path) -> MetricsRecord | None:
    """Parse a ``metrics.json``; None when it is missing, torn or not ours (RecordError)."""
    try:
        return MetricsRecord.from_json(read_json(path))
    except (OSError, ValueError):  # RecordError is a ValueError
        return None


def is_complete(run_dir: Path, scenario_name: str, trial: int, trials: int) -> bool:
    """True when that (scenario, trial) already has a complete, scored result (used by --resume):
    its ``metrics.json`` parses and names this scenario and trial."""
    record = read_metrics(scenario_dir(Path(run_dir), scenario_name, trial, trials) / METRICS)
    return record is not None and record.scenario_name == scenario_name and record.trial == trial


def gold_path(scenario: Scenario) -> dict[str, Any]:
    """What a replay caller plays against a model agent, for triage: the gold's agent tool calls
    ``[{turn, name, arguments}]`` (``turn``: the agent turn, counted from 0) and its caller lines."""
    calls: list[dict[str, Any]] = []
    turn = -1
    assert scenario.gold_trace is not None
    for step in scenario.gold_trace:
        if step.kind == "user":
            turn += 1
        elif step.kind == "tool_call" and step.side == "agent":
            calls.append({"turn": max(turn, 0), "name": step.tool, "arguments": dict(step.arguments)})
    ending = [t.name for t in scenario.tools.tools if t.ends_call == "exit"]
    return {
        "tool_calls": calls,
        "user_lines": list(scenario.gold_trace.lines("user")),
        "ending_tools": ending,
    }


_GOLD_DBS: dict[int, tuple[Scenario, dict[str, Any] | None]] = {}


def gold_db(scenario: Scenario) -> dict[str, Any] | None:
    """The DB the scenario's gold trace ends with (for domain diagnostics), replayed once per
    scenario and cached; None without a gold trace or when the replay fails."""
    hit = _GOLD_DBS.get(id(scenario))
    if hit is not None and hit[0] is scenario:
        return hit[1]
    db = None
    if scenario.gold_trace is not None:
        try:
            db = replay_scenario(scenario).db
        except Exception as exc:  # diagnostics are optional: never let them break scoring
            log.debug("gold replay for %s failed: %s", scenario.name, exc)
    _GOLD_DBS[id(scenario)] = (scenario, db)
    return db


def _rendered_config(scenario: Scenario) -> tuple[dict[str, str], list[dict[str, Any]] | None, str | None]:
    """Rendered prompts and tool schemas; a rendering failure is recorded, never raised."""
    try:
        prompts = {
            "agent_prompt.md": render.render_agent_prompt(scenario),
            "user_prompt.md": render.render_user_prompt(scenario),
        }
        return prompts, list(render.tool_schemas(scenario)), None
    except Exception as exc:
        return {}, scenario.tools.openai_schemas(), f"{type(exc).__name__}: {exc}"


def _metadata(scenario: Scenario, expected_hash: str | None, render_error: str | None) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "scenario_name": scenario.name,
        scenario.record_id_key: scenario.record_id,
        "domain": scenario.domain.name,
        "description": scenario.description,
        "current_date": scenario.current_date,
        "max_duration_s": scenario.max_duration,
        "success_signals": list(scenario.success_signals),
        "expected_db_hash": expected_hash,
        "hash_rules": {
            "excluded_keys": list(scenario.domain.hash_rules.excluded_keys),
            "unordered_lists": list(scenario.domain.hash_rules.unordered_lists),
        },
        "db_state_assertions": [dict(a) for a in scenario.db_state_assertions],
        "nl_assertions": list(scenario.nl_assertions),
        "reference_answer": scenario.reference_answer,
        "match_options": dict(scenario.match_options),
        "source": scenario.source.file,
        "spec_dir": str(scenario.domain.spec_dir),
        "data_root": str(scenario.domain.data_root),
    }
    if render_error:
        meta["render_error"] = render_error
    return meta


async def finish_session(
    run_dir: Path,
    scenario: Scenario,
    result: SessionResult,
    trials: int,
    options: ScoringOptions,
    voice: Callable[[Path], VoiceSummary | None] | None = None,
) -> MetricsRecord:
    """Score ``result`` and write every per-scenario artifact atomically; returns its metrics.

    ``voice`` (an audio session, ``engine.voice.run.VoiceRun.artifacts``) writes the session's
    audio artifacts into the scenario directory and returns its voice summary (None: no audio was
    agreed), recorded as the metrics' ``voice``. ``metrics.json`` is written last. The judge (if
    ``options.judge_model``) is awaited here; its failures are recorded as N/A, never raised.
    Raises OSError only when the run directory cannot be written.
    """
    sdir = scenario_dir(Path(run_dir), scenario.name, result.trial, trials)
    sdir.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        (sdir / METRICS).unlink()  # a re-run of this slot is incomplete until the new metrics land
    for stale in [*sdir.glob(".*.tmp"), *sdir.glob("scenario_config/.*.tmp")]:
        stale.unlink(missing_ok=True)  # temp files left by a killed earlier attempt
    for optional in (
        "final_db.json",
        "final_user_db.json",
        "expected_db.json",
        "judge_result.json",
        "voice.json",
    ):
        (sdir / optional).unlink(missing_ok=True)  # this attempt may not write them again

    rules = scenario.domain.hash_rules
    actual_hash = db_hash(result.final_db, rules) if result.final_db is not None else None
    expected_hash = db_hash(scenario.expected_db, rules) if scenario.expected_db is not None else None

    judge = None
    if options.judge_model:
        judge = await run_judge(scenario, result, options)

    inputs = SignalInputs(
        scenario, result, options.strict_match, actual_hash, expected_hash, judge, gold_db(scenario)
    )
    values, fields = compute_signals(inputs)
    min_turns = stalled_threshold(options.min_agent_turns, scenario.gold_trace)
    stalled = result.agent_turns < min_turns
    comp = compute_composite(values, scenario.success_signals, stalled)

    if result.final_db is not None:
        write_db_json(sdir / "final_db.json", result.final_db)
    if scenario.expected_db is not None:
        write_db_json(sdir / "expected_db.json", scenario.expected_db)
    write_json(sdir / "actions.json", result.actions)
    write_json(sdir / "tool_calls.json", result.tool_calls)
    write_jsonl(sdir / "transcript.jsonl", result.transcript)
    hash_lines = f"db_hash: {actual_hash or 'none'}\nexpected_db_hash: {expected_hash or 'none'}\n"
    if result.user_db is not None:  # dual-side domains: recorded, never scored
        hash_lines += f"user_db_hash: {db_hash(result.user_db, rules)}\n"
        write_db_json(sdir / "final_user_db.json", result.user_db)
    write_text(sdir / "final_scenario_db_hash.txt", hash_lines)
    prompts, tools, render_error = _rendered_config(scenario)
    cfg = sdir / "scenario_config"
    write_json(cfg / "metadata.json", _metadata(scenario, expected_hash, render_error))
    for fname, text in prompts.items():
        write_text(cfg / fname, text)
    write_json(cfg / "tools.json", tools)
    (cfg / "gold_path.json").unlink(missing_ok=True)
    if result.user_backend == "replay" and result.agent_backend != "replay" and scenario.gold_trace:
        write_json(cfg / "gold_path.json", gold_path(scenario))  # for evalctl diff: where it left the gold
    usage = {role: dict(u) for role, u in result.usage.items()}
    if judge is not None:
        write_json(sdir / "judge_result.json", judge.to_json())
        usage["judge"] = dict(judge.usage)

    metrics = MetricsRecord(
        scenario_name=scenario.name,
        record_id=scenario.record_id,
        domain=scenario.domain.name,
        trial=result.trial,
        is_successful=comp.is_successful,
        is_task_successful=comp.is_task_successful,
        success_breakdown=Breakdown.from_json(comp.breakdown),
        success_signals=tuple(scenario.success_signals),
        stalled=stalled,
        min_agent_turns=min_turns,
        stop_reason=result.stop_reason,
        signals=SignalFields.from_outputs(fields, tuple(n for n in values if n not in SIGNALS)),
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
        usage={role: Usage.from_json(u) for role, u in usage.items()},
        judge_model=judge.model if judge else None,
        judge_prompt_sha256=judge.prompt_sha256 if judge else None,
        error=result.error,
        evalctl_version=__version__,
        record_id_key=scenario.record_id_key,
        voice_run=voice is not None,
        voice=voice(sdir) if voice is not None else None,
    )
    write_json(sdir / METRICS, metrics.to_json())
    return metrics


def scored_dirs(run_dir: Path) -> list[tuple[Path, MetricsRecord]]:
    """``(directory, metrics)`` of every complete result under ``run_dir`` (``<name>/`` and
    ``<name>/trial_<k>/``), one per (scenario, trial), sorted by name then trial. Torn or foreign
    ``metrics.json`` files, and copies in the wrong directory, are skipped."""
    run_dir = Path(run_dir)
    seen: dict[tuple[str, int], tuple[Path, MetricsRecord]] = {}
    for path in sorted([*run_dir.glob(f"*/{METRICS}"), *run_dir.glob(f"*/trial_*/{METRICS}")]):
        record = read_metrics(path)
        if record is None:
            continue
        nested = path.parent.parent != run_dir
        if scenario_dir(run_dir, record.scenario_name, record.trial, 2 if nested else 1) != path.parent:
            continue  # a copy in the wrong place must not count twice
        seen[(record.scenario_name, record.trial)] = (path.parent, record)
    return [seen[k] for k in sorted(seen)]


def load_run_metrics(run_dir: Path) -> list[MetricsRecord]:
    """The metrics records of :func:`scored_dirs`."""
    return [m for _, m in scored_dirs(run_dir)]


def _with_defaults(run_dir: Path, metrics: list[MetricsRecord], run_info: dict[str, Any]) -> dict[str, Any]:
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
        for m in metrics:
            for role, u in m.usage.items():
                if u.model and (role not in models or role == "judge"):
                    models[role] = u.model
        info["models"] = models
    if info.get("min_agent_turns") is None and metrics:
        info["min_agent_turns"] = metrics[0].min_agent_turns
    return info


def finish_run(run_dir: Path, run_info: dict[str, Any]) -> SummaryRecord:
    """Recompute the run summary over every scenario directory in ``run_dir`` and write
    ``all_summary.txt``, ``summary.json`` and ``run.json``; returns the summary.

    Safe to call repeatedly (after a resume, after Ctrl-C): results are read from disk, each
    (scenario, trial) counted once.
    """
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    metrics = load_run_metrics(run_dir)
    run_info = _with_defaults(run_dir, metrics, run_info)
    summary = build_summary(metrics, run_info, run_dir=str(run_dir))
    write_json(run_dir / "run.json", run_provenance(run_dir, run_info).to_json())
    write_json(run_dir / "summary.json", summary.to_json())
    write_text(run_dir / "all_summary.txt", render_summary_text(summary, title=str(run_dir)))
    return summary


def load_summary(run_dir: Path) -> SummaryRecord:
    """The ``summary.json`` of a run; raises UsageError when ``run_dir`` is not a finished run."""
    path = Path(run_dir) / "summary.json"
    try:
        return SummaryRecord.from_json(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        if not (Path(run_dir) / "run.json").is_file():
            raise UsageError(f"{run_dir}: not an evalctl run directory (no run.json)") from None
        raise UsageError(
            f"{run_dir}: no summary.json yet (the run never finished); "
            f"`evalctl run ... --resume {run_dir}` completes it"
        ) from None
    except ValueError as exc:  # bad JSON, or not the record (RecordError)
        raise UsageError(
            f"{path}: unreadable ({exc}); `evalctl run ... --resume {run_dir}` rewrites it"
        ) from None
