"""Failure attribution: the most likely cause of a FAIL, with the evidence.

:func:`attribute` names one of ``engine.core.records.fidelity.CAUSES`` for a result whose verdict
is False, in this order of precedence:

1. ``infrastructure``: the session stopped on an ``error`` blamed on infrastructure (its
   ``error_source``: the engine, the transport, the agent's model endpoint, the caller simulator);
2. ``data``: the scenario's own gold conversation does not reach its expected DB (the gold or the
   tool data is inconsistent: no agent could pass);
3. ``agent``, when the session ended on the agent's own error (stop reason ``agent_error``: its
   exception, its crash; or an ``error`` blamed on no one: its protocol breach, its frames over
   the byte budget): what it then left undone follows from that;
4. ``user_simulator``: the caller broke its instructions (``user_fidelity`` findings) at or before
   the agent's first departure from the gold;
5. ``speech`` (audio sessions only): the agent's first wrong argument is a near miss of the gold
   value (at most two characters apart once case and separators are dropped): a mis-heard value;
6. ``agent`` otherwise: the first write call that leaves the gold path (a wrong tool or argument,
   an extra write), the gold write the agent never made (a missing write, a refused policy
   step; also one it skipped: its next write is the gold's later one and the skipped write never
   comes), or, when every write matches, the failing signals (a wrong end state, no clean exit).

The evidence is one line; ``turn`` is the transcript event index where the session first left
what the gold and the persona allow (None when no single event shows it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from engine.core.model import Scenario, SessionResult
from engine.core.records.fidelity import Attribution, UserFidelity

_CLIP = 80


def _norm(value: Any) -> str:
    return re.sub(r"[\s_\-.,]", "", str(value).lower())


def _short(value: Any) -> str:
    """A value as ``diff`` shows arguments: JSON (``"O-101"``, ``false``), clipped."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (RecursionError, ValueError):  # nested too deeply, an int too long to print
        text = repr(value)
    return text if len(text) <= _CLIP else text[: _CLIP - 3] + "..."


def _near(a: Any, b: Any) -> bool:
    """At most two single-character edits apart after :func:`_norm` (a mis-heard code or name)."""
    x, y = _norm(a), _norm(b)
    if x == y or abs(len(x) - len(y)) > 2 or not x or not y:
        return x == y
    prev = list(range(len(y) + 1))
    for i, cx in enumerate(x, 1):
        cur = [i]
        for j, cy in enumerate(y, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (cx != cy)))
        prev = cur
    return prev[-1] <= 2


def _writes(scenario: Scenario) -> frozenset[str]:
    return frozenset(t.name for t in scenario.domain.tools.tools if t.kind == "write")


def _session_writes(
    result: SessionResult, writes: frozenset[str]
) -> list[tuple[int, str, Mapping[str, Any]]]:
    out: list[tuple[int, str, Mapping[str, Any]]] = []
    for index, event in enumerate(result.transcript):
        content = event.get("content")
        if event.get("type") != "tool_call" or event.get("role") != "agent" or not isinstance(content, dict):
            continue
        if content.get("name") in writes:
            args = _parsed(content.get("arguments"))
            out.append((index, str(content.get("name")), args if isinstance(args, dict) else {}))
    return out


def _parsed(raw: Any) -> Any:
    """A call's arguments: the JSON text parsed (a side sends text), None when it does not parse."""
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None


def _first_departure(
    scenario: Scenario, result: SessionResult
) -> tuple[int | None, str, tuple[Any, Any] | None] | None:
    """``(turn, evidence, (gold value, session value) of a wrong argument or None)`` of the first
    write leaving the gold path; None when every write matches (or there is no gold)."""
    if scenario.gold_trace is None:
        return None
    writes = _writes(scenario)
    gold = [s for s in scenario.gold_trace.tool_calls("agent") if s.tool in writes]
    made = _session_writes(result, writes)
    for k, (index, name, args) in enumerate(made):
        if k >= len(gold):
            return index, f"extra write: {name}({_args(args)}) is not in the gold conversation", None
        step = gold[k]
        if name != step.tool:
            skipped = _skipped(gold, k, name, made[k + 1 :])
            if skipped:
                more = f" (and {len(skipped) - 1} more gold write{'s' if len(skipped) > 2 else ''})"
                evidence = (
                    f"missing write: the agent never called {step.tool}({_args(step.arguments)}); "
                    f"its next write, {name}, is the gold's next one"
                )
                return index, evidence + (more if len(skipped) > 1 else ""), None
            return index, f"wrong tool: called {name}, the gold calls {step.tool} here", None
        for key, want in step.arguments.items():
            got = args.get(key)
            if _norm(got) != _norm(want):
                evidence = f"wrong argument: {name}({key}) is {_short(got)}, the gold has {_short(want)}"
                return index, evidence, (want, got)
    if len(made) < len(gold):
        step = gold[len(made)]
        return None, f"missing write: the agent never called {step.tool}({_args(step.arguments)})", None
    return None


