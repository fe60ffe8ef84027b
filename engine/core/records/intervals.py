"""The statistics parts of ``summary.json`` (schema ``evalctl.summary/2``): a rate's 95 % interval, pass^k,
the noise floor of a run with trials, and what an adaptive-trials run spent.

``engine.scoring.stats`` computes them; rates and bounds are fractions in 0–1.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine.core.records.fields import RecordError, exact_keys, get, strings

#: How an interval was computed (``engine.scoring.stats``).
METHODS = ("wilson", "bootstrap", "wilson-scenarios", "constant", "newcombe")


@dataclass(frozen=True)
class Interval:
    """A 95 % interval ``low``..``high`` (0–1; a difference of rates: −1..1) and its ``method``
    (:data:`METHODS`)."""

    low: float
    high: float
    method: str

    @property
    def width(self) -> float:
        return self.high - self.low

    def to_json(self) -> dict[str, Any]:
        return {"low": self.low, "high": self.high, "method": self.method}

    @classmethod
    def from_json(cls, body: Any, what: str) -> Interval | None:
        """None for JSON null; raises RecordError for anything :meth:`to_json` would not write."""
        if body is None:
            return None
        if not isinstance(body, dict):
            raise RecordError(f"{what}: not an interval object")
        exact_keys(body, ("low", "high", "method"), what)
        method = get(body, "method", str)
        if method not in METHODS:
            raise RecordError(f"{what}: method {method!r} is not one of {', '.join(METHODS)}")
        return cls(float(get(body, "low", int, float)), float(get(body, "high", int, float)), method)


def interval_json(ci: Interval | None) -> dict[str, Any] | None:
    return None if ci is None else ci.to_json()


@dataclass(frozen=True)
class ScenarioTrials:
    """One scenario over its trials: ``passed`` of ``trials`` with a verdict (errors and ``N/A``
    left out), ``rate`` = passed / trials (None without a verdict), ``flaky`` when its verdicts
    disagree."""

    passed: int
    trials: int
    rate: float | None
    flaky: bool

    KEYS = ("passed", "trials", "rate", "flaky")

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.KEYS}

    @classmethod
    def from_json(cls, body: Any, what: str) -> ScenarioTrials:
        if not isinstance(body, dict):
            raise RecordError(f"{what}: not an object")
        exact_keys(body, cls.KEYS, what)
        return cls(
            get(body, "passed", int),
            get(body, "trials", int),
            get(body, "rate", int, float, None),
            get(body, "flaky", bool),
        )


@dataclass(frozen=True)
class Noise:
    """The noise floor of a run with trials: ``flaky`` scenarios (verdicts disagree) of
    ``scenarios`` with a verdict, ``flaky_share`` = flaky / scenarios (None without one),
    ``flaky_scenarios`` their names; ``minimum_detectable_difference`` the smallest difference of
    the overall rate (0–1) a comparison with another run of this n and K detects at 80 % power
    (``engine.scoring.stats.minimum_detectable_difference``); ``per_scenario`` each scenario's
    pass rate over its trials."""

    scenarios: int
    flaky: int
    flaky_share: float | None
    flaky_scenarios: tuple[str, ...]
    minimum_detectable_difference: float | None
    per_scenario: Mapping[str, ScenarioTrials]

    KEYS = (
        "scenarios",
        "flaky",
        "flaky_share",
        "flaky_scenarios",
        "minimum_detectable_difference",
        "per_scenario",
    )

    def to_json(self) -> dict[str, Any]:
        return {
            "scenarios": self.scenarios,
            "flaky": self.flaky,
            "flaky_share": self.flaky_share,
            "flaky_scenarios": list(self.flaky_scenarios),
            "minimum_detectable_difference": self.minimum_detectable_difference,
            "per_scenario": {name: s.to_json() for name, s in self.per_scenario.items()},
        }

    @classmethod
    def from_json(cls, body: Any) -> Noise:
        if not isinstance(body, dict):
            raise RecordError("noise: not an object")
        exact_keys(body, cls.KEYS, "noise")
        per = get(body, "per_scenario", dict)
        return cls(
            get(body, "scenarios", int),
            get(body, "flaky", int),
            get(body, "flaky_share", int, float, None),
            strings(body, "flaky_scenarios"),
            get(body, "minimum_detectable_difference", int, float, None),
            {n: ScenarioTrials.from_json(s, f"noise.per_scenario.{n}") for n, s in per.items()},
        )


#: Why an adaptive-trials run stopped spending trials.
STOP_TARGET = "target width reached"
STOP_MAX = "maximum trials reached on every flaky scenario"
STOP_STABLE = "no flaky scenario left to run"
STOP_INTERRUPTED = "interrupted"


@dataclass(frozen=True)
class Adaptive:
    """What ``--trials auto[:MAX]`` spent: ``sessions`` run in all (every trial stored),
    ``rounds`` of trials after the first two, ``max_trials`` per scenario, ``target_width`` of the
    overall rate's interval (0–1), the ``width`` reached (None when not measurable) and why it
    ``stopped`` (one of the ``STOP_*`` texts)."""

    sessions: int
    rounds: int
    max_trials: int
    target_width: float
    width: float | None
    stopped: str

    KEYS = ("sessions", "rounds", "max_trials", "target_width", "width", "stopped")

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.KEYS}

    @classmethod
    def from_json(cls, body: Any) -> Adaptive:
        if not isinstance(body, dict):
            raise RecordError("adaptive: not an object")
        exact_keys(body, cls.KEYS, "adaptive")
        return cls(
            get(body, "sessions", int),
            get(body, "rounds", int),
            get(body, "max_trials", int),
            float(get(body, "target_width", int, float)),
            get(body, "width", int, float, None),
            get(body, "stopped", str),
        )


def _k_table(body: Any, what: str) -> dict[str, float]:
    if not isinstance(body, dict) or not all(
        isinstance(v, int | float) and not isinstance(v, bool) for v in body.values()
    ):
        raise RecordError(f"{what}: not an object of numbers")
    return dict(body)


@dataclass(frozen=True)
class PassHatK:
    """pass^k (0–1) for k = 1..trials: per scenario, and the mean over scenarios; per k its
    denominator ``scenarios`` (those with at least k trials with a verdict) and its 95 % interval
    ``ci`` (the bootstrap over scenarios); ``errors_left_out`` the trials with the verdict
    ``error`` not counted."""

    per_scenario: Mapping[str, Mapping[str, float]]
    overall: Mapping[str, float]
    scenarios: Mapping[str, int] | None = None
    ci: Mapping[str, Interval | None] | None = None
    errors_left_out: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "per_scenario": {name: dict(row) for name, row in self.per_scenario.items()},
            "overall": dict(self.overall),
            "scenarios": dict(self.scenarios or {}),
            "ci": {k: interval_json(ci) for k, ci in (self.ci or {}).items()},
            "errors_left_out": self.errors_left_out,
        }

    @classmethod
    def from_json(cls, body: Any, legacy: bool = False) -> PassHatK:
        if not isinstance(body, dict):
            raise RecordError("pass_hat_k: not an object")
        keys = ("per_scenario", "overall", "scenarios", "ci", "errors_left_out")
        exact_keys(body, keys[:2] if legacy else keys, "pass_hat_k")
        per = get(body, "per_scenario", dict)
        table = cls(
            {name: _k_table(row, f"pass_hat_k.per_scenario.{name}") for name, row in per.items()},
            _k_table(body["overall"], "pass_hat_k.overall"),
        )
        if legacy:
            return table
        counts = get(body, "scenarios", dict)
        if not all(isinstance(n, int) and not isinstance(n, bool) for n in counts.values()):
            raise RecordError("pass_hat_k.scenarios: not an object of counts")
        cis = {k: Interval.from_json(v, f"pass_hat_k.ci.{k}") for k, v in get(body, "ci", dict).items()}
        return cls(table.per_scenario, table.overall, counts, cis, get(body, "errors_left_out", int))
