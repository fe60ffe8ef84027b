"""The per-call context a handler receives next to the DB and its validated arguments."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class CallContext:
    """What a handler may know besides ``(db, args)``.

    ``tool`` is the tool name as the model called it; ``call_index`` is 1 + the number of earlier
    *successful* calls of that tool in this session (used for minted ids such as
    ``REF-<CONF>-001``); ``options`` are the tool's declarative knobs from the tool table;
    ``today`` is the DB's ``_current_date`` (``YYYY-MM-DD``) or ``""`` when absent.
    """

    tool: str
    call_index: int = 1
    options: Mapping[str, Any] = field(default_factory=dict)
    today: str = ""


def error(error_type: str, message: str) -> dict[str, Any]:
    """A tool error result: ``{status: "error", error_type, message}`` (what the runtime and most
    handlers return for a failed call)."""
    return {"status": "error", "error_type": error_type, "message": message}
