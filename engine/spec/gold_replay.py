"""Gold-trace replay: run a trace's tool calls on a session view of the initial DB and compare the
end state with the expected DB (or, for a scenario that has none, with its reference answer and DB
assertions).

``evalctl validate`` calls :func:`replay_gold` per scenario; a mismatch names the scenario and the
differing fields (``engine.core.dbdiff``), and every call is checked against its tool's ``writes``
declaration (a tool that changes what it did not declare is a problem: sessions share undeclared
parts of a DB). A gold call that fails is a problem unless the gold trace records it failing or the
domain declares it in ``known_gold_errors`` (an upstream data issue: reported, not a failure).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from engine.core.dbdiff import DiffLine, db_diff
from engine.core.dbhash import db_hash
from engine.core.gold import GoldStep, GoldTrace, PerTrace
from engine.core.model import KnownGoldError, Scenario, ToolTable
from engine.core.plugin import SyncStep
from engine.core.toolruntime import ToolOutcome, ToolRuntime
from engine.core.tools.writeset import changed_outside, session_view, snapshot_owned
from engine.scoring.action_match import is_action_match
from engine.scoring.predicates import evaluate_db_state_assertion


@dataclass
class ReplayRun:
    """What a replay produced: the final ``db`` (and ``user_db`` for dual-side domains), the
    write ``actions`` and, per tool call, ``(step, result)`` in ``responses`` and the full
    ``outcomes``; ``undeclared`` lists ``tool: path`` for changes outside a tool's ``writes``
    (only when the replay audited them)."""

    db: dict[str, Any]
    user_db: dict[str, Any] | None = None
    actions: list[dict[str, Any]] = field(default_factory=list)
    responses: list[tuple[GoldStep, dict[str, Any]]] = field(default_factory=list)
    outcomes: list[ToolOutcome] = field(default_factory=list)
    undeclared: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class KnownFailure:
    """A gold call that failed as the domain declares (``known_gold_errors``): the declaration,
    the call's error message, and whether no gold write succeeded in the scenario (its expected
    DB is then its initial DB)."""

    known: KnownGoldError
    message: str
    initial_end_state: bool = False


@dataclass(frozen=True)
class ReplayOutcome:
    """One scenario's gold replay: ``ok`` when the canonical hash of the replayed DB equals the
    expected DB's (SHA-256 hex both), no call changed what its tool did not declare, and every gold
    call that failed is declared in ``known_gold_errors`` (or recorded as failing by the gold trace
    itself) and every declared one failed; ``lines`` hold the differing fields when not; ``error``
    says why no replay was possible (no gold trace or no expected DB), names the tools the gold
    calls that the tool table does not declare, the undeclared writes, or the undeclared / stale
    gold failures. ``against`` is what the end state was checked with: ``expected_db``, or
    ``references`` (no expected DB: the reference answer and DB assertions, with ``error`` listing
    what failed). ``assertions`` counts the scenario's ``db_state_assertions`` evaluated on the
    replay's end DBs, ``assertions_held`` those that hold (a failing one fails the replay).
    ``known_failures`` are the declared failures that happened (validate prints them as warnings)."""

    scenario_name: str
    ok: bool
    actual_hash: str | None
    expected_hash: str | None
    lines: tuple[DiffLine, ...] = ()
    tool_calls: int = 0
    error: str | None = None
    against: Literal["expected_db", "references"] = "expected_db"
    assertions: int = 0
    assertions_held: int = 0
    known_failures: tuple[KnownFailure, ...] = ()


def _gold_failures(scenario: Scenario, run: ReplayRun) -> tuple[list[str], list[KnownFailure]]:
    """Sort the gold calls that failed into problems (undeclared failures, declared calls that did
    not fail) and declared failures."""
    declared = {
        (k.call, k.tool): k for k in scenario.domain.known_gold_errors if k.record_id == scenario.record_id
    }
    problems: list[str] = []
    known: list[KnownFailure] = []
    for call, (step, result) in enumerate(run.responses, 1):
        entry = declared.pop((call, step.tool), None)
        if result.get("status") == "success":
            if entry is not None:
                problems.append(
                    f"known_gold_errors declares gold call {call} ({step.tool}) failing, but it succeeds"
                )
            continue
        recorded = step.result if isinstance(step.result, Mapping) else {}
        message = str(result.get("message", result.get("error_type", "")))
        if entry is not None:
            known.append(KnownFailure(entry, message))
        elif recorded.get("status") != "error":  # a failure the gold itself records is expected
            problems.append(f"gold call {step.tool} failed: {result.get('error_type')}: {message}")
    problems.extend(
        f"known_gold_errors names gold call {c} ({t}), which the gold trace lacks" for c, t in declared
    )
    failed_write = any(getattr(scenario.tools.get(k.known.tool), "kind", "") == "write" for k in known)
    if failed_write:  # say when the known failures leave the DB as it was
        rules = scenario.domain.hash_rules
        same = db_hash(run.db, rules) == db_hash(scenario.initial_db, rules)
        known = [KnownFailure(k.known, k.message, same) for k in known]
    return problems, known


def _audited_call(runtime: ToolRuntime, step: GoldStep, run: ReplayRun) -> ToolOutcome:
    before = snapshot_owned(runtime.db, runtime.writes.owned)
    outcome = runtime.call(step.tool, dict(step.arguments))
    allowed = runtime.last_allowed
    if allowed is None or outcome.result.get("status") != "success":
        return outcome
    for where in changed_outside(before, runtime.db, allowed):
        run.undeclared.append(f"{step.tool}: {where or '/'}")
    return outcome


def replay_trace(
    table: ToolTable,
    initial_db: Mapping[str, Any],
    trace: GoldTrace,
    *,
    user_table: ToolTable | None = None,
    user_db: Mapping[str, Any] | None = None,
    sync: SyncStep | None = None,
    sync_each_call: bool = True,
    audit: bool = False,
) -> ReplayRun:
    """Run every tool-call step of ``trace`` on a session view of ``initial_db`` (user-side steps
    on ``user_db`` with ``user_table``). ``sync`` runs after every successful call, as in a
    session (``sync_each_call=False``: only once at the end, the way tau2's evaluator builds its
    gold environment), and once more at the end; a session-ending call does not stop the replay.
    ``audit`` checks each call against its tool's ``writes`` (slower: used by validate)."""
    runtime = ToolRuntime(table, session_view(initial_db))
    user_runtime = None
    if user_table is not None and user_db is not None:
        user_runtime = ToolRuntime(user_table, session_view(user_db))
    for side in (runtime, user_runtime):
        if side is not None:
            side.writes.nested = audit  # an audit snapshots every container the session owns
    if sync is not None and user_runtime is not None and sync_each_call:
        agent_db, side_db = runtime.db, user_runtime.db
        runtime.after_call = lambda: sync(agent_db, side_db)
        user_runtime.after_call = runtime.after_call
    run = ReplayRun(db=runtime.db, user_db=user_runtime.db if user_runtime else None, actions=runtime.actions)
    for step in trace.tool_calls():
        side = user_runtime if step.side == "user" and user_runtime is not None else runtime
        args = dict(step.arguments)
        outcome = _audited_call(side, step, run) if audit else side.call(step.tool, args)
        run.outcomes.append(outcome)
        run.responses.append((step, outcome.result))
    if sync is not None and user_runtime is not None:
        sync(runtime.db, user_runtime.db)
    return run


