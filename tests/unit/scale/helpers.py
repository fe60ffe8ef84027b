"""Shared by the scale tests: the mock shop's scenarios, and a summary without its timing fields."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR

#: The mock shop: its spec folder and data root, and its three scenarios (in spec order).
SHOP = (MOCK_SPEC_DIR, MOCK_DATA_ROOT)
NAMES = ("mock__cancel_order", "mock__late_delivery_credit", "mock__shipped_refusal")
#: ``evalctl run`` on the mock shop.
SHOP_RUN = ["run", str(MOCK_SPEC_DIR), "--data-root", str(MOCK_DATA_ROOT)]

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
