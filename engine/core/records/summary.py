"""``summary.json``: the record of a run's aggregate (written by ``engine.results.scoring_stage.finish_run``).

Rates are fractions in 0–1 (None when nothing counted), each with its 95 % interval ``ci``
(``engine.core.records.intervals.Interval``; None when nothing counted). ``pass_hat_k`` and
``noise`` are there only for runs of more than one trial; pass^k's k keys are strings (``"1"``,
``"2"``...), as in the file; ``adaptive`` only for ``--trials auto``.

Versions (``"schema": "evalctl.summary/N"``; ``tests/records/`` holds a run of each): 1 and 2 were
written without ``schema`` (1: no ``first_error``, ``invocations``, tallies' ``errors``, rates'
``errors_left_out``, failed results' ``verdict`` / ``error_cause``; 2: those added); 3 says its
schema; 4 adds the ``ci`` of every rate, pass^k's ``ci`` / ``scenarios`` / ``errors_left_out``,
``noise``, ``adaptive`` and ``strict`` (the composite rate
with the ``error`` results counted as failures; derived from ``overall`` when read from an older
version); 5 adds ``attribution`` (FAILs by cause, and each failed result's), ``regenerated``
(sessions whose caller was regenerated, and why), ``caller_note`` (a caller that cannot test the
agent) and ``voice``, the run-level voice figures of a voice run
(``engine.core.records.voice_run.VoiceFigures``; only in voice runs). A file without ``schema`` is
read as version 2 when it has version 2's
``first_error``, else as version 1; an older version is read into today's record (:func:`upgrade`;
its intervals are None).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine.core.records.common import ErrorCause
from engine.core.records.fidelity import CAUSES, Attribution
from engine.core.records.fields import RecordError, exact_keys, get, schema_version, strings
from engine.core.records.intervals import Adaptive, Interval, Noise, interval_json
from engine.core.records.intervals import PassHatK as PassHatK  # re-exported: the summary's pass^k
from engine.core.records.voice_run import VoiceFigures

#: The version written.
SUMMARY_VERSION = 5
SUMMARY_SCHEMA = f"evalctl.summary/{SUMMARY_VERSION}"

_RATE = (int, float, None)
_SECONDS = (int, float)


def _object(body: Mapping[str, Any], key: str) -> dict[str, Any]:
    return get(body, key, dict)


@dataclass(frozen=True)
class Tally:
    """Composite verdicts counted: ``total`` = passed + failed (``N/A`` and ``error`` results left
    out, counted in ``not_applicable`` / ``errors``); ``rate`` 0–1 and its 95 % interval ``ci``."""

    passed: int
    failed: int
    not_applicable: int
    errors: int
    total: int
    rate: float | None
    ci: Interval | None = None

    KEYS = ("passed", "failed", "not_applicable", "errors", "total", "rate", "ci")

    def to_json(self) -> dict[str, Any]:
        body = {k: getattr(self, k) for k in self.KEYS}
        body["ci"] = interval_json(self.ci)
        return body

    @classmethod
    def from_json(cls, body: Mapping[str, Any], what: str, legacy: bool = False) -> Tally:
        exact_keys(body, cls.KEYS[:-1] if legacy else cls.KEYS, what)
        return cls(
            get(body, "passed", int),
            get(body, "failed", int),
            get(body, "not_applicable", int),
            get(body, "errors", int),
            get(body, "total", int),
            get(body, "rate", *_RATE),
            None if legacy else Interval.from_json(body["ci"], f"{what}.ci"),
        )


@dataclass(frozen=True)
class StrictTally:
    """The composite rate with the results that have the verdict ``error`` counted as failures:
    ``total`` = passed + failed + errors (``N/A`` results left out, as in :class:`Tally`); ``rate``
    0–1, None when nothing counted or when the overall rate is not applicable (nothing measured a
    verdict). It is never above the overall rate: the agent cannot raise it by failing in a way
    that ends as an ``error`` (and ``--fail-under`` judges it unless ``--allow-errors``)."""

    passed: int
    failed: int
    errors: int
    total: int
    rate: float | None
    #: The rate's 95 % interval, the scenario the unit as for ``overall`` (None when nothing
    #: counted, or when derived from a summary written before version 4).
    ci: Interval | None = None

    KEYS = ("passed", "failed", "errors", "total", "rate", "ci")

    @classmethod
    def of(cls, overall: Tally, ci: Interval | None = None) -> StrictTally:
        """The strict tally of ``overall`` (none when ``overall`` has no value because nothing
        measured a verdict: every result ``N/A``), with its interval ``ci`` when known."""
        if overall.total == 0 and overall.not_applicable:
            return cls(0, 0, overall.errors, 0, None)
        total = overall.total + overall.errors
        return cls(
            overall.passed,
            overall.failed,
            overall.errors,
            total,
            overall.passed / total if total else None,
            ci if total else None,
        )

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {k: getattr(self, k) for k in self.KEYS}
        body["ci"] = interval_json(self.ci)
        return body

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> StrictTally:
        exact_keys(body, cls.KEYS, "strict")
        return cls(
            get(body, "passed", int),
            get(body, "failed", int),
            get(body, "errors", int),
            get(body, "total", int),
            get(body, "rate", *_RATE),
            Interval.from_json(body["ci"], "strict.ci"),
        )


#: ``SignalRate.kind`` of a diagnostic that counts findings per result (0 = clean).
COUNT = "count"


@dataclass(frozen=True)
class SignalRate:
    """One signal's (or diagnostic's) pass rate over its own ``unit`` (scenarios, sessions,
    predicates, assertions); ``role`` gating, informational or diagnostic; ``errors_left_out`` the
    results with the verdict ``error`` not counted; ``ci`` the rate's 95 % interval.

    A count diagnostic (``kind`` = :data:`COUNT`, a number of findings per result) counts its
    clean results (0 findings) as ``passed``; ``sum`` / ``max`` are the findings over the results
    and the most in one result. The three keys are written for count diagnostics only (None
    otherwise), so every other rate keeps its seven keys."""

    passed: int
    total: int
    rate: float | None
    unit: str
    role: str
    errors_left_out: int = 0
    kind: str | None = None
    sum: int | float | None = None
    max: int | float | None = None
    ci: Interval | None = None

    KEYS = ("passed", "total", "rate", "unit", "role", "errors_left_out", "ci")
    COUNT_KEYS = ("kind", "sum", "max")

    def __post_init__(self) -> None:
        unset = self.sum is None and self.max is None
        if self.kind not in (None, COUNT) or (self.kind is None) != unset:
            raise ValueError(f"SignalRate: kind {self.kind!r} with sum {self.sum!r}, max {self.max!r}")

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {k: getattr(self, k) for k in self.KEYS}
        body["ci"] = interval_json(self.ci)
        if self.kind is not None:
            body.update(kind=self.kind, sum=self.sum, max=self.max)
        return body

    @classmethod
    def from_json(cls, body: Any, what: str, legacy: bool = False) -> SignalRate:
        if not isinstance(body, dict):
            raise RecordError(f"{what}: not an object")
        counted = any(k in body for k in cls.COUNT_KEYS)
        keys = cls.KEYS[:-1] if legacy else cls.KEYS
        exact_keys(body, (*keys, *cls.COUNT_KEYS) if counted else keys, what)
        kind = get(body, "kind", str) if counted else None
        if counted and kind != COUNT:
            raise RecordError(f"{what}: kind {kind!r} is not {COUNT!r}")
        return cls(
            get(body, "passed", int),
            get(body, "total", int),
            get(body, "rate", *_RATE),
            get(body, "unit", str),
            get(body, "role", str),
            get(body, "errors_left_out", int),
            kind,
            get(body, "sum", int, float) if counted else None,
            get(body, "max", int, float) if counted else None,
            None if legacy else Interval.from_json(body["ci"], f"{what}.ci"),
        )


@dataclass(frozen=True)
class Stalled:
    """Results stalled by the min-agent-turns rule: ``scenarios`` as ``name`` (one trial) or
    ``name#trial_k``; ``min_agent_turns`` the run's setting (None when unknown)."""

    count: int
    scenarios: tuple[str, ...]
    min_agent_turns: int | None

    def to_json(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "scenarios": list(self.scenarios),
            "min_agent_turns": self.min_agent_turns,
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Stalled:
        exact_keys(body, ("count", "scenarios", "min_agent_turns"), "stalled")
        return cls(
            get(body, "count", int), strings(body, "scenarios"), get(body, "min_agent_turns", int, None)
        )


@dataclass(frozen=True)
class UsageTotal:
    """Model use of one role over the run: the ``models`` seen (first-seen order), token sums and
    model requests."""

    models: tuple[str, ...]
    prompt_tokens: int
    completion_tokens: int
    calls: int
    #: Requests whose tokens are unknown (``engine.core.records.common.Usage.unreported``);
    #: written only when not 0.
    unreported: int = 0

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "models": list(self.models),
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "calls": self.calls,
        }
        if self.unreported:
            body["unreported"] = self.unreported
        return body

    @classmethod
    def from_json(cls, body: Any, what: str) -> UsageTotal:
        if not isinstance(body, dict):
            raise RecordError(f"{what}: not an object")
        exact_keys(body, ("models", "prompt_tokens", "completion_tokens", "calls"), what, ("unreported",))
        return cls(
            strings(body, "models"),
            get(body, "prompt_tokens", int),
            get(body, "completion_tokens", int),
            get(body, "calls", int),
            get(body, "unreported", int) if "unreported" in body else 0,
        )


