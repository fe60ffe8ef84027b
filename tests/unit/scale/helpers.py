"""Shared by the scale tests: a few eva scenarios, and a summary without its timing fields."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: Six eva scenarios: exits and transfers, short and long conversations.
NAMES = (
    "eva_airline__3_1_5",
    "eva_airline__7_2_8",
    "eva_airline__5_1_5",
    "eva_airline__1_1_4",
    "eva_airline__7_1_1",
    "eva_airline__escalation_edge_case",
)

#: Summary fields that depend on the clock or on where the run was written.
TIMING = ("run_dir", "wall_time_s", "session_time_s", "invocations")


def verdicts(run_dir: Path) -> dict[str, Any]:
    """``summary.json`` of a run without :data:`TIMING` fields."""
    body = json.loads((Path(run_dir) / "summary.json").read_text())
    return {k: v for k, v in body.items() if k not in TIMING}


def hashes(run_dir: Path) -> dict[str, tuple[Any, ...]]:
    """Per result folder (relative path): verdict, final DB hash, stop reason, error."""
    out = {}
    for path in sorted(Path(run_dir).glob("**/metrics.json")):
        m = json.loads(path.read_text())
        key = path.parent.relative_to(run_dir).as_posix()
        out[key] = (m["is_successful"], m["db_hash"], m["expected_db_hash"], m["stop_reason"], m["error"])
    return out
