"""The run directory's per-result folders: the session's artifacts, written as soon as a
conversation ends, and read back to score it (``evalctl rescore``, or ``--resume`` after a crash
during judging) without running the conversation again.

Per (scenario, trial) folder (:func:`scenario_dir`), every file written atomically, in this order:
``final_db.json``, ``expected_db.json``, ``final_user_db.json``, ``actions.json``,
``tool_calls.json``, ``transcript.jsonl``, ``final_scenario_db_hash.txt``, ``scenario_config/``,
``voice.json`` and ``audio/{user,agent}.wav`` (audio sessions) and LAST ``session.json``
(:class:`engine.core.records.session.SessionRecord`): its presence marks the session stored. Scoring
then writes ``judge_result.json`` (judge on) and ``metrics.json``. The files of one write of a
folder are made durable together (``engine.util.artifacts.FolderWrite``), in a run with those of
other folders (a group commit, ``engine.util.group_commit``); a run without a judge stores and
scores a session in one such write (``engine.results.scoring_stage.store_and_score``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Literal, TypeVar

from engine.core import render
from engine.core.dbhash import db_hash
from engine.core.model import Scenario, SessionResult
from engine.core.records.common import ErrorCause, ErrorSource, SpentUsage, Usage, spent
from engine.core.records.metrics import MetricsRecord
from engine.core.records.session import SessionRecord
from engine.core.records.voice import VoiceSummary
from engine.results.unreadable import note_failure
from engine.util.artifacts import FolderWrite, db_json_bytes, dumps_json, read_json, read_jsonl, read_record
from engine.util.weakmemo import PerObject

log = logging.getLogger(__name__)

METRICS = "metrics.json"
SESSION = "session.json"
JUDGE_RESULT = "judge_result.json"
#: The judged caller rubric's request and answer (``engine.scoring.rubric``), next to it.
USER_RUBRIC = "user_rubric.json"
#: An audio session's timeline and metrics (``engine.session.voice.run.VOICE_JSON``).
VOICE = "voice.json"


def scenario_dir(run_dir: Path, scenario_name: str, trial: int, trials: int) -> Path:
    """Where one (scenario, trial) writes: ``run_dir/<name>``, or ``run_dir/<name>/trial_<k>`` when
    trials > 1."""
    return run_dir / scenario_name if trials == 1 else run_dir / scenario_name / f"trial_{trial}"


#: The run folder's sub-folder holding the attempts a regeneration replaced (hidden: not a result).
REGENERATED = ".regenerated"


def attempts_dir(run_dir: Path, scenario_name: str, trial: int, trials: int) -> Path:
    """Where the replaced attempts of one (scenario, trial) are kept, one ``attempt_<k>`` folder
    each (k from 1, oldest first): ``run_dir/.regenerated/<name>[/trial_<k>]``."""
    return scenario_dir(Path(run_dir) / REGENERATED, scenario_name, trial, trials)


def result_files(run_dir: Path, name: str) -> list[Path]:
    """The files named ``name`` (``metrics.json``, ``session.json``) in the result folders of
    ``run_dir`` (``<name>/`` and ``<name>/trial_<k>/``), sorted: every entry there, a symbolic
    link that leads nowhere or loops included (a glob skips those; their readers note them)."""
    run_dir = Path(run_dir)
    folders = [*run_dir.glob("*/"), *run_dir.glob("*/trial_*/")]
    return sorted(path for path in (folder / name for folder in folders) if os.path.lexists(path))


def read_metrics(path: Path) -> MetricsRecord | None:
    """Parse a ``metrics.json``; None when it is missing, torn or not ours (RecordError): a file
    there that does not read is noted (``engine.results.unreadable``)."""
    try:
        return MetricsRecord.from_json(read_record(path))
    except (OSError, ValueError) as err:  # RecordError is a ValueError
        note_failure(path, err)
        return None


def read_session(sdir: Path) -> SessionRecord | None:
    """Parse the ``session.json`` of a result folder; None when it is missing, torn or not ours
    (noted, as :func:`read_metrics`)."""
    try:
        return SessionRecord.from_json(read_record(Path(sdir) / SESSION))
    except (OSError, ValueError) as err:
        note_failure(Path(sdir) / SESSION, err)
        return None


@dataclass(frozen=True)
class Slot:
    """What a (scenario, trial) folder holds: ``state`` ``scored`` (a metrics.json of this
    scenario and trial), ``stored`` (the session's artifacts, not scored), ``missing``;
    ``metrics`` / ``session`` the records read (None when absent)."""

    state: Literal["scored", "stored", "missing"]
    metrics: MetricsRecord | None
    session: SessionRecord | None

    @property
    def session_error(self) -> bool:
        """An ``error`` verdict caused by the session (a side, the transport, the engine), not by
        the judge: only running the conversation again can give a verdict."""
        cause = self.metrics.error_cause if self.metrics is not None else None
        return cause is not None and cause.source != ErrorSource.JUDGE


def slot(run_dir: Path, scenario_name: str, trial: int, trials: int) -> Slot:
    """The state of one (scenario, trial) of ``run_dir`` (used by ``--resume``)."""
    sdir = scenario_dir(Path(run_dir), scenario_name, trial, trials)
    metrics = read_metrics(sdir / METRICS)
    if metrics is not None and (metrics.scenario_name, metrics.trial) != (scenario_name, trial):
        metrics = None
    session = read_session(sdir)
    if session is not None and (session.scenario_name, session.trial) != (scenario_name, trial):
        session = None
    if metrics is not None:
        return Slot("scored", metrics, session)
    return Slot("stored" if session is not None else "missing", None, session)


def is_complete(run_dir: Path, scenario_name: str, trial: int, trials: int) -> bool:
    """True when that (scenario, trial) already has a complete, scored result: its ``metrics.json``
    parses and names this scenario and trial."""
    return slot(run_dir, scenario_name, trial, trials).state == "scored"


def spent_before(found: Slot) -> tuple[SpentUsage, ...]:
    """The model use a new attempt of this slot supersedes: everything its metrics (or, not
    scored, its session) counted, including what they had superseded themselves."""
    if found.metrics is not None:
        return spent(found.metrics.superseded_usage, *found.metrics.usage.items())
    if found.session is not None:
        return spent(found.session.superseded_usage, *found.session.usage.items())
    return ()


def rescored_spent(found: Slot) -> tuple[SpentUsage, ...]:
    """The model use a new scoring of this slot's stored session supersedes: the earlier judge's
    (the session's own agent and user use stays counted in the new metrics)."""
    if found.metrics is not None:
        judge = [(role, u) for role, u in found.metrics.usage.items() if role == "judge"]
        return spent(found.metrics.superseded_usage, *judge)
    if found.session is not None:
        return found.session.superseded_usage
    return ()


def gold_path(scenario: Scenario) -> dict[str, Any]:
    """What a replay caller plays against a model agent, for triage: the gold's agent tool calls
    ``[{turn, name, arguments}]`` (``turn``: the agent turn, counted from 0) and its caller lines."""
    calls: list[dict[str, Any]] = []
    # counted as the replay sides play the trace (engine.session.backends.replay.split_trace): every user
    # group (a user line, or user tool calls after the agent's steps) is followed by an agent turn,
    # and when the agent opens the call its turn 0 comes before the caller's first group
    turn = -1 if scenario.user_speaks_first else 0
    previous = None
    assert scenario.gold_trace is not None
    for step in scenario.gold_trace:
        user_step = step.kind == "user" or (step.kind == "tool_call" and step.side == "user")
        side = "user" if user_step else "agent"
        if side == "user" and (previous != "user" or step.kind == "user"):
            turn += 1
        previous = side
        if step.kind == "tool_call" and step.side == "agent":
            calls.append({"turn": max(turn, 0), "name": step.tool, "arguments": dict(step.arguments)})
    ending = [t.name for t in scenario.tools.tools if t.ends_call == "exit"]
    return {
        "tool_calls": calls,
        "user_lines": list(scenario.gold_trace.lines("user")),
        "ending_tools": ending,
        "argument_rules": argument_rules(scenario, {c["name"] for c in calls}),
    }


def argument_rules(scenario: Scenario, names: set[str]) -> dict[str, dict[str, Any]]:
    """Per tool in ``names``: the rules its arguments are taken by, so ``evalctl diff`` calls two
    calls equal exactly when the tool does: ``{parameters, coerce, fold_case}``, where ``coerce``
    says the engine's lax conversion applies (False for a plugin's own argument check, such as
    tau2's, which converts nothing) and ``fold_case`` lists the fields the handler compares
    without regard to case or upper-cases (field rules ``ignore_case`` / ``upper``)."""
    out: dict[str, dict[str, Any]] = {}
    for tool in scenario.tools.tools:
        if tool.name not in names or tool.name in out:
            continue
        fold = sorted(n for n, r in tool.field_rules.items() if r.ignore_case or r.upper)
        out[tool.name] = {
            "parameters": dict(tool.parameters),
            "coerce": tool.check is None,
            "fold_case": fold,
        }
    return out


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


#: The last scenarios' ``scenario_config/`` files (id(scenario) -> (weak reference to the scenario,
#: expected hash, files)): the trials of a scenario, run one after another, render and dump them
#: once. Bounded, so a run of many scenarios does not keep them all, and weak, so a scenario the
#: run let go (``engine.spec.index``) is not kept alive by them.
_ConfigHit = tuple[weakref.ref[Scenario], str | None, tuple[tuple[str, bytes], ...]]
_CONFIGS: OrderedDict[int, _ConfigHit] = OrderedDict()
_CONFIGS_KEPT = 128
_CONFIGS_LOCK = threading.Lock()


def config_files(scenario: Scenario, expected_hash: str | None) -> tuple[tuple[str, bytes], ...]:
    """``(file name, bytes)`` of a scenario's ``scenario_config/`` folder: ``metadata.json``, the
    rendered prompts and ``tools.json`` (the same for every trial; the last
    ``_CONFIGS_KEPT`` scenarios' are kept)."""
    with _CONFIGS_LOCK:
        hit = _CONFIGS.get(id(scenario))
        if hit is not None and hit[0]() is scenario and hit[1] == expected_hash:
            _CONFIGS.move_to_end(id(scenario))
            return hit[2]
    prompts, tools, render_error = _rendered_config(scenario)
    files = [("metadata.json", dumps_json(_metadata(scenario, expected_hash, render_error)))]
    files += list(prompts.items())
    files.append(("tools.json", dumps_json(tools)))
    made = tuple((name, text.encode("utf-8", "replace")) for name, text in files)
    ref = weakref.ref(scenario, partial(_drop_config, id(scenario)))
    with _CONFIGS_LOCK:
        _CONFIGS[id(scenario)] = (ref, expected_hash, made)
        _CONFIGS.move_to_end(id(scenario))
        while len(_CONFIGS) > _CONFIGS_KEPT:
            _CONFIGS.popitem(last=False)
    return made


def _drop_config(key: int, ref: weakref.ref[Scenario]) -> None:
    """The scenario of ``key`` is gone (a run released it): its files go too. Not under the lock
    (the collector may call it while this thread holds it); one dict operation, atomic."""
    hit = _CONFIGS.get(key)
    if hit is not None and hit[0] is ref:
        _CONFIGS.pop(key, None)


def _metadata(scenario: Scenario, expected_hash: str | None, render_error: str | None) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "scenario_name": scenario.name,
        "record_id": scenario.record_id,
        "domain": scenario.domain.name,
        "group": scenario.group,
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


def _clear(sdir: Path) -> None:
    """Make a folder about to be rewritten incomplete at once (metrics, then session record gone),
    then remove every other file in it: what this attempt may not write again, temporary files
    left by a killed earlier attempt, and the files it writes again, which must be new files: one
    written in place would write through a hard link into another run's folder (``evalctl merge``
    links the shard runs' files into its output; a resume of the merged run redoes some)."""
    for name in (METRICS, SESSION):
        with contextlib.suppress(FileNotFoundError):
            (sdir / name).unlink()
    for folder, dirs, files in os.walk(sdir):
        for name in [*files, *(d for d in dirs if os.path.islink(os.path.join(folder, d)))]:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(folder, name))


def expected_db_bytes(scenario: Scenario) -> bytes:
    """The ``expected_db.json`` of ``scenario`` (``engine.util.artifacts.db_json_bytes``): every trial
    writes the same bytes, so those of the last scenarios are kept (up to 1 MiB each, at most
    :data:`_EXPECTED_KEPT` scenarios: a run's trials of one scenario start together)."""
    with _CONFIGS_LOCK:
        hit = _EXPECTED_FILES.get(id(scenario))
        if hit is not None and hit[0]() is scenario:
            return hit[1]
    data = db_json_bytes(scenario.expected_db)
    if len(data) <= 1 << 20:
        with _CONFIGS_LOCK:
            _EXPECTED_FILES[id(scenario)] = (weakref.ref(scenario), data)
            while len(_EXPECTED_FILES) > _EXPECTED_KEPT:
                _EXPECTED_FILES.popitem(last=False)
    return data


#: id(scenario) -> (weak reference to the scenario, its expected_db.json bytes).
_EXPECTED_FILES: OrderedDict[int, tuple[weakref.ref[Scenario], bytes]] = OrderedDict()
_EXPECTED_KEPT = 16


#: The line of ``final_scenario_db_hash.txt`` holding the agent's own DB hash.
AGENT_HASH_KEY = "agent_db_hash"


def agent_hash_line(transcript: Iterable[dict[str, Any]], actual_hash: str | None) -> str:
    """``agent_db_hash: HEX (matches db_hash)\n`` (or ``differs from db_hash``, or ``none``) for
    an agent that reported its own DB hash (the last ``agent_state`` transcript event: an RTVI
    bot's ``get_scenario_summary``); empty when it reported none. Recorded, never scored."""
    states = [
        e["content"]
        for e in transcript
        if e.get("type") == "agent_state" and isinstance(e.get("content"), dict)
    ]
    if not states:
        return ""
    theirs = states[-1].get("db_hash")
    if not isinstance(theirs, str):
        return f"{AGENT_HASH_KEY}: none\n"
    verdict = "matches" if theirs == actual_hash else "differs from"
    return f"{AGENT_HASH_KEY}: {theirs} ({verdict} db_hash)\n"


def db_hashes(scenario: Scenario, result: SessionResult) -> tuple[str | None, str | None]:
    """``(hash of the session's final DB, hash of the scenario's expected DB)`` under the domain's
    hash rules (None where there is no such DB); the expected DB's is computed once per scenario."""
    rules = scenario.domain.hash_rules
    actual = db_hash(result.final_db, rules) if result.final_db is not None else None
    hit = _EXPECTED_HASHES.get(scenario)
    if hit is None:
        hit = (db_hash(scenario.expected_db, rules) if scenario.expected_db is not None else None,)
        _EXPECTED_HASHES.put(scenario, hit[0])
    return actual, hit[0]


#: Each scenario's expected DB hash, kept while the scenario lives (a released one takes it along).
_EXPECTED_HASHES = PerObject()


def open_folder(run_dir: Path, scenario_name: str, trial: int, trials: int) -> FolderWrite:
    """The folder of a (scenario, trial) made ready for a new attempt: created, made incomplete at
    once and cleared of what the attempt may not write again; returns its batch of writes (commit
    it with ``FolderWrite.commit``)."""
    sdir = scenario_dir(Path(run_dir), scenario_name, trial, trials)
    try:
        sdir.mkdir(parents=True)
    except FileExistsError:
        _clear(sdir)
    return FolderWrite(sdir, incomplete=True, made=True)


def stage_session(
    batch: FolderWrite,
    scenario: Scenario,
    result: SessionResult,
    invocation: str,
    superseded: Iterable[SpentUsage] = (),
    voice: Callable[[FolderWrite], VoiceSummary | None] | None = None,
    hashes: tuple[str | None, str | None] | None = None,
) -> SessionRecord:
    """Put the artifacts of a session into ``batch`` (a folder from :func:`open_folder`), with
    ``session.json`` as a marker: it lands when the batch is committed. ``hashes``: the
    :func:`db_hashes` when already known. See :func:`write_session` for the rest."""
    actual_hash, expected_hash = hashes or db_hashes(scenario, result)
    if result.final_db is not None:
        batch.put_db_json("final_db.json", result.final_db)
    if scenario.expected_db is not None:
        batch.put_bytes("expected_db.json", expected_db_bytes(scenario))
    batch.put_json("actions.json", result.actions)
    batch.put_json("tool_calls.json", result.tool_calls)
    batch.put_jsonl("transcript.jsonl", result.transcript)
    hash_lines = f"db_hash: {actual_hash or 'none'}\nexpected_db_hash: {expected_hash or 'none'}\n"
    if result.user_db is not None:  # dual-side domains: recorded, never scored
        hash_lines += f"user_db_hash: {db_hash(result.user_db, scenario.domain.hash_rules)}\n"
        batch.put_db_json("final_user_db.json", result.user_db)
    hash_lines += agent_hash_line(result.transcript, actual_hash)
    batch.put_text("final_scenario_db_hash.txt", hash_lines)
    for fname, data in config_files(scenario, expected_hash):
        batch.put_bytes(f"scenario_config/{fname}", data)
    if result.user_backend == "replay" and result.agent_backend != "replay" and scenario.gold_trace:
        # for evalctl diff: where it left the gold
        batch.put_json("scenario_config/gold_path.json", gold_path(scenario))
    if voice is not None:
        voice(batch)  # audio/*.wav and voice.json, in the same batch (one group commit)
    record = session_record(result, invocation, tuple(superseded))
    batch.put_json(SESSION, record.to_json(), marker=True)
    return record


def write_session(
    run_dir: Path,
    scenario: Scenario,
    result: SessionResult,
    trials: int,
    invocation: str,
    superseded: Iterable[SpentUsage] = (),
    voice: Callable[[FolderWrite], VoiceSummary | None] | None = None,
) -> SessionRecord:
    """Write the artifacts of a session that just ended, ``session.json`` last, with one durable
    sync for the folder (``engine.util.artifacts.FolderWrite``); returns its record.
    ``invocation`` is the id of the run invocation that ran it; ``superseded`` the model use of
    the earlier attempts of this result (see :func:`spent_before`); ``voice`` writes an audio
    session's artifacts (``engine.session.voice.run.VoiceRun.artifacts``: ``voice.json``, ``audio/``).
    Raises OSError only when the run directory cannot be written."""
    record, batch = stage_write_session(run_dir, scenario, result, trials, invocation, superseded, voice)
    batch.commit()
    return record


def stage_write_session(
    run_dir: Path,
    scenario: Scenario,
    result: SessionResult,
    trials: int,
    invocation: str,
    superseded: Iterable[SpentUsage] = (),
    voice: Callable[[FolderWrite], VoiceSummary | None] | None = None,
) -> tuple[SessionRecord, FolderWrite]:
    """:func:`write_session` without the commit: the folder's files written (no sync), its marker
    pending; returns the record and the batch for a group commit
    (``engine.util.artifacts.commit_folders``). Raises OSError (nothing pending is left then)."""
    batch = open_folder(run_dir, scenario.name, result.trial, trials)
    try:
        return stage_session(batch, scenario, result, invocation, superseded, voice), batch
    except BaseException:
        batch.abandon()
        raise


def stored_voice(sdir: Path) -> tuple[bool, VoiceSummary | None]:
    """Whether the stored session was an audio session (its ``voice.json`` is there), and its voice
    summary (None when the agent side never agreed on audio). Raises ValueError (RecordError) for
    a ``voice.json`` that is not one."""
    try:
        body = read_json(Path(sdir) / VOICE)
    except FileNotFoundError:
        return False, None
    if not isinstance(body, dict):
        raise ValueError(f"{Path(sdir) / VOICE}: not an object")
    summary = body.get("summary")
    return True, None if summary is None else VoiceSummary.from_json(summary)


def session_record(
    result: SessionResult, invocation: str, superseded: tuple[SpentUsage, ...] = ()
) -> SessionRecord:
    """The ``session.json`` record of ``result``."""
    cause = ErrorCause(result.error_source, result.error or "") if result.error_source else None
    return SessionRecord(
        scenario_name=result.scenario_name,
        trial=result.trial,
        invocation=invocation,
        stop_reason=result.stop_reason,
        error=result.error,
        error_cause=cause,
        agent_turns=result.agent_turns,
        user_turns=result.user_turns,
        final_db=result.final_db is not None,
        user_db=result.user_db is not None,
        started_at=result.started_at,
        ended_at=result.ended_at or result.started_at,
        duration_s=round(result.duration_s, 6),
        engine_time_s=round(result.engine_time_s, 6),
        agent_backend=result.agent_backend,
        user_backend=result.user_backend,
        usage={role: Usage.from_json(dict(u)) for role, u in result.usage.items()},
        superseded_usage=superseded,
    )


def readable(sdir: Path) -> bool:
    """True when the stored session of a result folder reads back whole (:func:`load_session`):
    False for a transcript or tool calls that are torn, not UTF-8, or nested too deeply."""
    try:
        load_session(sdir)
    except (OSError, ValueError, RecursionError):
        return False
    return True


def load_session(sdir: Path) -> tuple[SessionRecord, SessionResult]:
    """The stored session of a result folder, as scoring takes it. Raises OSError / ValueError
    (RecordError) when the folder does not hold a whole stored session; a file that does not
    parse is named in the ValueError (``transcript.jsonl: line 7: Unterminated string ...``)."""
    try:
        return _load_session(Path(sdir))
    except UnicodeDecodeError as err:
        raise ValueError(f"{_file_of(err)}not UTF-8 text ({err.reason})") from None
    except ValueError as err:
        if str(err).startswith(_STORED_FILES):  # already named
            raise
        raise ValueError(f"{_file_of(err)}{err}") from None


_T = TypeVar("_T")

#: The files of a stored session :func:`load_session` reads.
_STORED_FILES = (
    SESSION, "final_db.json", "actions.json", "tool_calls.json", "transcript.jsonl", "final_user_db.json"
)  # fmt: skip


def _file_of(err: BaseException) -> str:
    name = getattr(err, "evalctl_file", None)
    return f"{name}: " if name else ""


def _read(path: Path, read: Callable[[Path], _T]) -> _T:
    """``read(path)``, its ValueError marked with the file's name (:func:`_file_of`)."""
    try:
        return read(path)
    except ValueError as err:
        err.evalctl_file = path.name  # type: ignore[attr-defined]
        raise


def _load_session(sdir: Path) -> tuple[SessionRecord, SessionResult]:
    record = _read(sdir / SESSION, lambda path: SessionRecord.from_json(read_record(path)))
    result = SessionResult(
        scenario_name=record.scenario_name,
        trial=record.trial,
        stop_reason=record.stop_reason,  # type: ignore[arg-type]
        error=record.error,
        final_db=_read(sdir / "final_db.json", read_json) if record.final_db else None,
        actions=list(_read(sdir / "actions.json", read_json)),
        tool_calls=list(_read(sdir / "tool_calls.json", read_json)),
        transcript=_read(sdir / "transcript.jsonl", read_jsonl),
        agent_turns=record.agent_turns,
        user_turns=record.user_turns,
        usage={role: u.to_json() for role, u in record.usage.items()},
        started_at=record.started_at,
        duration_s=record.duration_s,
        engine_time_s=record.engine_time_s,
        agent_backend=record.agent_backend,
        user_backend=record.user_backend,
        user_db=_read(sdir / "final_user_db.json", read_json) if record.user_db else None,
        error_source=record.error_cause.source if record.error_cause else None,
        ended_at=record.ended_at,
    )
    return record, result