@dataclass(frozen=True)
class SessionTimes:
    """Session durations in seconds: sum, mean (0 without sessions) and longest."""

    total: float
    mean: float
    max: float

    def to_json(self) -> dict[str, Any]:
        return {"total": self.total, "mean": self.mean, "max": self.max}

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> SessionTimes:
        exact_keys(body, ("total", "mean", "max"), "session_time_s")
        return cls(get(body, "total", *_SECONDS), get(body, "mean", *_SECONDS), get(body, "max", *_SECONDS))


@dataclass(frozen=True)
class FailedResult:
    """One result that is not successful: its ``verdict`` (false, ``"N/A"`` or ``"error"``), the
    gating signals that failed, whether it stalled, how the session stopped (``error`` its
    message, None when it ended normally) and, for the verdict ``error``, its ``error_cause``."""

    scenario: str
    trial: int
    failed_signals: tuple[str, ...]
    stalled: bool
    stop_reason: str | None
    error: str | None
    verdict: bool | str = False
    error_cause: ErrorCause | None = None
    #: A FAIL's most likely cause (summary version 5; None for an error, N/A or older file).
    attribution: Attribution | None = None

    KEYS = (
        "scenario",
        "trial",
        "verdict",
        "failed_signals",
        "stalled",
        "stop_reason",
        "error",
        "error_cause",
    )

    def to_json(self) -> dict[str, Any]:
        body = {k: getattr(self, k) for k in self.KEYS}
        body["failed_signals"] = list(self.failed_signals)
        body["error_cause"] = None if self.error_cause is None else self.error_cause.to_json()
        body["attribution"] = None if self.attribution is None else self.attribution.to_json()
        return body

    @classmethod
    def from_json(cls, body: Any) -> FailedResult:
        if not isinstance(body, dict):
            raise RecordError("failed: not a list of objects")
        exact_keys(body, cls.KEYS, "failed", ("attribution",))
        attribution = body.get("attribution")
        return cls(
            get(body, "scenario", str),
            get(body, "trial", int),
            strings(body, "failed_signals"),
            get(body, "stalled", bool),
            get(body, "stop_reason", str, None),
            get(body, "error", str, None),
            get(body, "verdict", bool, str),
            ErrorCause.from_json(get(body, "error_cause", dict, None)),
            None if attribution is None else Attribution.from_json(attribution),
        )


