"""Per-session tool execution driven by the tool table.  (INTERFACE STUB: filled by the tool-table work.)

A ``ToolRuntime`` owns one session's DB and per-tool call counters. ``call`` validates the raw
arguments against the tool's JSON Schema, dispatches to the registered handler, appends an action
record for write tools, and never raises for a bad call: it returns an error result instead and
leaves the DB exactly as before the call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from engine.model import ToolTable


@dataclass(frozen=True)
class ToolOutcome:
    """Result of one tool call.

    ``result`` is the JSON-able dict returned to the model (``{status: success|error, ...}``);
    ``ended`` is ``"exit"`` after a successful end_conversation, ``"transfer"`` after a successful
    transfer_to_agent, else None; ``action`` is the action record appended (write tools), else None.
    """

    result: dict[str, Any]
    ended: Literal["exit", "transfer"] | None = None
    action: dict[str, Any] | None = None


class ToolRuntime:
    """Executes tool calls for one session against ``db`` (mutated in place, owned by the engine)."""

    def __init__(self, table: ToolTable, db: dict[str, Any]):
        self.table = table
        self.db = db
        self.actions: list[dict[str, Any]] = []

    def call(self, name: str, arguments: str | Mapping[str, Any] | None) -> ToolOutcome:
        """Run one call. ``arguments`` may be the model's raw JSON string. Never raises."""
        raise NotImplementedError
