"""Regenerating a session whose caller broke its instructions (``evalctl run --regenerate N``).

A result whose verdict is ``error`` with ``error_cause.source`` ``user_simulator`` and a message
starting ``caller fidelity:`` (``engine.results.scoring_stage.fidelity_error``) is run again with a
new caller seed; before that, its folder is moved whole to
``RUN_DIR/.regenerated/<scenario>[/trial_<k>]/attempt_<n>/`` (n from 1, oldest first), so every
attempt stays on disk and the new result's ``user_fidelity.replaced`` lists why each was replaced.
"""

from __future__ import annotations

import os
from pathlib import Path

from engine.core.records.common import ErrorSource
from engine.core.records.fidelity import FIDELITY_ERROR
from engine.core.records.metrics import MetricsRecord
from engine.results.session_files import METRICS, attempts_dir, read_metrics, scenario_dir


def broken_caller(metrics: MetricsRecord | None) -> bool:
    """The result is an ``error`` because its caller broke its instructions."""
    cause = metrics.error_cause if metrics is not None else None
    return (
        cause is not None
        and cause.source == ErrorSource.USER_SIMULATOR
        and cause.message.startswith(FIDELITY_ERROR)
    )


def attempts_kept(run_dir: Path, name: str, trial: int, trials: int) -> int:
    """How many replaced attempts of (``name``, ``trial``) the run folder keeps."""
    folder = attempts_dir(run_dir, name, trial, trials)
    k = 0
    while (folder / f"attempt_{k + 1}").is_dir():
        k += 1
    return k


def keep_attempt(run_dir: Path, name: str, trial: int, trials: int) -> Path:
    """Move the result folder of (``name``, ``trial``) to its next ``attempt_<n>`` folder; returns
    that folder. Raises OSError when it cannot be moved."""
    target = (
        attempts_dir(run_dir, name, trial, trials)
        / f"attempt_{attempts_kept(run_dir, name, trial, trials) + 1}"
    )
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(scenario_dir(Path(run_dir), name, trial, trials), target)
    return target


def keep_broken(run_dir: Path, name: str, trial: int, trials: int) -> bool:
    """Before a session of (``name``, ``trial``) runs again (``--resume`` reruns ``error``
    results): when the result there is a broken caller's, keep it as the next attempt (True) so
    no attempt is lost; False when there is none."""
    sdir = scenario_dir(Path(run_dir), name, trial, trials)
    if not broken_caller(read_metrics(sdir / METRICS)):
        return False
    keep_attempt(run_dir, name, trial, trials)
    return True
