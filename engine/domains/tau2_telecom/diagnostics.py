"""tau2 telecom diagnostics: ``user_db_state_match``, the phone DB's tau2 hash against the gold
replay's (recorded, never gating unless a spec lists it)."""

from __future__ import annotations

from typing import Any

from engine.core.plugin import DiagnosticInputs
from engine.domains.tau2_telecom.shapes import tau2_hash
from engine.spec.gold_replay import gold_replay
from engine.util.weakmemo import PerObject

#: Per scenario (while it lives) the tau2 hash of its gold replay's phone DB.
_GOLD_USER_HASHES = PerObject()


def _gold_user_hash(scenario: Any) -> str | None:
    """tau2 hash of the phone DB the scenario's gold replay ends with (cached per scenario)."""
    hit = _GOLD_USER_HASHES.get(scenario)
    if hit is not None:
        return str(hit[0]) if hit[0] is not None else None
    run = gold_replay(scenario) if scenario.gold_trace is not None else None
    value = tau2_hash(run.user_db, "user") if run is not None and run.user_db is not None else None
    _GOLD_USER_HASHES.put(scenario, value)
    return value


def user_db_state_match(inputs: DiagnosticInputs) -> bool | None:
    """Diagnostic: the session's phone DB has the tau2 hash of the gold replay's phone DB (None
    without a gold trace or a user DB)."""
    if inputs.result.user_db is None:
        return None
    expected = _gold_user_hash(inputs.scenario)
    return None if expected is None else tau2_hash(inputs.result.user_db, "user") == expected
