"""eva_airline's spoken-form rules and the three diagnostics built on them.

The rule is the agent prompt's (``templates/agent.md.j2``): a confirmation number, flight number,
airport code, seat, gate, passenger id, ticket number, voucher or credit code is spelled one
character at a time (letters as letters, digits as words, symbols named), and only the spelled
form is said; journey ids (``FL_SK621_20260320``) are tool keys and are never said at all. Each
diagnostic counts the agent lines of a session that break one part of the rule (0 = clean):

- ``unspelled_codes``: a code said in canonical form;
- ``internal_ids_spoken``: a journey id said, written or spelled;
- ``leaked_tool_text``: tool-call text in speech. On eva 2.1.0's gold conversations exactly five
  agent lines hold some (3.1.3, 3.3.4, 4.2.5, 7.2.2, 7.3.1; tests/unit/voice/test_spoken_form.py).
"""

from __future__ import annotations

import functools
import re
import threading
import weakref
from typing import Any

import orjson

from engine.core.plugin import DiagnosticInputs
from engine.session.voice.spoken import (
    SpokenCheck,
    SpokenReport,
    SpokenRules,
    agent_lines,
    collect,
    session_check,
)

RULES = SpokenRules(
    code_fields=frozenset(
        {
            "confirmation_number",
            "flight_number",
            "origin",
            "destination",
            "seat",
            "gate",
            "passenger_id",
            "ticket_number",
            "voucher_code",
            "credit_code",
            "refund_id",
            "transfer_id",
        }
    ),
    internal_fields=frozenset({"journey_id", "new_journey_id", "original_journey_id"}),
    # an upper-case token mixing letters and digits (SK621, 1QTFVX, MEAL-ZK3FFW-PAX0): a code as written
    code_pattern=re.compile(r"(?=[A-Z0-9_-]*\d)(?=[A-Z0-9_-]*[A-Z])[A-Z0-9]{2,}(?:[-_][A-Z0-9]+)*"),
    internal_pattern=re.compile(r"FL_[A-Z]{2}\d{1,4}_\d{8}"),
)

_LOCK = threading.RLock()  # re-entrant: a drop may come from the garbage collector meanwhile
#: id(scenario) -> (weak reference to the scenario, its initial DB's codes and ids): dropped with
#: the scenario, so a long process keeps none for scenarios it let go.
_BASE: dict[int, tuple[weakref.ref[Any], tuple[frozenset[str], frozenset[str]]]] = {}
#: id(result) -> (weak reference to the result, its report): the three diagnostics of a session
#: share one report without keeping the finished session (its DB, its transcript) alive.
_REPORTS: dict[int, tuple[weakref.ref[Any], SpokenReport]] = {}


def _base(scenario: Any) -> tuple[frozenset[str], frozenset[str]]:
    """Codes and ids of the scenario's initial DB, collected once per scenario."""
    key = id(scenario)
    with _LOCK:
        hit = _BASE.get(key)
    if hit is not None and hit[0]() is scenario:
        return hit[1]
    base = collect(RULES, scenario.initial_db)
    with _LOCK:
        _BASE[key] = (weakref.ref(scenario, functools.partial(_forget, key)), base)
    return base


def _forget(key: int, ref: weakref.ref[Any]) -> None:
    with _LOCK:
        hit = _BASE.get(key)
        if hit is not None and hit[0] is ref:
            del _BASE[key]


def spoken_report(inp: DiagnosticInputs) -> SpokenReport:
    """The spoken-form findings of one session (computed once, shared by the three diagnostics):
    codes known from the initial DB and from the session's tool results."""
    result = inp.result
    with _LOCK:
        hit = _REPORTS.get(id(result))
    if hit is not None and hit[0]() is result:
        return hit[1]
    report = _check(inp.scenario, [call.get("result") for call in result.tool_calls]).report(
        agent_lines(result.transcript)
    )
    with _LOCK:
        if len(_REPORTS) > 64:
            _REPORTS.clear()
        _REPORTS[id(result)] = (weakref.ref(result), report)
    return report


def _check(scenario: Any, results: list[Any]) -> SpokenCheck:
    """The session's :class:`SpokenCheck`: the scenario's initial DB codes and those of the tool
    ``results``. Sessions whose tool results are the same JSON (every trial of a replayed
    scenario) share one check: the results' orjson text is the key (the codes are read from
    their strings alone, so equal text means equal codes); results orjson cannot write are
    checked afresh."""
    try:
        key: bytes | None = orjson.dumps(results)
    except TypeError:
        key = None
    with _LOCK:
        hit = _CHECKS.get(id(scenario))
    if key is not None and hit is not None and hit[0]() is scenario and hit[1] == key:
        return hit[2]
    check = session_check(
        RULES,
        results,
        (t.name for t in scenario.tools.tools),
        base=_base(scenario),
        language=scenario.domain.language,
    )
    if key is not None:
        with _LOCK:
            if len(_CHECKS) > 256:
                _CHECKS.clear()
            _CHECKS[id(scenario)] = (weakref.ref(scenario), key, check)
    return check


#: id(scenario) -> (weak reference to the scenario, the orjson text of the last session's tool
#: results, their check).
_CHECKS: dict[int, tuple[weakref.ref[Any], bytes, SpokenCheck]] = {}


def unspelled_codes(inp: DiagnosticInputs) -> int:
    """Agent lines saying a code in canonical form instead of spelled out (0 = none)."""
    return spoken_report(inp).count("codes")


def internal_ids_spoken(inp: DiagnosticInputs) -> int:
    """Agent lines saying an internal journey id, written or spelled (0 = none)."""
    return spoken_report(inp).count("internal_ids")


def leaked_tool_text(inp: DiagnosticInputs) -> int:
    """Agent lines holding tool-call text (0 = none)."""
    return spoken_report(inp).count("tool_text")


DIAGNOSTICS = {
    "unspelled_codes": unspelled_codes,
    "internal_ids_spoken": internal_ids_spoken,
    "leaked_tool_text": leaked_tool_text,
}
