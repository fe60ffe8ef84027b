"""What a resume does: which settings it runs with, and what it does per (scenario, trial).

A resumed run keeps the settings recorded in its ``run.json`` (``engine.session.settings``); a result with
a verdict is left alone, a stored session without one is scored (the run stopped while judging
it, or its ``error`` came from the judge), and the rest is run again (missing results, stored
sessions whose artifacts cannot be read back, and results whose ``error`` came from a side or the
transport, unless ``keep_errors``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from engine.core.model import Scenario
from engine.core.options import RunOptions
from engine.core.records.common import SpentUsage
from engine.results.provenance import read_run_record
from engine.results.session_files import METRICS, readable, rescored_spent, scenario_dir, slot, spent_before
from engine.session.settings import resumed_options


def resumed(opts: RunOptions, run_dir: Path) -> RunOptions:
    """The options of a resume: the run's recorded settings (``engine.session.settings``); a run whose
    run.json is not whole (killed before it was written) keeps the given options."""
    recorded = read_run_record(run_dir)
    if recorded is None or not recorded.settings:
        return opts
    return resumed_options(opts, recorded.settings, run_dir)


@dataclass(frozen=True)
class Job:
    """One (scenario, trial) to do: ``run`` the session then score it, or ``score`` the session
    stored in its folder; ``superseded`` the model use of the attempts it replaces."""

    scenario: Scenario
    trial: int
    action: str
    superseded: tuple[SpentUsage, ...] = ()


def plan_jobs(chosen: list[Scenario], opts: RunOptions, run_dir: Path, upto: int | None = None) -> list[Job]:
    """What to do per (scenario, trial). A fresh run runs everything. A resume skips results with
    a verdict (and, with ``keep_errors``, those with the verdict ``error``); scores a stored
    session that has no verdict yet (the run stopped while judging it) or whose ``error`` came
    from the judge, when its artifacts read back whole; runs the rest again. ``upto`` (an
    adaptive-trials run, ``engine.run.adaptive``): trials past it are planned only where the run
    already started them; the adaptive rounds decide the rest.

    The jobs come longest first (:func:`longest_first`)."""
    jobs: list[Job] = []
    for s in chosen:
        for k in range(1, opts.trials + 1):
            if opts.resume is None:
                if upto is None or k <= upto:
                    jobs.append(Job(s, k, "run"))
                continue
            found = slot(run_dir, s.name, k, opts.trials)
            if upto is not None and k > upto and found.state == "missing":
                continue
            metrics = found.metrics
            if metrics is not None and (not metrics.is_error or opts.keep_errors):
                continue
            stored = found.session is not None and not found.session_error
            if stored and readable(scenario_dir(run_dir, s.name, k, opts.trials)):
                jobs.append(Job(s, k, "score", rescored_spent(found)))
            else:
                jobs.append(Job(s, k, "run", spent_before(found)))
    return longest_first(jobs)


def longest_first(jobs: list[Job]) -> list[Job]:
    """``jobs`` in the order they start: the longest expected conversation first (by the length
    of the scenario's gold trace; none counts as 0), otherwise as given (a stable sort). With many
    sessions at once, a long conversation started last would run on alone after the others end;
    started first, it overlaps them (longest-processing-time-first scheduling: measured on the
    latency bench of ``make bench``, the run's tail shrinks by about a second)."""
    return sorted(jobs, key=lambda j: -len(j.scenario.gold_trace or ()))


def set_aside_unreported(
    run_dir: Path, handed: Iterable[tuple[str, int]], reported: Iterable[tuple[str, int]], trials: int
) -> list[str]:
    """Make incomplete the folders of this invocation's sessions (``handed``: (scenario, trial)
    keys) that were never reported to the run's process (``reported``), yet hold a
    ``metrics.json``: the run did not write it (an agent's code planting a pass, then stopping the
    run), or wrote it just as a stop cut the session's report. The ``metrics.json`` is removed, so
    the summary counts the session as missing and ``--resume`` runs it again. Returns the folders
    set aside (relative to ``run_dir``). Raises nothing: a file that cannot be removed is left."""
    done = set(reported)
    aside = []
    for name, trial in dict.fromkeys(handed):
        if (name, trial) in done:
            continue
        sdir = scenario_dir(run_dir, name, trial, trials)
        marker = sdir / METRICS
        if os.path.lexists(marker):
            with contextlib.suppress(OSError):
                marker.unlink()
                aside.append(str(sdir.relative_to(run_dir)))
    return aside
