"""After a session: score it and write its artifacts; after a run: the summaries.  (INTERFACE STUB: filled by the scoring work.)

The runner calls only these functions, so scoring and artifacts can change without touching it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.model import Scenario, SessionResult


@dataclass(frozen=True)
class ScoringOptions:
    """Run-level scoring settings: ``min_agent_turns`` (stalled rule), ``strict_match``,
    judge settings (``judge_model`` None = judge off, ``judge_base_url``, ``judge_threshold``)."""

    min_agent_turns: int = 3
    strict_match: bool = False
    judge_model: str | None = None
    judge_base_url: str | None = None
    judge_api_key_env: str = "OPENAI_API_KEY"
    judge_threshold: float = 0.9
    extra: dict[str, Any] = field(default_factory=dict)


def scenario_dir(run_dir: Path, scenario_name: str, trial: int, trials: int) -> Path:
    """Where one (scenario, trial) writes: ``run_dir/<name>`` or ``run_dir/<name>/trial_<k>`` when trials > 1."""
    return run_dir / scenario_name if trials == 1 else run_dir / scenario_name / f"trial_{trial}"


def is_complete(run_dir: Path, scenario_name: str, trial: int, trials: int) -> bool:
    """True when that (scenario, trial) already has a complete, scored result (used by --resume)."""
    return (scenario_dir(run_dir, scenario_name, trial, trials) / "metrics.json").is_file()


async def finish_session(
    run_dir: Path, scenario: Scenario, result: SessionResult, trials: int, options: ScoringOptions
) -> dict[str, Any]:
    """Score ``result`` and write every per-scenario artifact atomically; returns the metrics dict."""
    raise NotImplementedError


def finish_run(run_dir: Path, run_info: dict[str, Any]) -> dict[str, Any]:
    """Recompute the run summary over every scenario directory in ``run_dir`` and write
    ``all_summary.txt``, ``summary.json`` and ``run.json``; returns the summary dict."""
    raise NotImplementedError
