"""The built-in success signals, each one function registered with ``@signal``, and
:func:`compute_signals`, which runs every registered signal and the domain's diagnostics.

Each function takes the :class:`SignalInputs` of one session and returns a :class:`SignalOutcome`:
``value`` is what the composite sees (bool, a 0–1 pass rate, ``None`` or ``"N/A"`` = not
applicable) and ``fields`` are the keys it contributes to ``metrics.json`` (its ``@signal``
``fields``; the six contract signals' keys are checked against
``engine.core.records.metrics.SignalFields`` when the record is built). Which signals run is the
registry's (``engine.scoring.registry``: :data:`BUILTIN` below, then installed packages').
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.core.model import Scenario, SessionResult
from engine.core.plugin import DiagnosticInputs
from engine.core.records.metrics import EXTRA_SIGNALS, SIGNALS, Signal
from engine.core.records.voice import VoiceSummary
from engine.core.signals import SignalDef, SignalRegistry, signal
from engine.scoring.action_match import is_action_match
from engine.scoring.composite import valid_value
from engine.scoring.predicates import evaluate_db_state_assertion
from engine.util.untrusted import one_line

if TYPE_CHECKING:  # the judge module (asyncio, the HTTP client) is not needed to load a spec
    from engine.scoring.judge import JudgeOutcome


@dataclass(frozen=True)
class SignalInputs:
    """Everything a signal may look at.

    ``db_hash`` / ``expected_db_hash`` are SHA-256 hex under the domain's hash rules (None when
    there is no final DB / no expected DB); ``judge`` is None when the judge is off; ``gold_db``
    is the DB the gold replay ends with (None without a gold trace), for domain diagnostics;
    ``voice_run``: the session was an audio session, ``voice`` its summary (None in text runs, or
    when the agent side never agreed on audio).
    """

    scenario: Scenario
    result: SessionResult
    strict_match: bool = False
    db_hash: str | None = None
    expected_db_hash: str | None = None
    judge: JudgeOutcome | None = None
    gold_db: Mapping[str, Any] | None = None
    voice_run: bool = False
    voice: VoiceSummary | None = None


@dataclass(frozen=True)
class SignalOutcome:
    """One signal's verdict value and the ``metrics.json`` fields it writes."""

    value: bool | float | str | None
    fields: dict[str, Any] = field(default_factory=dict)


@signal(Signal.IS_ACTION_MATCH, fields=("is_action_match",), order=10)
def action_match_signal(inp: SignalInputs) -> SignalOutcome:
    """``is_action_match``: reference answer vs recorded actions; ``"N/A"`` without a reference."""
    sc = inp.scenario
    value = is_action_match(sc.reference_answer, inp.result.actions, sc.match_options, inp.strict_match)
    return SignalOutcome(value, {"is_action_match": value})


@signal(Signal.DB_STATE_MATCH, fields=("db_state_match",), order=20)
def db_state_match_signal(inp: SignalInputs) -> SignalOutcome:
    """``db_state_match``: final DB hash == expected hash; False without a final DB; None without
    an expected DB."""
    if inp.expected_db_hash is None:
        value = None
    else:
        value = inp.db_hash is not None and inp.db_hash == inp.expected_db_hash
    return SignalOutcome(value, {"db_state_match": value})


@signal(
    Signal.DB_STATE_ASSERTION,
    fields=("db_state_assertion_pass_rate", "db_state_assertion_verdicts"),
    unit="predicates",
    verdicts="db_state_assertion_verdicts",
    order=30,
)
def db_state_assertion_signal(inp: SignalInputs) -> SignalOutcome:
    """``db_state_assertion``: pass rate over the scenario's predicates (None when it has none)."""
    assertions = inp.scenario.db_state_assertions
    if not assertions:
        return SignalOutcome(None, {"db_state_assertion_pass_rate": None, "db_state_assertion_verdicts": []})
    plugin = inp.scenario.domain.plugin
    predicates = plugin.predicates if plugin else {}
    verdicts = [
        evaluate_db_state_assertion(predicates, a, inp.result.final_db, inp.result.user_db)
        for a in assertions
    ]
    rate = sum(v["passed"] for v in verdicts) / len(verdicts)
    return SignalOutcome(
        rate, {"db_state_assertion_pass_rate": rate, "db_state_assertion_verdicts": verdicts}
    )