def replay_scenario(scenario: Scenario, *, audit: bool = False) -> ReplayRun:
    """Replay ``scenario.gold_trace`` the way a session runs it: its domain's tables, set-up step,
    user DB and sync step."""
    assert scenario.gold_trace is not None
    plugin = scenario.domain.plugin
    db, user_db = scenario.session_dbs()
    return replay_trace(
        scenario.tools,
        db,
        scenario.gold_trace,
        user_table=scenario.user_tools,
        user_db=user_db,
        sync=plugin.sync if plugin else None,
        audit=audit,
    )


_GOLD_RUNS = PerTrace()
#: The keys of a call's result a kept replay holds (whether it failed, and why).
_BRIEF = ("status", "message", "error_type")


def gold_replay(scenario: Scenario) -> ReplayRun:
    """:func:`replay_scenario`, made once per scenario and kept while its gold trace lives:
    scenario loading (``expected_db: {from: gold_replay}``), the scoring diagnostics and domain
    plugins all read the gold's end state from here, so a run replays each gold trace at most once
    (a scenario's ``replace``-d copies share it). The kept run holds ``db``, ``user_db``,
    ``actions`` and ``responses`` with only each result's ``status``, ``message`` and
    ``error_type`` (no ``outcomes``); treat it as read-only. Raises what the replay raised (a
    failed replay is not tried again)."""
    trace = scenario.gold_trace
    assert trace is not None
    inputs = (
        scenario.tools,
        scenario.user_tools,
        scenario.initial_db,
        scenario.user_initial_db,
        scenario.record,
        scenario.domain,
    )
    hit = _GOLD_RUNS.get(trace, inputs)
    if hit is None:
        kept: ReplayRun | Exception
        try:
            run = replay_scenario(scenario)
            brief = [(step, {k: r[k] for k in _BRIEF if k in r}) for step, r in run.responses]
            kept = ReplayRun(db=run.db, user_db=run.user_db, actions=run.actions, responses=brief)
        except Exception as exc:
            kept = exc
        _GOLD_RUNS.put(trace, inputs, kept)
        hit = (kept,)
    if isinstance(hit[0], Exception):
        raise hit[0]
    return hit[0]