def _skipped(
    gold: Sequence[Any], k: int, name: str, rest: Sequence[tuple[int, str, Mapping[str, Any]]]
) -> list[Any]:
    """The gold writes ``gold[k:j]`` the agent skipped when its call ``name`` is the gold's later
    ``gold[j]`` (the first one of that tool after ``k``) and none of those skipped tools is among
    the agent's later writes ``rest`` (a write it made later is out of order, not missing): a
    missing write, not a wrong tool. Empty when it is not such a skip."""
    later = next((j for j in range(k + 1, len(gold)) if gold[j].tool == name), None)
    if later is None:
        return []
    skipped = list(gold[k:later])
    made_later = {tool for _, tool, _ in rest}
    return [] if any(step.tool in made_later for step in skipped) else skipped


def _args(args: Mapping[str, Any]) -> str:
    text = ", ".join(f"{k}={_short(v)}" for k, v in args.items())
    return text if len(text) <= 2 * _CLIP else text[: 2 * _CLIP - 3] + "..."


def attribute(
    scenario: Scenario,
    result: SessionResult,
    failed_signals: Sequence[str],
    stalled: bool,
    fidelity: UserFidelity | None,
    gold_ok: bool | None = None,
    voice_run: bool = False,
) -> Attribution:
    """The attribution of one FAIL (see the module docstring). ``failed_signals``: the gating
    signals that failed; ``stalled``: the min-agent-turns rule forced the failure; ``gold_ok``:
    the gold replay reaches the expected DB (None: not known)."""
    if result.stop_reason == "error" and result.error_source:
        return Attribution("infrastructure", f"the session stopped on an error: {result.error or 'unknown'}")
    if gold_ok is False:
        return Attribution(
            "data", "the gold conversation does not reach the expected DB: the data is inconsistent"
        )
    # an ``error`` stop blamed on no one is the agent's own (engine.session.sides.link.blame: its
    # protocol breach, its frames over the byte budget): a FAIL, never infrastructure's
    own_error = result.stop_reason == "agent_error" or (
        result.stop_reason == "error" and not result.error_source
    )
    if own_error and result.error:  # what it left undone follows from it
        error = result.error if len(result.error) <= 4 * _CLIP else result.error[: 4 * _CLIP - 3] + "..."
        return Attribution("agent", f"the agent's own error ended the session: {error}")
    departure = _first_departure(scenario, result)
    if fidelity is not None and fidelity.findings:
        first = fidelity.findings[0]
        callers = [
            i
            for i, e in enumerate(result.transcript)
            if e.get("role") == "user" and e.get("type") == "utterance"
        ]
        at = callers[first.turn] if first.turn < len(callers) else None
        if departure is None or departure[0] is None or (at is not None and at <= departure[0]):
            return Attribution("user_simulator", f"{first.line()} ({first.check})", at)
    if departure is not None:
        turn, evidence, values = departure
        if voice_run and values is not None and _near(*values):
            return Attribution("speech", f"{evidence} (a near miss: mis-heard?)", turn)
        return Attribution("agent", evidence, turn)
    if stalled:
        return Attribution(
            "agent",
            f"stalled: {result.agent_turns} agent turn{'' if result.agent_turns == 1 else 's'} "
            f"(stop reason {result.stop_reason})",
        )
    what = ", ".join(failed_signals) or "the verdict"
    return Attribution("agent", f"failing signals: {what} (stop reason {result.stop_reason})")
