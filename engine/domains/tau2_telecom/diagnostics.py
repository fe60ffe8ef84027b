"""tau2 telecom diagnostics: ``user_db_state_match``, the phone DB's tau2 hash against the gold
replay's (recorded, never gating unless a spec lists it)."""

from __future__ import annotations

import threading
from typing import Any

from engine.core.plugin import DiagnosticInputs
from engine.domains.tau2_telecom.shapes import tau2_hash
from engine.spec.gold_replay import gold_replay

_GOLD_USER_HASHES: dict[int, tuple[Any, str | None]] = {}
_LOCK = threading.Lock()


def _gold_user_hash(scenario: Any) -> str | None:
    """tau2 hash of the phone DB the scenario's gold replay ends with (cached per scenario)."""
    with _LOCK:
        hit = _GOLD_USER_HASHES.get(id(scenario))
    if hit is not None and hit[0] is scenario:
        return hit[1]
    run = gold_replay(scenario) if scenario.gold_trace is not None else None
    value = tau2_hash(run.user_db, "user") if run is not None and run.user_db is not None else None
    with _LOCK:
        _GOLD_USER_HASHES[id(scenario)] = (scenario, value)
    return value


def user_db_state_match(inputs: DiagnosticInputs) -> bool | None:
    """Diagnostic: the session's phone DB has the tau2 hash of the gold replay's phone DB (None
    without a gold trace or a user DB)."""
    if inputs.result.user_db is None:
        return None
    expected = _gold_user_hash(inputs.scenario)
    return None if expected is None else tau2_hash(inputs.result.user_db, "user") == expected
