"""Gold-trace replay: run a trace's tool calls on a session view of the initial DB and compare the
end state with the expected DB.

``evalctl validate`` calls :func:`replay_gold` per scenario; a mismatch names the scenario and the
differing fields (``engine.dbdiff``), and every call is checked against its tool's ``writes``
declaration (a tool that changes what it did not declare is a problem: sessions share undeclared
parts of a DB).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.dbdiff import DiffLine, db_diff
from engine.dbhash import db_hash
from engine.gold import GoldStep, GoldTrace
from engine.model import Scenario, ToolTable
from engine.plugin import SyncStep
from engine.tools.runtime import ToolOutcome, ToolRuntime
from engine.tools.writeset import changed_outside, session_view, snapshot_owned


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
class ReplayOutcome:
    """One scenario's gold replay: ``ok`` when the hash of the replayed DB equals the expected DB's
    (SHA-256 hex both, under the domain's hash rules), no call changed what its tool did not
    declare and every ``db_state_assertion`` holds on the replay's end DBs; ``lines``
    hold the differing fields when not; ``error`` says why no replay was possible (no gold trace or
    no expected DB), names the tools the gold calls that the tool table does not declare, or the
    undeclared writes."""

    scenario_name: str
    ok: bool
    actual_hash: str | None
    expected_hash: str | None
    lines: tuple[DiffLine, ...] = ()
    tool_calls: int = 0
    error: str | None = None
    #: The scenario's ``db_state_assertions`` evaluated on the replay's end DBs: how many hold, of
    #: how many (a failing one makes the replay fail and is named in ``error``).
    assertions_held: int = 0
    assertions: int = 0


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


#: ``(scenario, run) -> verdicts``: a scenario's ``db_state_assertions`` evaluated on a replay's end
#: DBs, each verdict a dict with at least ``func_name``, ``arguments``, ``side``, ``assert_value``,
#: ``actual``, ``passed`` and, when it failed to evaluate, ``error`` (the scoring's verdict shape).
AssertionCheck = Callable[[Scenario, ReplayRun], list[dict[str, Any]]]


def replay_gold(scenario: Scenario, check: AssertionCheck | None = None) -> ReplayOutcome:
    """Replay ``scenario.gold_trace`` onto its initial DB and compare with ``expected_db``;
    every call is audited against its ``writes`` declaration. ``check`` (validate passes the
    scorer's) evaluates the scenario's assertions on the end DBs: a failing one fails the replay."""
    rules = scenario.domain.hash_rules
    if scenario.gold_trace is None or scenario.expected_db is None:
        missing = "gold trace" if scenario.gold_trace is None else "expected DB"
        return ReplayOutcome(scenario.name, False, None, None, error=f"no {missing} to replay against")
    run = replay_scenario(scenario, audit=True)
    actual, expected = db_hash(run.db, rules), db_hash(scenario.expected_db, rules)
    lines = () if actual == expected else tuple(db_diff(scenario.expected_db, run.db, rules))
    unknown = sorted({step.tool for step, res in run.responses if res.get("error_type") == "tool_not_found"})
    notes = []
    if unknown:
        notes.append(f"the gold trace calls tools the tool table lacks: {', '.join(unknown)}")
    if run.undeclared:
        shown = "; ".join(run.undeclared[:5])
        notes.append(f"tools changed what their 'writes' do not declare: {shown}")
    verdicts = check(scenario, run) if check is not None else []
    failed = [v for v in verdicts if not v["passed"]]
    if failed:
        shown = "; ".join(_verdict_text(v) for v in failed[:5])
        notes.append(f"db_state_assertions that do not hold on the gold end state: {shown}")
    ok = actual == expected and not run.undeclared and not failed
    return ReplayOutcome(
        scenario.name,
        ok,
        actual,
        expected,
        lines,
        len(run.outcomes),
        " | ".join(notes) or None,
        len(verdicts) - len(failed),
        len(verdicts),
    )


def _verdict_text(verdict: Mapping[str, Any]) -> str:
    args = ", ".join(f"{k}={v!r}" for k, v in verdict["arguments"].items())
    got = verdict.get("error") or f"got {verdict['actual']!r}"
    expected = verdict["assert_value"]
    return f"{verdict['func_name']}({args}) on the {verdict['side']} DB: expected {expected!r}, {got}"
