"""The ramp of ``evalctl load``: one run of the runner per step, with the step's callers as its
concurrency.

Each step is an ordinary run (``engine.run.runner.run``: the same sides, sessions, storage and
scoring as ``evalctl run``) in its own folder ``OUT/step-NN-CALLERS/``, in this process (one
worker, so the CPU measured is this process's). Its sessions are the selected scenarios cycled
in whole rounds: ``n`` sessions over ``m`` scenarios run the first ``n`` scenarios once when
``n <= m`` (the other ``m - n`` are left out of that step, and the step says which: its
``left_out``), else every scenario ``t = ceil(n / m)`` times (``--trials``): at most ``m - 1``
sessions more than asked, and the denominator is always the sessions run. A step's ``n`` is
``sessions_per_step``, or with ``step_duration_s`` the callers times the rounds that fill that
duration at the previous step's mean session time (the first step: one round; the wall each step
took is recorded), else the callers (one session per caller). After each step the ramp stops when
its failure share (failures, errors and unscored results over its sessions) exceeds
``fail_above``; an interrupted step (Ctrl-C, SIGTERM) ends the ramp too.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from engine.core.options import RunOptions
from engine.core.records.load import LoadRecord, LoadStep
from engine.results.load_figures import step_figures
from engine.results.rundir import fresh_default_dir, select_scenarios
from engine.run.runner import run
from engine.scoring import stats
from engine.spec.index import index_domain
from engine.util.errors import InfrastructureError, UsageError


@dataclass(frozen=True)
class LoadPlan:
    """The ramp: ``callers`` per step (each >= 1, in order), how many sessions a step runs
    (``sessions_per_step``, or ``step_duration_s`` seconds' worth, or one per caller), the failure
    share (0..1) above which the ramp stops (None: never) and the folder of the whole load
    (``output_dir``: one run folder per step and ``load.json``; None: a fresh ``runs/<UTC stamp>``
    made once the spec has loaded)."""

    callers: tuple[int, ...]
    output_dir: Path | None = None
    sessions_per_step: int | None = None
    step_duration_s: float | None = None
    fail_above: float | None = None

    def check(self) -> None:
        """UsageError (one line) for a ramp that cannot run."""
        if not self.callers or any(n < 1 for n in self.callers):
            raise UsageError("--ramp: give one or more caller counts, each at least 1 (e.g. 10,50,100)")
        if self.sessions_per_step is not None and self.step_duration_s is not None:
            raise UsageError("--sessions-per-step and --step-duration: give one of them")
        if self.sessions_per_step is not None and self.sessions_per_step < 1:
            raise UsageError("--sessions-per-step must be at least 1")
        if self.step_duration_s is not None and not self.step_duration_s > 0:
            raise UsageError("--step-duration must be more than 0 seconds")
        if self.fail_above is not None and not 0 <= self.fail_above <= 1:
            raise UsageError(f"--fail-above {self.fail_above} is not a share in 0..1")


@dataclass
class LoadOutcome:
    """What the ramp did: its ``record`` (``load.json``), its folder ``output_dir`` and whether a
    step was ``interrupted``."""

    record: LoadRecord
    output_dir: Path
    interrupted: bool = False
    #: Why a step after the first could not run (an endpoint gone: InfrastructureError's line);
    #: the steps before it are in ``record``. None: every planned step ran or the ramp stopped.
    failure: str | None = None


def fill(names: list[str], sessions: int) -> tuple[tuple[str, ...], int]:
    """The scenarios and the trials that give at least ``sessions`` sessions from ``names`` cycled
    in whole rounds (module docstring): every name once a round, so all of them as soon as
    ``sessions >= len(names)``; raises ValueError for no names or sessions < 1."""
    if not names or sessions < 1:
        raise ValueError("nothing to fill a step with")
    if sessions <= len(names):
        return tuple(names[:sessions]), 1
    return tuple(names), math.ceil(sessions / len(names))


def step_sessions(plan: LoadPlan, callers: int, mean_session_s: float | None) -> int:
    """The sessions a step of ``callers`` runs (module docstring); ``mean_session_s`` is the
    previous step's mean session wall time in seconds (None: no step before)."""
    if plan.sessions_per_step is not None:
        return plan.sessions_per_step
    if plan.step_duration_s is not None and mean_session_s:
        return callers * max(1, round(plan.step_duration_s / mean_session_s))
    return callers


def cpu_s() -> float:
    """Seconds of CPU of this process (every thread) and of its ended child processes: a step's
    worker (an in-process agent runs in a supervised one, ``engine.run.workers.isolated``) is
    joined before the step ends, so its CPU counts in the step's."""
    times = os.times()
    return time.process_time() + times.children_user + times.children_system


async def run_load(
    opts: RunOptions, plan: LoadPlan, on_step: Callable[[LoadStep], None] | None = None
) -> LoadOutcome:
    """Run the ramp ``plan`` with the run settings ``opts`` (its agent, user, selection, limits;
    its concurrency, trials, output folder and workers are the ramp's). ``on_step`` is called with
    each finished step. Raises what ``engine.run.runner.run`` raises (SpecError, UsageError,
    DataRootError, InfrastructureError) and UsageError for a bad plan or an empty selection."""
    plan.check()
    scipy_loaded = stats.preload()  # a one-time import (about 0.5 s), not any step's cost
    loaded = index_domain(opts.spec_dir, opts.data_root, plugins=opts.plugins, language=opts.language)
    names = [s.name for s in select_scenarios(loaded.scenarios, opts.scenarios, opts.domain_prefix)]
    if not names:
        raise UsageError(f"no scenario selected in {opts.spec_dir}")
    del loaded
    scipy_loaded.join()
    out = plan.output_dir or fresh_default_dir()
    steps: list[LoadStep] = []
    stopped: int | None = None
    interrupted = False
    failure: str | None = None
    mean_session_s: float | None = None
    for index, callers in enumerate(plan.callers):
        chosen, trials = fill(names, step_sessions(plan, callers, mean_session_s))
        folder = f"step-{index + 1:02d}-{callers}"
        step_opts = dataclasses.replace(
            opts,
            scenarios=chosen,
            domain_prefix=None,
            trials=trials,
            concurrency=callers,
            output_dir=out / folder,
            resume=None,
            workers=1,
            shard=None,
            adaptive_target_width=None,
            progress=False,
            quiet=True,
        )
        cpu0, wall0 = cpu_s(), time.perf_counter()
        try:
            report = await run(step_opts)
        except InfrastructureError as err:
            if not steps:
                raise  # nothing measured: the command fails as a run would
            failure = f"step {index + 1} ({callers} callers) could not run: {err}"
            break
        # to the step's last session: a worker's shutdown (up to 5 s for an agent's leftover
        # tasks, engine.util.aio.run_to_end) is not the sessions' time
        wall, cpu = (report.last_added_at or time.perf_counter()) - wall0, cpu_s() - cpu0
        left_out = tuple(n for n in names if n not in set(chosen))
        step = dataclasses.replace(step_figures(report, callers, wall, cpu, folder), left_out=left_out)
        steps.append(step)
        if report.outcomes:
            mean_session_s = sum(o.duration_s for o in report.outcomes) / len(report.outcomes)
        if on_step is not None:
            on_step(step)
        if report.interrupted:
            interrupted = True
            break
        if plan.fail_above is not None and step.failure_share > plan.fail_above:
            stopped = index
            break
    record = LoadRecord(
        spec_dir=str(opts.spec_dir),
        agent=opts.agent,
        user=opts.user,
        fail_above=plan.fail_above,
        stopped_at=stopped,
        steps=tuple(steps),
    )
    return LoadOutcome(record, out, interrupted, failure)