@signal(
    Signal.NL_ASSERTION,
    fields=("nl_assertion_pass_rate", "nl_assertion_verdicts"),
    unit="assertions",
    verdicts="nl_assertion_verdicts",
    order=40,
)
def nl_assertion_signal(inp: SignalInputs) -> SignalOutcome:
    """``nl_assertion``: the judge's per-claim pass rate; None without claims or a judge verdict."""
    judge = inp.judge
    rate = judge.nl_assertion_pass_rate if judge and inp.scenario.nl_assertions else None
    verdicts = judge.nl_assertion_verdicts if judge and rate is not None else []
    return SignalOutcome(rate, {"nl_assertion_pass_rate": rate, "nl_assertion_verdicts": verdicts})


@signal(
    Signal.JUDGE_PASSED,
    fields=("judge_passed", "judge_score", "judge_error"),
    optional=("judge_error",),
    order=50,
)
def judge_passed_signal(inp: SignalInputs) -> SignalOutcome:
    """``judge_passed``: judge score >= threshold; None when the judge is off or failed."""
    judge = inp.judge
    value = judge.passed if judge is not None else None
    fields: dict[str, Any] = {"judge_passed": value, "judge_score": judge.score if judge else None}
    if judge is not None and judge.error:
        fields["judge_error"] = judge.error
    return SignalOutcome(value, fields)


@signal(Signal.CLEAN_EXIT, fields=("clean_exit",), order=60)
def clean_exit_signal(inp: SignalInputs) -> SignalOutcome:
    """``clean_exit``: the session stopped with ``exit`` or ``transfer``."""
    value = inp.result.clean_exit
    return SignalOutcome(value, {"clean_exit": value})


#: The share of the agent's words (over its transcribed turns) in turns whose transcript is
#: nearer their own text than other lines.
SPEECH_MATCH_MIN = 0.75


@signal(
    "speech_matches_text",
    fields=("turns", "matched", "silent", "wer", "reason"),
    optional=("reason",),
    order=70,
    voice_only=True,
)
def speech_matches_text_signal(inp: SignalInputs) -> SignalOutcome:
    """``speech_matches_text`` (audio sessions): the agent's audio carries the words it says it said."""
    voice = inp.voice
    hearing = voice.hearing if voice is not None else None
    if voice is None or hearing is None or hearing.turns == 0 or hearing.errors:
        why = "no audio session" if voice is None else "no recogniser" if hearing is None else None
        if hearing is not None:
            why = "recogniser failed" if hearing.errors else "no agent turn with text"
        fields: dict[str, Any] = {"turns": 0, "matched": 0, "silent": 0, "wer": None, "reason": why}
        return SignalOutcome(None, fields)
    value = hearing.silent == 0 and hearing.matched_words >= SPEECH_MATCH_MIN * hearing.words
    fields = {"turns": hearing.turns, "matched": hearing.matched, "silent": hearing.silent, "wer": voice.wer}
    if not value:
        fields["reason"] = (
            f"{hearing.silent} agent turn(s) with text and no speech"
            if hearing.silent
            else f"{hearing.matched} of {hearing.turns} agent turns ({hearing.matched_words} of "
            f"{hearing.words} words) heard as their own text"
        )
    return SignalOutcome(value, fields)


SignalFunc = Callable[[SignalInputs], SignalOutcome]

#: The built-in signals, in display order: the one list of them (``engine.scoring.registry``
#: registers these, then the installed packages' ones).
BUILTIN: tuple[SignalDef, ...] = (
    action_match_signal,
    db_state_match_signal,
    db_state_assertion_signal,
    nl_assertion_signal,
    judge_passed_signal,
    clean_exit_signal,
    speech_matches_text_signal,
)
#: The built-in signals alone (``engine.scoring.registry.signals`` adds the installed ones).
BUILTIN_REGISTRY = SignalRegistry(BUILTIN)