@dataclass(frozen=True)
class Regenerated:
    """``regenerated``: ``sessions`` results whose caller was regenerated (``evalctl run
    --regenerate``), ``attempts`` the attempts replaced in all, ``reasons`` their count by the
    fidelity check that failed first."""

    sessions: int = 0
    attempts: int = 0
    reasons: Mapping[str, int] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"sessions": self.sessions, "attempts": self.attempts, "reasons": dict(self.reasons or {})}

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Regenerated:
        exact_keys(body, ("sessions", "attempts", "reasons"), "regenerated")
        reasons = _object(body, "reasons")
        if not all(isinstance(n, int) and not isinstance(n, bool) for n in reasons.values()):
            raise RecordError("regenerated.reasons: not an object of counts")
        return cls(get(body, "sessions", int), get(body, "attempts", int), reasons)


#: The keys version 5 added.
_V5_KEYS = ("attribution", "regenerated", "caller_note")

#: The keys every summary has (the first check of a file that may not be a summary at all).
CORE_KEYS = ("unit", "results", "scenarios", "trials", "signals", "stalled", "failed")

_KEYS = (
    "schema",
    "run_dir",
    "evalctl_version",
    "results",
    "scenarios",
    "trials",
    "unit",
    "missing",
    "interrupted",
    "overall",
    "strict",
    "task",
    "signals",
    "stalled",
    "stop_reasons",
    "errors",
    "first_error",
    "judge_errors",
    "first_judge_error",
    "usage",
    "invocations",
    "wall_time_s",
    "session_time_s",
    "failed",
)


