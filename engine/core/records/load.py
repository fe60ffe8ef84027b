"""``load.json`` (schema ``evalctl.load/3``; version 1 had no ``rate_scenarios``, version 2 no
``left_out``): what ``evalctl load`` measured, one object per ramp step.

Written by ``engine.commands.load`` from ``engine.run.load.run_load``. Per step: ``callers`` (the
sessions at once), ``sessions`` run and their verdict counts (``passed``, ``failed``, ``errors``:
verdict ``error``; ``not_applicable``; ``unscored``: scoring failed), the success ``rate``
(passed / (passed + failed), 0–1, None when nothing had a verdict) with its 95 % interval ``ci``
(``engine.scoring.stats.rate_interval``, scenarios as the unit) and ``rate_scenarios`` (how many
scenarios had a session with a verdict: the interval's n), ``failure_share``
((failed + errors + unscored) / sessions, what ``--fail-above`` judges), the agent's reply time
percentiles ``latency_ms`` (``p50``/``p90``/``p95``/``p99`` in milliseconds, None without a reply;
``replies`` how many agent replies were timed), ``errors_by_cause`` (the ``error`` verdicts by
their source, ``"error:SOURCE"``, and the failures by cause, ``"fail:STOP_REASON"`` for a session that
did not end cleanly, else ``"fail:stalled"`` or ``"fail:signals"``; ``"unscored"`` -> count),
``wall_s`` (the step's wall time, seconds), ``cpu_s`` (the CPU of the evalctl process during the
step, seconds, every thread, and of the worker process an in-process agent runs in) and
``overhead`` (cpu_s / wall_s: the engine's own share of wall, an in-process agent's work
included), ``run_dir`` (the step's run folder, relative to the load folder) and ``left_out``
(the selected scenarios the step did not run, in selection order: a step with fewer sessions
than scenarios runs the first ones; empty when it ran every one).
``stopped_at`` is the index of the step whose failure share exceeded ``fail_above``
(the ramp stopped after it), None when every step held.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.core.records.fields import RecordError, exact_keys, get, objects, schema_version, strings
from engine.core.records.intervals import Interval, interval_json

LOAD_SCHEMA = "evalctl.load/3"
LOAD_VERSION = 3
PERCENTILES = ("p50", "p90", "p95", "p99")

_KEYS = ("schema", "spec_dir", "agent", "user", "fail_above", "stopped_at", "steps")
_STEP_KEYS = (
    "callers",
    "sessions",
    "passed",
    "failed",
    "errors",
    "not_applicable",
    "unscored",
    "rate",
    "ci",
    "rate_scenarios",
    "failure_share",
    "latency_ms",
    "replies",
    "errors_by_cause",
    "wall_s",
    "cpu_s",
    "overhead",
    "run_dir",
    "left_out",
)


@dataclass(frozen=True)
class LoadStep:
    """One ramp step (see the module docstring for each field and its unit)."""

    callers: int
    sessions: int
    passed: int
    failed: int
    errors: int
    not_applicable: int
    unscored: int
    rate: float | None
    ci: Interval | None
    failure_share: float
    latency_ms: Mapping[str, float | None]
    replies: int
    errors_by_cause: Mapping[str, int]
    wall_s: float
    cpu_s: float
    overhead: float
    run_dir: str
    #: The scenarios with a verdict-bearing session (the interval's unit count); None in version 1.
    rate_scenarios: int | None = None
    #: The selected scenarios this step did not run (fewer sessions than scenarios); () before version 3.
    left_out: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "callers": self.callers,
            "sessions": self.sessions,
            "passed": self.passed,
            "failed": self.failed,
            "errors": self.errors,
            "not_applicable": self.not_applicable,
            "unscored": self.unscored,
            "rate": self.rate,
            "ci": interval_json(self.ci),
            "rate_scenarios": self.rate_scenarios,
            "failure_share": self.failure_share,
            "latency_ms": {p: self.latency_ms.get(p) for p in PERCENTILES},
            "replies": self.replies,
            "errors_by_cause": dict(sorted(self.errors_by_cause.items())),
            "wall_s": self.wall_s,
            "cpu_s": self.cpu_s,
            "overhead": self.overhead,
            "run_dir": self.run_dir,
            "left_out": list(self.left_out),
        }

    @classmethod
    def from_json(cls, body: Any, version: int = LOAD_VERSION) -> LoadStep:
        """Parse one step object of a ``version`` record; RecordError for a missing or unknown key
        or a wrong type."""
        if not isinstance(body, dict):
            raise RecordError("load step: not an object")
        newer = {"rate_scenarios": 2, "left_out": 3}  # the version that brought the key
        keys = tuple(k for k in _STEP_KEYS if version >= newer.get(k, 1))
        exact_keys(body, keys, "load step")
        latency = get(body, "latency_ms", dict)
        exact_keys(latency, PERCENTILES, "load step latency_ms")
        causes = get(body, "errors_by_cause", dict)
        if not all(isinstance(k, str) and type(v) is int for k, v in causes.items()):
            raise RecordError("load step errors_by_cause: not a map of counts")
        return cls(
            callers=get(body, "callers", int),
            sessions=get(body, "sessions", int),
            passed=get(body, "passed", int),
            failed=get(body, "failed", int),
            errors=get(body, "errors", int),
            not_applicable=get(body, "not_applicable", int),
            unscored=get(body, "unscored", int),
            rate=_number(body, "rate", True),
            ci=Interval.from_json(body["ci"], "load step ci"),
            failure_share=float(get(body, "failure_share", int, float)),
            latency_ms={p: _number(latency, p, True) for p in PERCENTILES},
            replies=get(body, "replies", int),
            errors_by_cause=dict(causes),
            wall_s=float(get(body, "wall_s", int, float)),
            cpu_s=float(get(body, "cpu_s", int, float)),
            overhead=float(get(body, "overhead", int, float)),
            run_dir=get(body, "run_dir", str),
            rate_scenarios=get(body, "rate_scenarios", int, None) if version >= 2 else None,
            left_out=strings(body, "left_out") if version >= 3 else (),
        )


@dataclass(frozen=True)
class LoadRecord:
    """``load.json``: the ramp's settings and its steps (module docstring)."""

    spec_dir: str
    agent: str
    user: str
    fail_above: float | None
    stopped_at: int | None
    steps: tuple[LoadStep, ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": LOAD_SCHEMA,
            "spec_dir": self.spec_dir,
            "agent": self.agent,
            "user": self.user,
            "fail_above": self.fail_above,
            "stopped_at": self.stopped_at,
            "steps": [s.to_json() for s in self.steps],
        }

    @classmethod
    def from_json(cls, body: Any) -> LoadRecord:
        """Parse a ``load.json`` body; RecordError for another schema, a missing or unknown key
        or a value of the wrong type."""
        if not isinstance(body, dict):
            raise RecordError(f"not a load record: JSON {type(body).__name__}, not an object")
        version = schema_version(body, "load", LOAD_VERSION, None)
        exact_keys(body, _KEYS, "load")
        steps = tuple(LoadStep.from_json(s, version) for s in objects(body, "steps"))
        stopped = get(body, "stopped_at", int, None)
        if stopped is not None and not 0 <= stopped < len(steps):
            raise RecordError(f"stopped_at: {stopped} is not a step index (0..{len(steps) - 1})")
        return cls(
            spec_dir=get(body, "spec_dir", str),
            agent=get(body, "agent", str),
            user=get(body, "user", str),
            fail_above=_number(body, "fail_above", True),
            stopped_at=stopped,
            steps=steps,
        )


def _number(body: Mapping[str, Any], key: str, nullable: bool) -> float | None:
    value = get(body, key, int, float, None) if nullable else get(body, key, int, float)
    return None if value is None else float(value)