def assertion_verdicts(scenario: Scenario, run: ReplayRun) -> list[dict[str, Any]]:
    """The verdict of each ``scenario.db_state_assertions`` item on a replay's end DBs (agent and
    user), exactly as the ``db_state_assertion`` signal computes it after a session."""
    plugin = scenario.domain.plugin
    predicates = plugin.predicates if plugin else {}
    return [
        evaluate_db_state_assertion(predicates, a, run.db, run.user_db) for a in scenario.db_state_assertions
    ]


def gold_signal_failures(
    scenario: Scenario, run: ReplayRun, verdicts: list[dict[str, Any]] | None = None
) -> list[str]:
    """The gating signals a gold replay can be scored on without a model, that its own gold fails:
    ``is_action_match`` (the reference answer against the gold's actions) and each
    ``db_state_assertion`` (on the gold's end DBs; ``verdicts`` when already computed by
    :func:`assertion_verdicts`). A scenario whose gold fails them could never pass; one line each."""
    out: list[str] = []
    if scenario.reference_answer is not None:
        matched = is_action_match(scenario.reference_answer, run.actions, scenario.match_options)
        if matched is False:
            out.append("the gold's own actions do not match its reference_answer (is_action_match)")
    for verdict in assertion_verdicts(scenario, run) if verdicts is None else verdicts:
        if not verdict["passed"]:
            why = verdict.get("error") or f"got {verdict['actual']!r}, expected {verdict['assert_value']!r}"
            out.append(f"the gold's end state fails db_state_assertion {verdict['func_name']}: {why}")
    return out


