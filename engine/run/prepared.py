"""The scenarios a process's sessions are running, prepared when their first session starts and let
go once their last session's result is written (``engine.spec.index``; issue #31: memory flat in
the number of distinct scenarios).

:class:`Prepared` counts each scenario's jobs in a batch: :meth:`Prepared.acquire` gives a job its
prepared scenario and the prompts and tool schemas its sides receive (``SessionSetup``, made once
per prepared scenario), :meth:`Prepared.done` is called once its result is written, and the
scenario's last job releases it. At most the sessions held at once (twice the concurrency) keep a
scenario prepared, whatever the number of scenarios.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from engine.core.model import Scenario
from engine.results.resume import Job
from engine.session.conversation import SessionSetup
from engine.session.setup import session_setup


class Prepared:
    """Prepared scenarios for ``jobs`` (more with :meth:`add`). ``index``: the run's
    ``engine.spec.index.ScenarioIndex`` (the jobs then name shells, prepared here); None when the
    jobs already carry whole scenarios (the setups are still made per scenario and let go)."""

    def __init__(self, jobs: list[Job], index: Any = None):
        self.index = index
        self.left: Counter[str] = Counter()
        self.live: dict[str, tuple[Scenario, SessionSetup]] = {}
        self.add(jobs)

    def add(self, jobs: list[Job]) -> None:
        """Count a further batch of jobs (the next round of an adaptive run)."""
        self.left.update(job.scenario.name for job in jobs)

    def acquire(self, job: Job) -> tuple[Scenario, SessionSetup]:
        """``job``'s scenario, prepared, and its session setup. Raises what preparing raises
        (SpecError when the scenario's files no longer build); nothing is held then."""
        name = job.scenario.name
        hit = self.live.get(name)
        if hit is not None:
            return hit
        scenario = self.index.prepare(name) if self.index is not None else job.scenario
        try:
            hit = (scenario, session_setup(scenario))
        except BaseException:
            if self.index is not None:
                self.index.release(name)
            raise
        self.live[name] = hit
        return hit

    def done(self, job: Job) -> None:
        """``job`` is finished (its result written, or it could not run): the scenario's last job
        lets it go."""
        name = job.scenario.name
        self.left[name] -= 1
        if self.left[name] > 0:
            return
        del self.left[name]
        if self.live.pop(name, None) is not None and self.index is not None:
            self.index.release(name)