@dataclass(frozen=True)
class SummaryRecord:
    """A run's aggregate over its complete results (one per (scenario, trial)).

    ``unit`` is ``scenarios`` (one trial) or ``sessions``; ``missing`` the planned results not
    there (``name`` or ``name#trial_k``); ``overall`` / ``task`` the composite tallies (task leaves
    ``clean_exit`` out); ``signals`` one rate per signal then per diagnostic (stalled results left
    out); ``stop_reasons`` counts by reason; ``errors`` the results with the verdict ``error``
    (``first_error`` the first one's ``scenario: source: message``); ``judge_errors`` results whose
    judge failed (gating or not); ``usage`` every model request of the run, superseded attempts
    included; ``invocations`` the run's invocations so far (run, resumes, rescores);
    ``wall_time_s`` their seconds summed (None when unknown); ``pass_hat_k`` and ``noise`` (the
    per-scenario pass rates over trials, the flaky share, the minimum detectable difference) only
    when ``trials`` > 1; ``adaptive`` only for ``--trials auto``.
    ``strict`` the composite with the ``error`` results counted as failures (derived from
    ``overall`` when not given); ``voice`` the run-level voice figures (voice runs only).
    """

    run_dir: str
    evalctl_version: str
    results: int
    scenarios: int
    trials: int
    unit: str
    missing: tuple[str, ...]
    interrupted: bool
    overall: Tally
    task: Tally
    signals: Mapping[str, SignalRate]
    stalled: Stalled
    stop_reasons: Mapping[str, int]
    errors: int
    first_error: str | None
    judge_errors: int
    first_judge_error: str | None
    usage: Mapping[str, UsageTotal]
    invocations: int
    wall_time_s: float | None
    session_time_s: SessionTimes
    failed: tuple[FailedResult, ...]
    pass_hat_k: PassHatK | None = None
    noise: Noise | None = None
    adaptive: Adaptive | None = None
    strict: StrictTally | None = None
    attribution: Mapping[str, int] | None = None
    regenerated: Regenerated | None = None
    caller_note: str | None = None
    voice: VoiceFigures | None = None

    def __post_init__(self) -> None:
        if self.strict is None:
            object.__setattr__(self, "strict", StrictTally.of(self.overall))

    @property
    def strict_tally(self) -> StrictTally:
        """:attr:`strict`, never None (it is derived from ``overall`` when not given)."""
        return self.strict if self.strict is not None else StrictTally.of(self.overall)

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "schema": SUMMARY_SCHEMA,
            "run_dir": self.run_dir,
            "evalctl_version": self.evalctl_version,
            "results": self.results,
            "scenarios": self.scenarios,
            "trials": self.trials,
            "unit": self.unit,
            "missing": list(self.missing),
            "interrupted": self.interrupted,
            "overall": self.overall.to_json(),
            "strict": self.strict_tally.to_json(),
            "task": self.task.to_json(),
            "signals": {name: s.to_json() for name, s in self.signals.items()},
            "stalled": self.stalled.to_json(),
            "stop_reasons": dict(self.stop_reasons),
            "errors": self.errors,
            "first_error": self.first_error,
            "judge_errors": self.judge_errors,
            "first_judge_error": self.first_judge_error,
            "usage": {role: u.to_json() for role, u in self.usage.items()},
            "invocations": self.invocations,
            "wall_time_s": self.wall_time_s,
            "session_time_s": self.session_time_s.to_json(),
            "failed": [f.to_json() for f in self.failed],
            "attribution": dict(self.attribution or dict.fromkeys(CAUSES, 0)),
            "regenerated": (self.regenerated or Regenerated()).to_json(),
            "caller_note": self.caller_note,
        }
        if self.pass_hat_k is not None:
            body["pass_hat_k"] = self.pass_hat_k.to_json()
        if self.noise is not None:
            body["noise"] = self.noise.to_json()
        if self.adaptive is not None:
            body["adaptive"] = self.adaptive.to_json()
        if self.voice is not None:
            body["voice"] = self.voice.to_json()
        return body

    @classmethod
    def from_json(cls, body: Any) -> SummaryRecord:
        """Parse a ``summary.json`` body; raises RecordError for anything :meth:`to_json` would
        not write."""
        if not isinstance(body, dict):
            raise RecordError(f"not an evalctl summary: JSON {type(body).__name__}, not an object")
        missing = sorted(set(CORE_KEYS) - body.keys())
        if missing:
            raise RecordError(f"not an evalctl summary: no {', '.join(missing)}")
        version = summary_version(body)
        legacy = version < 4  # no intervals, no noise floor, no pass^k extras
        body = upgrade(body)
        required = tuple(k for k in _KEYS if k != "strict") if legacy else _KEYS
        optional: tuple[str, ...] = ("pass_hat_k", "noise", "adaptive", "strict", "voice")
        if version >= 5:
            required = (*required, *_V5_KEYS)
        else:
            optional = (*optional, *_V5_KEYS)
        exact_keys(body, required, "summary", optional)
        attribution = _object(body, "attribution") if "attribution" in body else None
        if attribution is not None and not all(
            isinstance(n, int) and not isinstance(n, bool) for n in attribution.values()
        ):
            raise RecordError("attribution: not an object of counts")
        stop_reasons = _object(body, "stop_reasons")
        if not all(isinstance(n, int) and not isinstance(n, bool) for n in stop_reasons.values()):
            raise RecordError("stop_reasons: not an object of counts")
        return cls(
            run_dir=get(body, "run_dir", str),
            evalctl_version=get(body, "evalctl_version", str),
            results=get(body, "results", int),
            scenarios=get(body, "scenarios", int),
            trials=get(body, "trials", int),
            unit=get(body, "unit", str),
            missing=strings(body, "missing"),
            interrupted=get(body, "interrupted", bool),
            overall=Tally.from_json(_object(body, "overall"), "overall", legacy),
            task=Tally.from_json(_object(body, "task"), "task", legacy),
            signals={
                n: SignalRate.from_json(s, f"signals.{n}", legacy)
                for n, s in _object(body, "signals").items()
            },
            stalled=Stalled.from_json(_object(body, "stalled")),
            stop_reasons=stop_reasons,
            errors=get(body, "errors", int),
            first_error=get(body, "first_error", str, None),
            judge_errors=get(body, "judge_errors", int),
            first_judge_error=get(body, "first_judge_error", str, None),
            usage={r: UsageTotal.from_json(u, f"usage.{r}") for r, u in _object(body, "usage").items()},
            invocations=get(body, "invocations", int),
            wall_time_s=get(body, "wall_time_s", *_RATE),
            session_time_s=SessionTimes.from_json(_object(body, "session_time_s")),
            failed=tuple(FailedResult.from_json(f) for f in get(body, "failed", list)),
            pass_hat_k=PassHatK.from_json(body["pass_hat_k"], legacy) if "pass_hat_k" in body else None,
            noise=Noise.from_json(body["noise"]) if "noise" in body else None,
            adaptive=Adaptive.from_json(body["adaptive"]) if "adaptive" in body else None,
            strict=StrictTally.from_json(_object(body, "strict")) if "strict" in body else None,
            attribution=attribution,
            regenerated=Regenerated.from_json(_object(body, "regenerated"))
            if "regenerated" in body
            else None,
            caller_note=get(body, "caller_note", str, None) if "caller_note" in body else None,
            voice=VoiceFigures.from_json(body["voice"]) if "voice" in body else None,
        )


