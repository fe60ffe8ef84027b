"""What a run keeps of each session it finished: a small record, never the session's DB, its
transcript or its tool calls (those are in the result folder, and read back on demand).

A run of thousands of sessions therefore holds a few hundred bytes per session
(:class:`Outcome`) and the summary's running totals (``engine.scoring.summary.SummaryTotals``);
:func:`stored_results` reads the whole results back from disk, one at a time.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.core.model import CLEAN_STOP_REASONS, SessionResult
from engine.core.records.metrics import MetricsRecord
from engine.results.session_files import METRICS, load_session, read_metrics, scenario_dir


@dataclass(frozen=True)
class Outcome:
    """One session a run finished, without its DB, transcript or tool calls.

    The session's fields mirror ``engine.core.model.SessionResult`` (``duration_s`` / ``engine_time_s``
    in seconds; ``usage``: role -> ``{model, prompt_tokens, completion_tokens, calls}``);
    ``scored`` is False when scoring failed (the runner's ``scoring_errors`` says why), else
    ``is_successful`` is its verdict (True, False, ``"N/A"`` or ``"error"``) and ``stalled`` its
    stalled flag, as in its ``metrics.json``."""

    scenario_name: str
    trial: int
    stop_reason: str
    error: str | None
    error_source: str | None
    agent_turns: int
    user_turns: int
    duration_s: float
    engine_time_s: float
    agent_backend: str
    user_backend: str
    usage: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    scored: bool = False
    is_successful: bool | str | None = None
    stalled: bool = False
    #: The ``error_cause.source`` of the verdict ``error`` (its metrics'), which scoring may set when
    #: the session itself ended cleanly (a caller-fidelity or judge error); None otherwise.
    verdict_source: str | None = None

    @property
    def clean_exit(self) -> bool:
        """The session ended by an exit or a transfer (``engine.core.model.CLEAN_STOP_REASONS``)."""
        return self.stop_reason in CLEAN_STOP_REASONS

    @property
    def key(self) -> tuple[str, int]:
        return self.scenario_name, self.trial


def outcome(result: SessionResult, metrics: MetricsRecord | None) -> Outcome:
    """The small record of a finished session and its metrics (None: scoring failed)."""
    return Outcome(
        scenario_name=result.scenario_name,
        trial=result.trial,
        stop_reason=result.stop_reason,
        error=result.error,
        error_source=result.error_source,
        agent_turns=result.agent_turns,
        user_turns=result.user_turns,
        duration_s=result.duration_s,
        engine_time_s=result.engine_time_s,
        agent_backend=result.agent_backend,
        user_backend=result.user_backend,
        usage={role: dict(u) for role, u in result.usage.items()},
        scored=metrics is not None,
        is_successful=metrics.is_successful if metrics is not None else None,
        stalled=metrics.stalled if metrics is not None else False,
        verdict_source=(
            metrics.error_cause.source if metrics is not None and metrics.error_cause is not None else None
        ),
    )


def stored_results(
    run_dir: Path, outcomes: Iterable[Outcome], trials: int
) -> Iterator[tuple[SessionResult, MetricsRecord | None]]:
    """Each outcome's whole session and metrics as stored in ``run_dir`` (laid out for ``trials``),
    read back one at a time (``engine.results.session_files.load_session``; metrics None when its
    ``metrics.json`` is missing or torn). Raises OSError / ValueError for a folder that does not
    hold a whole stored session."""
    for item in outcomes:
        sdir = scenario_dir(Path(run_dir), item.scenario_name, item.trial, trials)
        _, result = load_session(sdir)
        yield result, read_metrics(sdir / METRICS)
