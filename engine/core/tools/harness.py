"""Harness tools: ours, not the domain's. ``end_conversation`` lets the agent hang up cleanly."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.core.tools.context import CallContext


def end_conversation(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    """End the call: returns ``{status: "success", message}``; the runtime then stops the session
    with stop reason ``exit``. No DB write."""
    return {"status": "success", "message": "Conversation ended"}


#: Handlers every domain's tool tables may name besides their plugin's.
HARNESS_HANDLERS = {"end_conversation": end_conversation}
