"""eva_airline diagnostics: computed for every session, gating only where a scenario lists them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.core.plugin import DiagnosticInputs


def _session_key(session: Mapping[str, Any] | None) -> tuple[str, str] | None:
    if not session or not session.get("confirmation_number"):
        return None
    return (str(session.get("confirmation_number")).upper(), str(session.get("last_name") or "").lower())


def authenticated(inp: DiagnosticInputs) -> bool | None:
    """``authenticated``: the ``session`` record get_reservation writes (confirmation number and
    last name) equals the one the gold replay ends with; None when the gold has none. (The gold
    replay, not the expected DB, decides: eva 7.1.1 and 7.4.1 ship an empty session in their
    expected DBs although their gold authenticates.)"""
    expected = _session_key((inp.gold_db or {}).get("session"))
    if expected is None:
        return None
    final = inp.result.final_db or {}
    return _session_key(final.get("session")) == expected
