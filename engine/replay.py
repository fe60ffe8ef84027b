"""Gold-trace replay: run a trace's tool calls on a fresh DB and compare with the expected DB.

``evalctl validate`` calls :func:`replay_gold` per scenario; a mismatch names the scenario and
the differing fields (``engine.dbdiff``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.dbdiff import DiffLine, db_diff
from engine.dbhash import db_hash
from engine.model import Scenario, ToolTable
from engine.tools.runtime import ToolOutcome, ToolRuntime, json_copy


@dataclass
class ReplayRun:
    """What a replay produced: the final ``db``, the write ``actions`` and, per tool call,
    ``(event, result)`` in ``responses`` (results as returned, serialise them at the end to
    compare with eva's recorded responses) and the full ``outcomes``."""

    db: dict[str, Any]
    actions: list[dict[str, Any]] = field(default_factory=list)
    responses: list[tuple[Mapping[str, Any], dict[str, Any]]] = field(default_factory=list)
    outcomes: list[ToolOutcome] = field(default_factory=list)


@dataclass(frozen=True)
class ReplayOutcome:
    """One scenario's gold replay: ``ok`` when the canonical hash of the replayed DB equals the
    expected DB's (SHA-256 hex both); ``lines`` hold the differing fields when not; ``error``
    says why no replay was possible (no gold trace or no expected DB), or names the tools the
    gold calls that the tool table does not declare."""

    scenario_name: str
    ok: bool
    actual_hash: str | None
    expected_hash: str | None
    lines: tuple[DiffLine, ...] = ()
    tool_calls: int = 0
    error: str | None = None


def replay_trace(
    table: ToolTable, initial_db: Mapping[str, Any], events: Iterable[Mapping[str, Any]]
) -> ReplayRun:
    """Run every ``tool_call`` event (``tool_name``, ``params``) on a deep copy of ``initial_db``.

    Other events are skipped; a session-ending call does not stop the replay.
    """
    runtime = ToolRuntime(table, json_copy(dict(initial_db)))
    run = ReplayRun(db=runtime.db, actions=runtime.actions)
    for event in events:
        if event.get("event_type") != "tool_call":
            continue
        outcome = runtime.call(str(event.get("tool_name")), event.get("params"))
        run.outcomes.append(outcome)
        run.responses.append((event, outcome.result))
    return run


def replay_gold(scenario: Scenario) -> ReplayOutcome:
    """Replay ``scenario.gold_trace`` onto its initial DB and compare with ``expected_db``."""
    rules = scenario.domain.hash_rules
    if scenario.gold_trace is None or scenario.expected_db is None:
        missing = "gold trace" if scenario.gold_trace is None else "expected DB"
        return ReplayOutcome(scenario.name, False, None, None, error=f"no {missing} to replay against")
    run = replay_trace(scenario.tools, scenario.initial_db, scenario.gold_trace)
    actual, expected = db_hash(run.db, rules), db_hash(scenario.expected_db, rules)
    lines = () if actual == expected else tuple(db_diff(scenario.expected_db, run.db, rules))
    unknown = sorted(
        {str(ev.get("tool_name")) for ev, res in run.responses if res.get("error_type") == "tool_not_found"}
    )
    note = f"the gold trace calls tools the tool table lacks: {', '.join(unknown)}" if unknown else None
    return ReplayOutcome(scenario.name, actual == expected, actual, expected, lines, len(run.outcomes), note)
