"""Small helpers of the tau2 telecom tests: calling one handler the way the engine does."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.core.tools.context import CallContext
from engine.core.tools.writeset import json_copy
from engine.domains.tau2_telecom import AGENT_HANDLERS, USER_HANDLERS


def call(side: str, name: str, db: dict[str, Any], call_index: int = 1, **args: Any) -> dict[str, Any]:
    """Run one handler on ``db``; like the engine, an error result leaves ``db`` unchanged
    (asserted here: handlers check before they write)."""
    handler = (AGENT_HANDLERS if side == "agent" else USER_HANDLERS)[name]
    before = json_copy(db)
    result = handler(db, args, CallContext(tool=name, call_index=call_index))
    if result["status"] != "success":
        assert db == before, f"{name} changed the DB and then failed"
    return result


def ok(result: Mapping[str, Any]) -> str:
    """The content of a success result (fails the test on an error result)."""
    assert result["status"] == "success", result
    return str(result["content"])


def failed(result: Mapping[str, Any], kind: str) -> str:
    """The message of an error result of that kind (fails the test otherwise)."""
    assert result["status"] == "error" and result["error_type"] == kind, result
    return str(result["message"])
