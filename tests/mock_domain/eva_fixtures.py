"""Hand-built eva_airline scenarios and session results from the REAL eva 0.1.3 data.

Used by the scoring/results tests so they exercise real DBs and hashes without depending on the
conversation runtime: a "session" here is a SessionResult whose final DB is chosen by the test.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

from engine.core.model import Domain, HashRules, Scenario, SessionResult, ToolTable, UserProfile
from engine.domains import eva_airline

EVA_UNORDERED = (
    "standby_list",
    "notifications",
    "bookings",
    "system_accounts",
    "group_memberships",
    "asset_recoveries",
)


@cache
def _dataset(root: str) -> dict[str, dict[str, Any]]:
    path = Path(root) / "eva-0.1.3" / "data" / "airline_dataset.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {r["id"]: r for r in rows}


def eva_ids(data_root: Path) -> list[str]:
    return sorted(_dataset(str(data_root)))


def eva_domain(data_root: Path) -> Domain:
    return Domain(
        name="eva_airline",
        description="eva airline (hand-built for scoring tests)",
        spec_dir=Path("specs/eva_airline"),
        data_root=data_root,
        policy_role="",
        policy_instructions="",
        templates={},
        success_signals=("db_state_match", "clean_exit"),
        max_duration=900.0,
        hash_rules=HashRules(excluded_keys=("session",), unordered_lists=EVA_UNORDERED),
        tools=ToolTable(()),
        plugin=eva_airline.PLUGIN,
    )


def eva_scenario(data_root: Path, eva_id: str, **overrides: Any) -> Scenario:
    """The eva scenario ``eva_id`` with 0.1.3's initial and expected DB (no gold trace)."""
    record = _dataset(str(data_root))[eva_id]
    initial = json.loads(
        (Path(data_root) / "eva-0.1.3" / "data" / "airline_scenarios" / f"{eva_id}.json").read_text("utf-8")
    )
    fields: dict[str, Any] = {
        "name": "eva_airline__" + eva_id.replace(".", "_"),
        "record_id": eva_id,
        "spec_id_key": "eva_id",
        "description": f"eva scenario {eva_id}",
        "domain": eva_domain(data_root),
        "initial_db": initial,
        "expected_db": record["ground_truth"]["expected_scenario_db"],
        "current_date": str(initial.get("_current_date", "")),
        "user": UserProfile(
            name="caller",
            persona="",
            goal=record["user_goal"]["high_level_user_goal"],
            starting_utterance=record["user_goal"]["starting_utterance"],
        ),
        "success_signals": ("db_state_match", "clean_exit"),
        "max_duration": 900.0,
    }
    fields.update(overrides)
    return Scenario(**fields)


def session(
    scenario: Scenario,
    final_db: dict[str, Any] | None,
    *,
    trial: int = 1,
    stop_reason: str = "exit",
    agent_turns: int = 5,
    **kw: Any,
) -> SessionResult:
    """A SessionResult with ``final_db`` and plausible turns, transcript and usage."""
    transcript = [
        {"role": "user", "type": "utterance", "content": "Hi, I need help with my booking.", "t": 0.0},
        {
            "role": "agent",
            "type": "utterance",
            "content": "Sure, what is your confirmation number?",
            "t": 0.4,
        },
    ]
    return SessionResult(
        scenario_name=scenario.name,
        trial=trial,
        stop_reason=stop_reason,  # type: ignore[arg-type]
        final_db=final_db,
        transcript=kw.pop("transcript", transcript),
        agent_turns=agent_turns,
        user_turns=agent_turns,
        duration_s=kw.pop("duration_s", 1.25),
        usage=kw.pop(
            "usage", {"agent": {"model": "replay", "prompt_tokens": 0, "completion_tokens": 0, "calls": 0}}
        ),
        **kw,
    )


def expected_copy(scenario: Scenario) -> dict[str, Any]:
    assert scenario.expected_db is not None
    return copy.deepcopy(dict(scenario.expected_db))
