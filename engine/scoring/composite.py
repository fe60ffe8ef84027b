"""The composite verdict: ``is_successful``, ``is_task_successful`` and ``success_breakdown``.

Per the scoring contract: only whitelisted signals (the scenario's ``success_signals``) gate;
the verdict is the strict AND over those whose value is applicable; ``"N/A"`` when none is.
Float pass rates pass only at exactly 1.0. ``None`` and ``"N/A"`` mean "not applicable".
A stalled scenario (fewer agent turns than ``--min-agent-turns``) is forced to False. Where the
scenario has a gold trace whose own conversation is shorter than that (eva 5.1.5 completes its
task in two agent turns), the gold's turn count is the threshold: a run as long as the gold
conversation is a conversation that happened.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.core.gold import GoldTrace
from engine.core.records.metrics import ERROR_VERDICT, NOT_APPLICABLE, Signal


def normalize_verdict(value: Any) -> bool | None:
    """Map a signal value to pass / fail / not applicable.

    ``None`` and ``"N/A"`` → None; bool → itself; a float or int pass rate → True only at >= 1.0.
    Raises TypeError for anything else (a signal function returned a wrong type).
    """
    if value is None or value == NOT_APPLICABLE:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value >= 1.0
    raise TypeError(f"signal value {value!r} is neither bool, rate, None nor 'N/A'")


def valid_value(value: Any) -> bool:
    """True for a signal value the composite reads: bool, a finite rate in 0–1, None or ``"N/A"``."""
    if value is None or isinstance(value, bool):
        return True
    if isinstance(value, str):
        return value == NOT_APPLICABLE
    if isinstance(value, int | float):
        return math.isfinite(value) and 0 <= value <= 1
    return False


def plugin_verdict(value: Any) -> bool | None:
    """An installed signal's stored value as a verdict: like :func:`normalize_verdict`, except that
    a value it could not have passed (:func:`valid_value`: a NaN, a rate of 5, a string) is not
    applicable instead of a TypeError or a failure (a record written before the check)."""
    return normalize_verdict(value) if valid_value(value) else None


def diagnostic_verdict(value: Any) -> bool | None:
    """A domain diagnostic's value as a verdict: like :func:`normalize_verdict`, except that a
    string (a label such as a category name) is not applicable: it is reported, never counted."""
    return None if isinstance(value, str) else normalize_verdict(value)


def stalled_threshold(min_agent_turns: int, gold_trace: GoldTrace | None) -> int:
    """The effective min-agent-turns for one scenario: ``min(min_agent_turns, spoken agent turns
    of the gold trace)``; just ``min_agent_turns`` when there is no gold trace or it has no agent
    line (:meth:`engine.core.gold.GoldTrace.agent_turns`); 0 (no stall rule) when the gold holds no
    words at all (an ``actions`` trace, empty or not): it says nothing about how much an agent
    should speak, and its replay agent speaks no line."""
    if gold_trace is not None:
        wordless = bool(gold_trace.steps) and all(s.kind == "tool_call" for s in gold_trace)
        if wordless or gold_trace.format == "actions":
            return 0
    turns = gold_trace.agent_turns() if gold_trace is not None else 0
    return min(min_agent_turns, turns) if turns else min_agent_turns


@dataclass(frozen=True)
class Composite:
    """The composite of one scenario.

    ``is_successful`` / ``is_task_successful`` are True, False, ``"N/A"`` or ``"error"``; ``breakdown`` is
    ``{passed, failed, not_applicable, excluded}`` (lists of signal names: the first three in whitelist order,
    ``excluded`` in signal order);
    ``stalled`` says the min-agent-turns rule forced the verdict.
    """

    is_successful: bool | str
    is_task_successful: bool | str
    breakdown: dict[str, list[str]]
    stalled: bool


def _conjunction(verdicts: Sequence[bool]) -> bool | str:
    return all(verdicts) if verdicts else NOT_APPLICABLE


def compute_composite(
    signals: Mapping[str, Any],
    whitelist: Sequence[str],
    stalled: bool = False,
    error: bool = False,
    measured_stand: bool = True,
) -> Composite:
    """Combine ``signals`` (name → raw value, in the order to report) under ``whitelist``.

    Signals not in the whitelist land in ``excluded``; whitelisted names missing from ``signals``
    count as not applicable. An empty whitelist yields ``"N/A"`` (specs reject it before a run).
    ``error``: infrastructure kept a gating signal from being measured (its value is then not
    applicable here). The verdict is ``"error"`` only when it depends on the missing one: a measured
    gating signal that failed, or the stalled rule, makes it False whatever the missing signal
    would have said (an agent cannot hide its failure behind a judge it made fail); then
    ``is_task_successful`` is False when a measured task signal failed (or stalled), else
    ``"N/A"``. With
    ``measured_stand`` False (the session itself was cut short by infrastructure, so what was
    measured is not the agent's outcome) both verdicts are ``"error"`` whatever the signals say,
    and the stalled rule does not apply. The breakdown always shows what was measured.
    """
    breakdown: dict[str, list[str]] = {"passed": [], "failed": [], "not_applicable": [], "excluded": []}
    gating: list[tuple[str, bool]] = []
    for name in whitelist:
        verdict = normalize_verdict(signals.get(name))
        if verdict is None:
            breakdown["not_applicable"].append(name)
        else:
            breakdown["passed" if verdict else "failed"].append(name)
            gating.append((name, verdict))
    breakdown["excluded"] = [name for name in signals if name not in whitelist]
    overall = _conjunction([v for _, v in gating])
    task = _conjunction([v for n, v in gating if n != Signal.CLEAN_EXIT])
    if error and not measured_stand:
        return Composite(ERROR_VERDICT, ERROR_VERDICT, breakdown, False)
    if stalled:
        return Composite(False, False, breakdown, True)
    if error:
        if overall is not False:
            return Composite(ERROR_VERDICT, ERROR_VERDICT, breakdown, False)
        # the call's outcome failed: the result has its verdict; the task verdict, if it waits on
        # the missing signal, is not measurable ("N/A": a record is "error" as a whole or not at all)
        task = False if task is False else NOT_APPLICABLE
    return Composite(overall, task, breakdown, stalled)
