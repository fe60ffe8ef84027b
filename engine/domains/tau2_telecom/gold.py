"""Replaying a task's gold actions on both DBs, in tau2's two ways.

- ``evaluator``: how tau2 17e07b1's ``EnvironmentEvaluator`` builds its gold environment: task
  initialisation (a sync after each init action), then every gold action in order on its side
  (``requestor`` assistant -> carrier tools, user -> phone tools) with **no** sync in between
  (``Environment.make_tool_call`` does not sync), then one sync at the end.
- ``live``: how a tau2 conversation runs: the same, but a sync after every tool call (tau2's
  ``Environment.get_response`` syncs after a call that did not raise, and the orchestrator syncs
  again after every step, so a failed call is followed by a sync too).

The two differ whenever a gold action depends on what the other side just did: a carrier write
(resume_line, refuel_data, enable_roaming, send_payment_request) reaches the phone only through
a sync, and a payment reaches the carrier only through one. See docs/domains/tau2_telecom.md.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from engine.core.tools.context import CallContext
from engine.core.tools.writeset import json_copy
from engine.domains.tau2_telecom.agent_tools import AGENT_HANDLERS
from engine.domains.tau2_telecom.environment import SIDES, initialise, sync
from engine.domains.tau2_telecom.user_tools import USER_HANDLERS

Mode = Literal["evaluator", "live"]
HANDLERS_BY_SIDE = {"agent": AGENT_HANDLERS, "user": USER_HANDLERS}


@dataclass(frozen=True)
class Step:
    """One replayed gold action: its ``side`` (agent or user), tool ``name``, ``arguments`` and
    the handler's ``result`` (an error result leaves the DB as it was, as the engine does)."""

    side: str
    name: str
    arguments: Mapping[str, Any]
    result: dict[str, Any]


@dataclass(frozen=True)
class Replay:
    """A replayed task: its ``steps`` in order, both DBs at the end (after the final sync), and
    both DBs just before that sync (``unsynced_*``: in ``evaluator`` mode exactly tau2's gold
    environment, whose hashes the oracle calls ``gold_end_state_tau2_hash`` / ``tau2_user_hash``)."""

    steps: list[Step]
    agent_db: dict[str, Any]
    user_db: dict[str, Any]
    unsynced_agent_db: dict[str, Any]
    unsynced_user_db: dict[str, Any]


def run_call(
    side: str,
    name: str,
    arguments: Mapping[str, Any],
    dbs: Mapping[str, dict[str, Any]],
    successes: Counter[str],
) -> dict[str, Any]:
    """One tool call as the engine runs it: the side's handler on the side's DB, with the DB put
    back as it was when the result is an error. ``successes`` counts successful calls per tool
    (the call index); ``dbs`` maps ``agent`` / ``user`` to the DBs."""
    db = dbs[side]
    ctx = CallContext(tool=name, call_index=successes[name] + 1)
    before = json_copy(db)
    result = HANDLERS_BY_SIDE[side][name](db, arguments, ctx)
    if result.get("status") == "success":
        successes[name] += 1
    else:
        db.clear()
        db.update(before)
    return result


def replay_gold(
    task: Mapping[str, Any], agent_db: Mapping[str, Any], user_db: Mapping[str, Any], mode: Mode = "evaluator"
) -> Replay:
    """Initialise copies of ``agent_db`` / ``user_db`` for ``task`` and play its gold actions.

    ``mode`` ``evaluator`` syncs only at the end (tau2's gold environment), ``live`` after every
    call (a tau2 conversation). The inputs are not changed. Raises ValueError when the task cannot
    be initialised, KeyError for a gold tool this domain does not have.
    """
    dbs = {"agent": json_copy(dict(agent_db)), "user": json_copy(dict(user_db))}
    initialise(dbs["agent"], dbs["user"], task.get("initial_state"))
    successes: Counter[str] = Counter()
    steps = []
    for action in (task.get("evaluation_criteria") or {}).get("actions") or []:
        side = SIDES[str(action["requestor"])]
        arguments = action.get("arguments") or {}
        result = run_call(side, str(action["name"]), arguments, dbs, successes)
        steps.append(Step(side, str(action["name"]), arguments, result))
        if mode == "live":
            sync(dbs["agent"], dbs["user"])
    unsynced = json_copy(dbs)
    sync(dbs["agent"], dbs["user"])
    return Replay(steps, dbs["agent"], dbs["user"], unsynced["agent"], unsynced["user"])