def _against_references(scenario: Scenario) -> ReplayOutcome:
    """A gold replay for a scenario without an expected DB: checked against what the scenario is
    scored on instead. ``ok`` when every gold call succeeds, the gold's write actions match
    ``reference_answer`` (when it has one), every ``db_state_assertions`` item passes on the end
    state and no call changed what its tool did not declare; ``error`` lists what failed."""
    if scenario.reference_answer is None and not scenario.db_state_assertions:
        error = "no expected DB, reference answer or DB assertions to replay against"
        return ReplayOutcome(scenario.name, False, None, None, error=error, against="references")
    run = replay_scenario(scenario, audit=True)
    notes, known = _gold_failures(scenario, run)
    verdicts = assertion_verdicts(scenario, run)
    notes += gold_signal_failures(scenario, run, verdicts)
    if run.undeclared:
        notes.append(f"tools changed what their 'writes' do not declare: {'; '.join(run.undeclared[:5])}")
    actual = db_hash(run.db, scenario.domain.hash_rules)
    held = sum(1 for v in verdicts if v["passed"])
    return ReplayOutcome(
        scenario.name,
        not notes,
        actual,
        None,
        (),
        len(run.outcomes),
        " | ".join(notes) or None,
        "references",
        len(verdicts),
        held,
        tuple(known),
    )


def replay_gold(scenario: Scenario) -> ReplayOutcome:
    """Replay ``scenario.gold_trace`` onto its initial DB and compare with ``expected_db``;
    every call is audited against its ``writes`` declaration. A scenario without an expected DB
    is checked against its reference answer and DB assertions instead (:func:`_against_references`)."""
    rules = scenario.domain.hash_rules
    if scenario.gold_trace is None:
        return ReplayOutcome(scenario.name, False, None, None, error="no gold trace to replay against")
    if scenario.expected_db is None:
        return _against_references(scenario)
    run = replay_scenario(scenario, audit=True)
    actual, expected = db_hash(run.db, rules), db_hash(scenario.expected_db, rules)
    lines = () if actual == expected else tuple(db_diff(scenario.expected_db, run.db, rules))
    unknown = sorted({step.tool for step, res in run.responses if res.get("error_type") == "tool_not_found"})
    verdicts = assertion_verdicts(scenario, run)
    notes = gold_signal_failures(scenario, run, verdicts)
    if unknown:
        notes.append(f"the gold trace calls tools the tool table lacks: {', '.join(unknown)}")
    if run.undeclared:
        shown = "; ".join(run.undeclared[:5])
        notes.append(f"tools changed what their 'writes' do not declare: {shown}")
    failures, known = _gold_failures(scenario, run)
    notes.extend(failures)
    ok = actual == expected and not notes
    held = sum(1 for v in verdicts if v["passed"])
    return ReplayOutcome(
        scenario.name,
        ok,
        actual,
        expected,
        lines,
        len(run.outcomes),
        " | ".join(notes) or None,
        assertions=len(verdicts),
        assertions_held=held,
        known_failures=tuple(known),
    )


def gold_problems(scenario: Scenario) -> list[str]:
    """Why ``scenario``'s gold fails, from the run's one gold replay (:func:`gold_replay`): the
    checks of :func:`replay_gold` but the write audit (validate's): the end DB against the expected
    DB, gold calls to tools the table lacks or that fail undeclared (``known_gold_errors``), and the
    gold's own gating signals (:func:`gold_signal_failures`). Empty when it passes or has no gold
    trace; one line per problem."""
    if scenario.gold_trace is None:
        return []
    if (
        scenario.expected_db is None
        and scenario.reference_answer is None
        and not scenario.db_state_assertions
    ):
        return ["no expected DB, reference answer or DB assertions to replay against"]
    try:
        run = gold_replay(scenario)
    except Exception as exc:  # a replay that cannot run is a failing gold
        return [f"the gold replay raised {type(exc).__name__}: {exc}"]
    notes: list[str] = []
    rules = scenario.domain.hash_rules
    if scenario.expected_db is not None and db_hash(run.db, rules) != db_hash(scenario.expected_db, rules):
        notes.append("the final DB differs from the expected one")
    unknown = sorted({step.tool for step, res in run.responses if res.get("error_type") == "tool_not_found"})
    if unknown:
        notes.append(f"the gold trace calls tools the tool table lacks: {', '.join(unknown)}")
    notes.extend(gold_signal_failures(scenario, run))
    notes.extend(_gold_failures(scenario, run)[0])
    return notes
