"""``metrics.json``: the record of one scored (scenario, trial), and the contract signals' names.

:data:`SIGNALS` names the six signals of the scoring contract, whose fields are top-level keys of
``metrics.json`` under the reference harness's names. Every signal is registered
(``engine.core.signals``; the built-in ones in ``engine.scoring.registry``); a signal outside the
six writes its fields under ``extra_signals`` (see :class:`SignalFields`), so a record reads
whether or not the package that registered the signal is installed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from engine.core.records.common import ERROR_VERDICT as ERROR_VERDICT
from engine.core.records.common import ErrorCause, SpentUsage, usage_table
from engine.core.records.common import Usage as Usage  # re-exported: the metrics record's usage entries
from engine.core.records.fidelity import Attribution, UserFidelity
from engine.core.records.fields import RecordError, exact_keys, get, objects, schema_version, strings
from engine.core.records.voice import VoiceSummary

#: The version written. Every earlier one is read (``tests/records/`` holds a run of each):
#: 1 no ``error_cause``, no ``superseded_usage``, no ``error`` verdict; 2 the record id under the
#: scenario spec's key (``eva_id`` or ``record_id``); 3 always ``record_id``; 4 adds
#: ``attribution`` and ``user_fidelity``, and an audio session's ``voice`` adds ``p95`` to its turn
#: figures, ``timing`` (from the waveform) and ``hearing`` (with a recogniser), and the
#: ``speech_matches_text`` signal (voice runs only); 5 adds ``user_fidelity.dropped`` and
#: ``user_fidelity.judge_error`` (the judged caller rubric, ``engine.scoring.rubric``).
METRICS_VERSION = 5
METRICS_SCHEMA = f"evalctl.metrics/{METRICS_VERSION}"
METRICS_SCHEMA_V1 = "evalctl.metrics/1"
METRICS_SCHEMA_V2 = "evalctl.metrics/2"

#: What ``is_successful`` / ``is_task_successful`` and a signal hold when nothing was measurable.
NOT_APPLICABLE = "N/A"


class Signal(StrEnum):
    """The six success signals of the scoring contract, in its order (members are plain strings):
    the signals whose fields are top-level keys of ``metrics.json``."""

    IS_ACTION_MATCH = "is_action_match"
    DB_STATE_MATCH = "db_state_match"
    DB_STATE_ASSERTION = "db_state_assertion"
    NL_ASSERTION = "nl_assertion"
    JUDGE_PASSED = "judge_passed"
    CLEAN_EXIT = "clean_exit"


#: The signal names in the contract's order.
SIGNALS: tuple[str, ...] = tuple(Signal)

#: The contract signals whose rate counts items, not results: signal -> (unit, verdicts key).
ITEM_SIGNALS: dict[str, tuple[str, str]] = {
    Signal.DB_STATE_ASSERTION: ("predicates", "db_state_assertion_verdicts"),
    Signal.NL_ASSERTION: ("assertions", "nl_assertion_verdicts"),
}
#: The key of the other registered signals' values in ``metrics.json``.
EXTRA_SIGNALS = "extra_signals"


@dataclass(frozen=True)
class Breakdown:
    """``success_breakdown``: signal names by outcome. The first three lists follow the scenario's
    whitelist order; ``excluded`` (computed but not gating) follows the signal order."""

    passed: tuple[str, ...]
    failed: tuple[str, ...]
    not_applicable: tuple[str, ...]
    excluded: tuple[str, ...]

    FIELDS = ("passed", "failed", "not_applicable", "excluded")

    def names(self) -> tuple[str, ...]:
        return (*self.passed, *self.failed, *self.not_applicable, *self.excluded)

    def to_json(self) -> dict[str, list[str]]:
        return {k: list(getattr(self, k)) for k in self.FIELDS}

    @classmethod
    def from_json(cls, body: Any) -> Breakdown:
        if not isinstance(body, dict):
            raise RecordError("success_breakdown: not an object")
        exact_keys(body, cls.FIELDS, "success_breakdown")
        return cls(*(strings(body, k) for k in cls.FIELDS))


@dataclass(frozen=True)
class SignalFields:
    """What the signals write into ``metrics.json`` (keys as named here, in this order).

    ``is_action_match`` True / False / ``"N/A"`` (no reference answer); ``db_state_match`` None
    without an expected DB; ``*_pass_rate`` 0–1, None when the scenario has no predicates / claims
    (or the judge did not answer); ``*_verdicts`` one object per predicate / claim;
    ``judge_passed`` / ``judge_score`` (0–1) None when the judge is off or failed; ``judge_error``
    the judge's last failure (written only when there is one); ``diagnostics`` the domain plugin's
    diagnostic values by name (bool, number, string, None = not applicable; see
    ``engine.core.plugin.Diagnostic``), written after ``clean_exit``.

    ``extra``: the registered signals outside the six (``engine.core.signals``), by name in
    display order, each ``{"value": <the composite's input>, "role": "gating" | "diagnostic",
    "unit"?: <what its rate counts, with its "verdicts" among the fields>, "error"?: <one line:
    the installed signal raised or returned garbage, its value is then None>, **<its fields>}``;
    written as ``extra_signals`` after the diagnostics, and only when there is one (a run of the
    six alone writes the record as before).
    """

    is_action_match: bool | str | None
    db_state_match: bool | None
    db_state_assertion_pass_rate: float | None
    db_state_assertion_verdicts: tuple[dict[str, Any], ...]
    nl_assertion_pass_rate: float | None
    nl_assertion_verdicts: tuple[dict[str, Any], ...]
    judge_passed: bool | None
    judge_score: float | None
    judge_error: str | None
    clean_exit: bool
    diagnostics: Mapping[str, bool | int | float | str | None]
    extra: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    KEYS = (
        "is_action_match",
        "db_state_match",
        "db_state_assertion_pass_rate",
        "db_state_assertion_verdicts",
        "nl_assertion_pass_rate",
        "nl_assertion_verdicts",
        "judge_passed",
        "judge_score",
        "clean_exit",
    )
    OPTIONAL = ("judge_error",)

    def value(self, name: str) -> Any:
        """The composite's input for signal or diagnostic ``name`` (a rate for the two
        assertion signals)."""
        if name in (Signal.DB_STATE_ASSERTION, Signal.NL_ASSERTION):
            return getattr(self, f"{name}_pass_rate")
        if name in SIGNALS:
            return getattr(self, name)
        if name in self.extra:
            return self.extra[name]["value"]
        return self.diagnostics[name]

    def item_verdicts(self, name: str) -> tuple[str, tuple[dict[str, Any], ...]] | None:
        """``(unit, verdicts)`` of a signal whose rate counts items (predicates, assertions...),
        None for a signal with one value per result or a diagnostic."""
        if name in ITEM_SIGNALS:
            unit, key = ITEM_SIGNALS[name]
            return unit, tuple(getattr(self, key))
        body = self.extra.get(name)
        if body is None or "unit" not in body:
            return None
        return str(body["unit"]), tuple(body.get("verdicts") or ())

    def role(self, name: str) -> str:
        """``gating`` (may gate), ``diagnostic`` (reported only) for a signal; ``diagnostic`` for a
        domain diagnostic."""
        if name in SIGNALS:
            return "gating"
        return str(self.extra[name]["role"]) if name in self.extra else "diagnostic"

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "is_action_match": self.is_action_match,
            "db_state_match": self.db_state_match,
            "db_state_assertion_pass_rate": self.db_state_assertion_pass_rate,
            "db_state_assertion_verdicts": list(self.db_state_assertion_verdicts),
            "nl_assertion_pass_rate": self.nl_assertion_pass_rate,
            "nl_assertion_verdicts": list(self.nl_assertion_verdicts),
            "judge_passed": self.judge_passed,
            "judge_score": self.judge_score,
        }
        if self.judge_error is not None:
            body["judge_error"] = self.judge_error
        body["clean_exit"] = self.clean_exit
        body.update(self.diagnostics)
        if self.extra:
            body[EXTRA_SIGNALS] = {name: dict(v) for name, v in self.extra.items()}
        return body

    @classmethod
    def from_outputs(cls, fields: Mapping[str, Any], diagnostics: tuple[str, ...]) -> SignalFields:
        """The record of what the signal functions wrote (``fields``: exactly the keys above, the
        ``diagnostics`` named and, when other signals ran, ``extra_signals``); raises RecordError
        for a key the record does not define."""
        exact_keys(fields, (*cls.KEYS, *diagnostics), "signal fields", (*cls.OPTIONAL, EXTRA_SIGNALS))
        return cls.from_json(fields, diagnostics)

    @classmethod
    def from_json(cls, body: Mapping[str, Any], diagnostics: tuple[str, ...]) -> SignalFields:
        """Read the signal keys of ``body`` and the diagnostics named (other keys are ignored)."""
        rate = (int, float, None)
        return cls(
            is_action_match=get(body, "is_action_match", bool, str, None),
            db_state_match=get(body, "db_state_match", bool, None),
            db_state_assertion_pass_rate=get(body, "db_state_assertion_pass_rate", *rate),
            db_state_assertion_verdicts=objects(body, "db_state_assertion_verdicts"),
            nl_assertion_pass_rate=get(body, "nl_assertion_pass_rate", *rate),
            nl_assertion_verdicts=objects(body, "nl_assertion_verdicts"),
            judge_passed=get(body, "judge_passed", bool, None),
            judge_score=get(body, "judge_score", *rate),
            judge_error=get(body, "judge_error", str) if "judge_error" in body else None,
            clean_exit=get(body, "clean_exit", bool),
            diagnostics={name: get(body, name, bool, int, float, str, None) for name in diagnostics},
            extra=_extra(body),
        )


def _extra(body: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The ``extra_signals`` object of ``body`` (empty without one), each entry checked."""
    if EXTRA_SIGNALS not in body:
        return {}
    extra = get(body, EXTRA_SIGNALS, dict)
    out: dict[str, dict[str, Any]] = {}
    for name, entry in extra.items():
        what = f"{EXTRA_SIGNALS}.{name}"
        if not isinstance(entry, dict):
            raise RecordError(f"{what}: not an object")
        if name in SIGNALS:
            raise RecordError(f"{what}: a contract signal is written at the top level")
        get(entry, "value", bool, int, float, str, None)
        if get(entry, "role", str) not in ("gating", "diagnostic"):
            raise RecordError(f"{what}.role: {entry['role']!r} is not gating or diagnostic")
        if "error" in entry:
            get(entry, "error", str)
        if "unit" in entry:
            get(entry, "unit", str)
            if not all(isinstance(v, dict) for v in get(entry, "verdicts", list)):
                raise RecordError(f"{what}.verdicts: not a list of objects")
        out[name] = entry
    return out


