"""Stop a run whose model endpoint is down instead of trying it once per session.

After ``limit`` sessions in a row (in the order they end) fail on the same model-endpoint failure
(a built-in side reported ``backend_error`` or ``backend_timeout``: the endpoint answered 5xx,
could not be reached or did not answer, after its retries), the breaker trips: the sessions not
started yet are not run; each is an ``error`` result blamed on the same source, whose message says
why it was not run. The sessions in flight end as they do, and the summary is written as always.
A session that ends any other way resets the count. Each worker process of a ``--workers`` run
has its own breaker.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field

from engine.core.model import Scenario, SessionResult

#: The error sources of a side's model endpoint (``engine.core.records.common.ErrorSource``).
ENDPOINT_SOURCES = frozenset({"agent_model", "user_simulator"})
#: What a built-in side reports when its endpoint failed (``engine.session.sides.server``).
ENDPOINT_CODES = ("reported backend_error", "reported backend_timeout")
#: Runs of digits or hex that differ between identical failures (request ids, timings).
_VARYING = re.compile(r"\b(?=[0-9a-f]*\d)[0-9a-f]{8,}\b|\d+\.\d+ s")


def endpoint_failure(result: SessionResult) -> str | None:
    """The failure of ``result``'s model endpoint as compared between sessions (its source and
    message, request ids left out), or None when the session did not end on one."""
    error = result.error or ""
    if result.error_source not in ENDPOINT_SOURCES or not any(code in error for code in ENDPOINT_CODES):
        return None
    return f"{result.error_source}: {_VARYING.sub('#', error)}"


@dataclass
class EndpointBreaker:
    """Counts same endpoint failures in a row; ``limit`` 0 never trips."""

    limit: int
    streak: int = 0
    last: str | None = None
    #: The failure that tripped the breaker (its source and the first such session's message).
    tripped_by: SessionResult | None = None
    _said: bool = field(default=False, repr=False)

    @property
    def tripped(self) -> bool:
        return self.tripped_by is not None

    def record(self, result: SessionResult) -> None:
        """Count one ended session; trips (and says so once, one line on stderr) at ``limit``."""
        failure = endpoint_failure(result)
        if failure is None:
            self.streak, self.last = 0, None
            return
        self.streak = self.streak + 1 if failure == self.last else 1
        self.last = failure
        if self.limit and self.streak >= self.limit and self.tripped_by is None:
            self.tripped_by = result
            if not self._said:
                self._said = True
                print(f"evalctl: stopping the run: {self.reason()}", file=sys.stderr, flush=True)

    def reason(self) -> str:
        first = self.tripped_by.error if self.tripped_by is not None else ""
        return (
            f"{self.limit} sessions in a row failed on the same model endpoint failure ({first}); "
            "the sessions not started are errors (--max-endpoint-failures sets the limit)"
        )

    def not_run(self, scenario: Scenario, trial: int) -> SessionResult:
        """The ``error`` result of a session the tripped breaker did not run."""
        source = self.tripped_by.error_source if self.tripped_by is not None else "agent_model"
        return SessionResult(
            scenario.name, trial, "error", error=f"not run: {self.reason()}", error_source=source
        )