def summary_version(body: Mapping[str, Any]) -> int:
    """The version of a ``summary.json`` body (module docstring); RecordError for a schema that
    is not a summary's or is of a newer evalctl."""
    if "schema" not in body:
        return 2 if "first_error" in body else 1
    return schema_version(body, "summary", SUMMARY_VERSION, None)


def upgrade(body: Mapping[str, Any]) -> dict[str, Any]:
    """A ``summary.json`` body of any version as today's writer would lay it out.

    Version 1 lacks what it did not record: ``first_error`` None, ``invocations`` 0 (not
    recorded), every tally's and rate's error count 0 (version 1 had no ``error`` verdict), a
    failed result's ``verdict`` False when a signal failed, it stalled or its session erred,
    else ``"N/A"`` (version 1 listed both), ``error_cause`` None. RecordError as
    :func:`summary_version`."""
    version = summary_version(body)
    out = dict(body)
    out["schema"] = SUMMARY_SCHEMA
    if version >= 2:
        return out
    out.setdefault("first_error", None)
    out.setdefault("invocations", 0)
    for key in ("overall", "task"):
        if isinstance(out.get(key), dict):
            out[key] = {**out[key], "errors": 0}
    if isinstance(out.get("signals"), dict):
        out["signals"] = {
            n: {**r, "errors_left_out": 0} if isinstance(r, dict) else r for n, r in out["signals"].items()
        }
    if isinstance(out.get("failed"), list):
        out["failed"] = [_failed_v1(f) if isinstance(f, dict) else f for f in out["failed"]]
    return out


def _failed_v1(body: dict[str, Any]) -> dict[str, Any]:
    failed = bool(body.get("failed_signals") or body.get("stalled") or body.get("error"))
    return {**body, "verdict": False if failed else "N/A", "error_cause": None}