def _optional(body: Mapping[str, Any], key: str, read: Any) -> Any:
    """``read(body[key])``, None for a null."""
    value = get(body, key, dict, None)
    return None if value is None else read(value)


#: The keys around the signal fields, in the order written.
_HEAD = (
    "schema",
    "scenario_name",
    "record_id",
    "domain",
    "trial",
    "is_successful",
    "is_task_successful",
    "error_cause",
    "attribution",
    "success_breakdown",
    "success_signals",
    "stalled",
    "min_agent_turns",
    "stop_reason",
)
_TAIL = (
    "db_hash",
    "expected_db_hash",
    "agent_turns",
    "user_turns",
    "num_actions",
    "num_tool_calls",
    "started_at",
    "duration_s",
    "engine_time_s",
    "agent_backend",
    "user_backend",
    "usage",
    "superseded_usage",
    "judge_model",
    "judge_prompt_sha256",
    "error",
    "user_fidelity",
    "evalctl_version",
)
#: The keys version 4 added.
_V4_KEYS = ("attribution", "user_fidelity")
#: Keys versions 1 and 2 wrote the scenario's dataset record id under (eva specs said ``eva_id``).
LEGACY_RECORD_ID_KEYS = ("eva_id", "record_id")


@dataclass(frozen=True)
class MetricsRecord:
    """One scored (scenario, trial): the body of its ``metrics.json``.

    ``is_successful`` / ``is_task_successful`` True, False, ``"N/A"`` (nothing gating was
    measurable) or ``"error"`` (infrastructure kept a session or a gating signal from being
    measured: ``error_cause`` says which and why, None otherwise); ``stalled`` the
    min-agent-turns rule forced False (``min_agent_turns`` the effective threshold); ``db_hash`` /
    ``expected_db_hash`` SHA-256 hex (None without a final / expected DB); ``started_at`` ISO 8601;
    ``duration_s`` / ``engine_time_s`` seconds (6 decimals); ``usage`` by role; ``judge_model`` /
    ``judge_prompt_sha256`` None with the judge off; ``error`` the session's error message;
    ``superseded_usage`` the model use of earlier attempts this result replaced (reruns, re-judging).
    ``record_id`` the scenario's dataset record id (eva specs name it ``eva_id``). ``voice_run``:
    the session was an audio session (``evalctl run --voice``); only then is ``voice`` written,
    last: the session's
    :class:`~engine.core.records.voice.VoiceSummary`, null when the agent side never agreed on audio.
    ``attribution``: a FAIL's most likely cause (``engine.core.records.fidelity.Attribution``),
    None otherwise; ``user_fidelity``: the caller-fidelity checks of the session (None in files
    before version 4).
    Every earlier version is read (:data:`METRICS_VERSION`): version 1 files have no
    ``error_cause`` nor ``superseded_usage``; versions 1 and 2 may say ``eva_id`` for ``record_id``.
    """

    scenario_name: str
    record_id: str
    domain: str
    trial: int
    is_successful: bool | str
    is_task_successful: bool | str
    error_cause: ErrorCause | None
    success_breakdown: Breakdown
    success_signals: tuple[str, ...]
    stalled: bool
    min_agent_turns: int
    stop_reason: str | None
    signals: SignalFields
    db_hash: str | None
    expected_db_hash: str | None
    agent_turns: int
    user_turns: int
    num_actions: int
    num_tool_calls: int
    started_at: str
    duration_s: float
    engine_time_s: float
    agent_backend: str
    user_backend: str
    usage: Mapping[str, Usage]
    judge_model: str | None
    judge_prompt_sha256: str | None
    error: str | None
    evalctl_version: str
    superseded_usage: tuple[SpentUsage, ...] = ()
    voice_run: bool = False
    voice: VoiceSummary | None = None
    attribution: Attribution | None = None
    user_fidelity: UserFidelity | None = None

    def __post_init__(self) -> None:
        if self.voice is not None and not self.voice_run:
            raise ValueError("MetricsRecord: a voice summary outside a voice run")

    @property
    def diagnostic_names(self) -> tuple[str, ...]:
        return tuple(self.signals.diagnostics)

    @property
    def signal_names(self) -> tuple[str, ...]:
        """The signals the record holds: the six, then the others in display order."""
        return (*SIGNALS, *self.signals.extra)

    @property
    def is_error(self) -> bool:
        """The verdict is ``error``: no verdict could be measured."""
        return self.is_successful == ERROR_VERDICT

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "schema": METRICS_SCHEMA,
            "scenario_name": self.scenario_name,
            "record_id": self.record_id,
            "domain": self.domain,
            "trial": self.trial,
            "is_successful": self.is_successful,
            "is_task_successful": self.is_task_successful,
            "error_cause": None if self.error_cause is None else self.error_cause.to_json(),
            "attribution": None if self.attribution is None else self.attribution.to_json(),
            "success_breakdown": self.success_breakdown.to_json(),
            "success_signals": list(self.success_signals),
            "stalled": self.stalled,
            "min_agent_turns": self.min_agent_turns,
            "stop_reason": self.stop_reason,
            **self.signals.to_json(),
            "db_hash": self.db_hash,
            "expected_db_hash": self.expected_db_hash,
            "agent_turns": self.agent_turns,
            "user_turns": self.user_turns,
            "num_actions": self.num_actions,
            "num_tool_calls": self.num_tool_calls,
            "started_at": self.started_at,
            "duration_s": self.duration_s,
            "engine_time_s": self.engine_time_s,
            "agent_backend": self.agent_backend,
            "user_backend": self.user_backend,
            "usage": {role: u.to_json() for role, u in self.usage.items()},
            "superseded_usage": [s.to_json() for s in self.superseded_usage],
            "judge_model": self.judge_model,
            "judge_prompt_sha256": self.judge_prompt_sha256,
            "error": self.error,
            "user_fidelity": None if self.user_fidelity is None else self.user_fidelity.to_json(),
            "evalctl_version": self.evalctl_version,
        }
        if self.voice_run:
            body["voice"] = None if self.voice is None else self.voice.to_json()
        return body

    @classmethod
    def from_json(cls, body: Any) -> MetricsRecord:
        """Parse a ``metrics.json`` body. Its diagnostics are the breakdown's names that are not
        signals. Raises RecordError for anything else than what :meth:`to_json` writes."""
        if not isinstance(body, dict):
            raise RecordError(f"not an evalctl metrics record: JSON {type(body).__name__}, not an object")
        version = schema_version(body, "metrics", METRICS_VERSION, None)
        v1 = version == 1
        id_key = "record_id"
        if version < 3:
            id_keys = [k for k in LEGACY_RECORD_ID_KEYS if k in body]
            if len(id_keys) != 1:
                raise RecordError(f"metrics: not exactly one of {', '.join(LEGACY_RECORD_ID_KEYS)}")
            id_key = id_keys[0]
        breakdown = Breakdown.from_json(get(body, "success_breakdown", dict))
        written = body.get(EXTRA_SIGNALS)
        extra: dict[str, Any] = written if isinstance(written, dict) else {}
        diagnostics = tuple(
            n for n in dict.fromkeys(breakdown.names()) if n not in SIGNALS and n not in extra
        )
        head = tuple(id_key if k == "record_id" else k for k in _HEAD)
        keys = (*head, *SignalFields.KEYS, *diagnostics, *_TAIL)
        if v1:
            keys = tuple(k for k in keys if k not in ("error_cause", "superseded_usage"))
        if version < 4:
            keys = tuple(k for k in keys if k not in _V4_KEYS)
        exact_keys(body, keys, "metrics", (*SignalFields.OPTIONAL, EXTRA_SIGNALS, "voice"))
        verdict = (bool, str)
        seconds = (int, float)
        record = cls(
            scenario_name=get(body, "scenario_name", str),
            record_id=get(body, id_key, str),
            domain=get(body, "domain", str),
            trial=get(body, "trial", int),
            is_successful=get(body, "is_successful", *verdict),
            is_task_successful=get(body, "is_task_successful", *verdict),
            error_cause=None if v1 else ErrorCause.from_json(get(body, "error_cause", dict, None)),
            success_breakdown=breakdown,
            success_signals=strings(body, "success_signals"),
            stalled=get(body, "stalled", bool),
            min_agent_turns=get(body, "min_agent_turns", int),
            stop_reason=get(body, "stop_reason", str, None),
            signals=SignalFields.from_json(body, diagnostics),
            db_hash=get(body, "db_hash", str, None),
            expected_db_hash=get(body, "expected_db_hash", str, None),
            agent_turns=get(body, "agent_turns", int),
            user_turns=get(body, "user_turns", int),
            num_actions=get(body, "num_actions", int),
            num_tool_calls=get(body, "num_tool_calls", int),
            started_at=get(body, "started_at", str),
            duration_s=get(body, "duration_s", *seconds),
            engine_time_s=get(body, "engine_time_s", *seconds),
            agent_backend=get(body, "agent_backend", str),
            user_backend=get(body, "user_backend", str),
            usage=usage_table(get(body, "usage", dict)),
            judge_model=get(body, "judge_model", str, None),
            judge_prompt_sha256=get(body, "judge_prompt_sha256", str, None),
            error=get(body, "error", str, None),
            evalctl_version=get(body, "evalctl_version", str),
            superseded_usage=()
            if v1
            else tuple(SpentUsage.from_json(e) for e in get(body, "superseded_usage", list)),
            voice_run="voice" in body,
            voice=VoiceSummary.from_json(body["voice"]) if body.get("voice") is not None else None,
            attribution=None if version < 4 else _optional(body, "attribution", Attribution.from_json),
            user_fidelity=None if version < 4 else _optional(body, "user_fidelity", UserFidelity.from_json),
        )
        for key in ("is_successful", "is_task_successful"):
            value = getattr(record, key)
            if isinstance(value, str) and value not in (NOT_APPLICABLE, ERROR_VERDICT):
                raise RecordError(f"{key}: {value!r} is not a verdict")
        if record.is_error != (record.error_cause is not None):
            raise RecordError("metrics: is_successful is 'error' exactly when error_cause is set")
        return record