def _checked(definition: SignalDef, out: Any) -> SignalOutcome:
    """``out`` when it is the outcome ``definition`` promised; ValueError naming the signal else:
    not a :class:`SignalOutcome`, other fields than declared, a value that is neither bool, a
    finite rate in 0–1, None nor ``"N/A"``, or fields that are not JSON plain data."""
    if not isinstance(out, SignalOutcome):
        raise ValueError(f"signal {definition.name}: returned {type(out).__name__}, not a SignalOutcome")
    if not isinstance(out.fields, dict):
        raise ValueError(f"signal {definition.name}: fields are a {type(out.fields).__name__}, not a dict")
    keys = set(out.fields)
    unknown = keys - set(definition.fields)
    missing = set(definition.fields) - set(definition.optional) - keys
    if unknown or missing or RESERVED_FIELDS & keys:
        raise ValueError(
            f"signal {definition.name}: fields {sorted(map(str, keys))} "
            f"are not its declared {list(definition.fields)}"
        )
    if not valid_value(out.value):
        raise ValueError(
            f"signal {definition.name}: value {_short(out.value)} "
            "is neither bool, a finite rate in 0-1, None nor 'N/A'"
        )
    try:
        json.dumps(out.fields, allow_nan=False)
    except (TypeError, ValueError) as err:
        raise ValueError(f"signal {definition.name}: fields are not JSON plain data ({err})") from None
    return out


#: Keys of an ``extra_signals.<name>`` object that evalctl writes (a signal's fields never use them).
RESERVED_FIELDS = frozenset({"value", "role", "unit", "error"})


def _short(value: Any) -> str:
    """``repr(value)``, clipped (a plugin's garbage may be large)."""
    text = one_line(repr(value))
    return text if len(text) <= 80 else text[:77] + "..."


def _plugin_outcome(definition: SignalDef, inp: SignalInputs) -> tuple[SignalOutcome, str | None]:
    """Run an installed (third-party) signal: its checked outcome and None, or a not-applicable
    outcome (None, its declared fields left out but an empty ``verdicts`` list) and the one-line
    reason (it raised or returned garbage)."""
    try:
        return _checked(definition, definition(inp)), None
    except Exception as err:  # a third party's failure never breaks scoring
        if isinstance(err, ValueError) and str(err).startswith(f"signal {definition.name}: "):
            reason = str(err)
        else:
            reason = f"signal {definition.name}: raised {type(err).__name__}: {err}"
    fields: dict[str, Any] = {definition.verdicts: []} if definition.verdicts else {}
    return SignalOutcome(None, fields), one_line(reason)


def compute_signals(
    inp: SignalInputs, registry: SignalRegistry | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run every signal of ``registry`` (default the built-in ones; a run passes
    ``engine.scoring.registry.signals()``, which adds the installed ones)
    in display order, then the domain plugin's diagnostics (computed and saved, reported in
    ``success_breakdown.excluded`` unless a spec whitelists them). Returns ``(values, fields)``:
    name → composite value, and the merged ``metrics.json`` fields: the six contract signals' keys
    at the top level, the other signals' objects under ``extra_signals`` (only when there is
    one; see ``engine.core.records.metrics.SignalFields``). A diagnostic that raises is recorded
    as None (not applicable): it never breaks scoring. A diagnostic's string value (a label) is
    written as is and is not applicable to the composite. A signal outside the six (an installed
    package's) that raises or returns garbage (see :func:`_checked`) is recorded as not applicable
    with its ``error`` note (one line) in ``extra_signals.<name>``; the other signals are untouched.
    Raises ValueError when a built-in signal returns other fields than it declared (a built-in
    that raises is a bug and propagates)."""
    if registry is None:
        registry = BUILTIN_REGISTRY
    values: dict[str, Any] = {}
    fields: dict[str, Any] = {}
    extra: dict[str, dict[str, Any]] = {}
    for name, definition in registry.items():
        if definition.voice_only and not inp.voice_run:
            continue  # an audio session's signal: text runs' results never show it
        if name in SIGNALS:
            out = _checked(definition, definition(inp))
            values[name] = out.value
            fields.update(out.fields)
            continue
        out, error = _plugin_outcome(definition, inp)
        values[name] = out.value
        entry: dict[str, Any] = {"value": out.value, "role": definition.role}
        if definition.unit is not None:
            entry["unit"] = definition.unit
        if error is not None:
            entry["error"] = error
        extra[name] = {**entry, **out.fields}
    plugin = inp.scenario.domain.plugin
    if plugin is not None and plugin.diagnostics:
        diag_in = DiagnosticInputs(inp.scenario, inp.result, inp.gold_db)
        for name, diag in plugin.diagnostics.items():
            try:
                value = diag(diag_in)
            except Exception:
                value = None
            values[name] = None if isinstance(value, str) else value  # a label gates nothing
            fields[name] = value
    if extra:
        fields[EXTRA_SIGNALS] = extra
    return values, fields
