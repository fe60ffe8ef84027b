"""Run-level aggregation of per-scenario ``metrics.json`` dicts: ``summary.json`` and ``all_summary.txt``.

Rates are fractions in 0–1 in ``summary.json`` and percentages in the text. Each per-signal rate
has its own denominator and unit: scenarios for the boolean signals, predicates for
``db_state_assertion``, assertions for ``nl_assertion``. Stalled scenarios stay in the composite
denominators (as failures) and are left out of every per-signal rate. ``"N/A"`` composites are left
out of the composite denominator and counted separately.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from engine.model import SIGNALS
from engine.scoring.composite import normalize_verdict
from engine.scoring.passk import pass_hat_k_table
from engine.untrusted import bounded_count, one_line

BOOLEAN_SIGNALS = ("is_action_match", "db_state_match", "judge_passed", "clean_exit")


def _diagnostics(rows: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """Names of the domain diagnostics the rows hold (breakdown names that are not signals), in
    first-seen order."""
    seen: dict[str, None] = {}
    for m in rows:
        breakdown = m.get("success_breakdown") or {}
        for group in ("passed", "failed", "not_applicable", "excluded"):
            for name in breakdown.get(group) or []:
                if name not in SIGNALS:
                    seen.setdefault(name)
    return tuple(seen)


def _rate(passed: int, total: int) -> float | None:
    return passed / total if total else None


def _tally(values: Iterable[Any]) -> dict[str, Any]:
    counts = Counter(normalize_verdict(v) for v in values)
    passed, failed, na = counts[True], counts[False], counts[None]
    return {
        "passed": passed,
        "failed": failed,
        "not_applicable": na,
        "total": passed + failed,
        "rate": _rate(passed, passed + failed),
    }


def _signal_rates(rows: Sequence[Mapping[str, Any]], unit: str) -> dict[str, dict[str, Any]]:
    live = [m for m in rows if not m.get("stalled")]
    gating = {s for m in rows for s in m.get("success_signals", [])}
    out: dict[str, dict[str, Any]] = {}
    diagnostics = _diagnostics(rows)
    for name in (*SIGNALS, *diagnostics):
        if name == "db_state_assertion":
            verdicts = [v for m in live for v in m.get("db_state_assertion_verdicts") or []]
            passed, total, this_unit = (
                sum(1 for v in verdicts if v.get("passed")),
                len(verdicts),
                "predicates",
            )
        elif name == "nl_assertion":
            verdicts = [v for m in live for v in m.get("nl_assertion_verdicts") or []]
            passed, total, this_unit = (
                sum(1 for v in verdicts if v.get("passed")),
                len(verdicts),
                "assertions",
            )
        elif name in diagnostics and name not in gating and _is_count(m.get(name) for m in live):
            out[name] = _count_rates([m.get(name) for m in live], unit)
            continue
        else:
            t = _tally(m.get(name) for m in live)
            passed, total, this_unit = t["passed"], t["total"], unit
        role = (
            "diagnostic"
            if name in diagnostics and name not in gating
            else ("gating" if name in gating else "informational")
        )
        out[name] = {
            "passed": passed,
            "total": total,
            "rate": _rate(passed, total),
            "unit": this_unit,
            "role": role,
        }
    return out


def _is_count(values: Iterable[Any]) -> bool:
    """True when a diagnostic's values are numbers (not booleans): counts of findings."""
    return any(isinstance(v, int | float) and not isinstance(v, bool) for v in values)


def _count_rates(values: Sequence[Any], unit: str) -> dict[str, Any]:
    """A count diagnostic (findings per result, 0 = clean): ``passed`` / ``rate`` are the clean
    results, ``sum`` / ``max`` the findings; values that are not numbers are not applicable."""
    counts = [float(v) for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    clean = sum(1 for v in counts if v == 0)
    total = sum(counts)
    return {
        "passed": clean,
        "total": len(counts),
        "rate": _rate(clean, len(counts)),
        "unit": unit,
        "role": "diagnostic",
        "kind": "count",
        "sum": int(total) if total.is_integer() else total,
        "max": max(counts, default=0),
    }


def _usage(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    usage: dict[str, dict[str, Any]] = {}
    for m in rows:
        for role, u in (m.get("usage") or {}).items():
            acc = usage.setdefault(
                role, {"models": [], "prompt_tokens": 0, "completion_tokens": 0, "calls": 0}
            )
            model = one_line(u.get("model"), 200) if u.get("model") else None  # a side's text
            if model and model not in acc["models"]:
                acc["models"].append(model)
            for key in ("prompt_tokens", "completion_tokens", "calls"):
                acc[key] += bounded_count(u.get(key))  # a side's number (also from an older metrics.json)
    return dict(sorted(usage.items()))


def build_summary(metrics: Sequence[Mapping[str, Any]], run_info: Mapping[str, Any]) -> dict[str, Any]:
    """Aggregate complete per-session metrics (one per (scenario, trial)) into the summary dict.

    ``run_info`` supplies ``trials``, ``min_agent_turns``, ``wall_time_s`` (seconds),
    ``scenarios`` (planned names, to list missing ones) and ``interrupted`` when known.
    """
    rows = sorted(metrics, key=lambda m: (m["scenario_name"], m.get("trial", 1)))
    trials = int(run_info.get("trials") or max((m.get("trial", 1) for m in rows), default=1))
    unit = "scenarios" if trials == 1 else "sessions"
    names = sorted({m["scenario_name"] for m in rows})
    planned = list(run_info.get("scenarios") or [])
    done = {(m["scenario_name"], m.get("trial", 1)) for m in rows}
    missing = [
        f"{n}" if trials == 1 else f"{n}#trial_{t}"
        for n in planned
        for t in range(1, trials + 1)
        if (n, t) not in done
    ]
    stalled = [
        m["scenario_name"] if trials == 1 else f"{m['scenario_name']}#trial_{m.get('trial', 1)}"
        for m in rows
        if m.get("stalled")
    ]
    durations = [float(m.get("duration_s") or 0.0) for m in rows]
    failed = [
        {
            "scenario": m["scenario_name"],
            "trial": m.get("trial", 1),
            "failed_signals": list(m.get("success_breakdown", {}).get("failed", [])),
            "stalled": bool(m.get("stalled")),
            "stop_reason": m.get("stop_reason"),
            "error": one_line(m["error"]) if m.get("error") else m.get("error"),
        }
        for m in rows
        if m.get("is_successful") is not True
    ]
    summary: dict[str, Any] = {
        "results": len(rows),
        "scenarios": len(names),
        "trials": trials,
        "unit": unit,
        "missing": missing,
        "interrupted": bool(run_info.get("interrupted", False)),
        "overall": _tally(m.get("is_successful") for m in rows),
        "task": _tally(m.get("is_task_successful") for m in rows),
        "signals": _signal_rates(rows, unit),
        "stalled": {
            "count": len(stalled),
            "scenarios": stalled,
            "min_agent_turns": run_info.get("min_agent_turns"),
        },
        "stop_reasons": dict(sorted(Counter(str(m.get("stop_reason")) for m in rows).items())),
        "errors": sum(1 for m in rows if m.get("error")),
        "judge_errors": sum(1 for m in rows if m.get("judge_error")),
        "first_judge_error": next((one_line(m["judge_error"]) for m in rows if m.get("judge_error")), None),
        "usage": _usage(rows),
        "wall_time_s": run_info.get("wall_time_s"),
        "session_time_s": {
            "total": sum(durations),
            "mean": _rate(sum(durations), len(durations)) or 0.0,
            "max": max(durations, default=0.0),
        },
        "failed": failed,
    }
    if trials > 1:
        # an "N/A" trial (nothing gating was measurable, e.g. the judge failed) is left out, as in
        # the composite rate: it must not count as the agent's failure
        outcomes: dict[str, list[bool]] = {}
        for m in rows:
            verdict = m.get("is_successful")
            if isinstance(verdict, bool):
                outcomes.setdefault(m["scenario_name"], []).append(verdict)
        summary["pass_hat_k"] = pass_hat_k_table(outcomes, trials)
    return summary


def _pct(t: Mapping[str, Any]) -> str:
    return "n/a" if t.get("rate") is None else f"{100 * t['rate']:.1f}%"


def render_summary_text(summary: Mapping[str, Any], title: str = "") -> str:
    """The ``all_summary.txt`` text (headline lines first, as the reference harness prints them)."""
    unit = summary["unit"]
    ov, task = summary["overall"], summary["task"]
    na = f"; {ov['not_applicable']} N/A" if ov["not_applicable"] else ""
    lines = [
        f"evalctl run summary{': ' + title if title else ''}",
        f"Overall Success Rate: {_pct(ov)} ({ov['passed']}/{ov['total']} {unit}{na})"
        + (f" - INCOMPLETE: {len(summary['missing'])} results missing" if summary["missing"] else ""),
        f"Task Success Rate (excl. clean_exit): {_pct(task)} ({task['passed']}/{task['total']} {unit})",
        f"Scenarios: {summary['scenarios']}, trials: {summary['trials']}, results: {summary['results']}",
    ]
    if summary["missing"]:
        lines.append(f"Missing results: {len(summary['missing'])} (resume the run to complete them)")
    if summary["interrupted"]:
        lines.append("Run was interrupted before all scenarios finished.")
    lines.append("Per-signal pass rates (stalled scenarios left out; each with its own denominator):")
    for name, s in summary["signals"].items():
        if s["total"] == 0:
            lines.append(f"  {name}: n/a (0 {s['unit']}) [{s['role']}]")
        elif s.get("kind") == "count":
            lines.append(
                f"  {name}: {s['sum']:g} found in {s['total'] - s['passed']}/{s['total']} {s['unit']}, "
                f"{_pct(s)} clean [{s['role']}]"
            )
        else:
            lines.append(f"  {name}: {_pct(s)} ({s['passed']}/{s['total']} {s['unit']}) [{s['role']}]")
    st = summary["stalled"]
    if st["count"]:
        lines.append(
            f"WARNING: {st['count']} stalled {unit} (fewer than {st['min_agent_turns']} agent turns) "
            f"counted as failures and left out of per-signal rates: {', '.join(st['scenarios'])}"
        )
    if "pass_hat_k" in summary:
        ks = ", ".join(f"pass^{k} = {v:.3f}" for k, v in summary["pass_hat_k"]["overall"].items())
        ks = ks or "n/a (no trial had a verdict)"
        lines.append(f"pass^k over {summary['trials']} trials: {ks}")
    lines.append("Stop reasons: " + ", ".join(f"{k} {v}" for k, v in summary["stop_reasons"].items()))
    if summary["errors"]:
        lines.append(f"Sessions with an error: {summary['errors']}")
    if summary.get("judge_errors"):
        lines.append(
            f"Judge errors (recorded as N/A, not as agent failures): {summary['judge_errors']}; "
            f"first: {summary['first_judge_error']}"
        )
    lines.append("Token usage:" if summary["usage"] else "Token usage: none (no model calls)")
    for role, u in summary["usage"].items():
        models = ", ".join(u["models"]) or "?"
        lines.append(
            f"  {role} ({models}): {u['prompt_tokens']} prompt + {u['completion_tokens']} "
            f"completion tokens, {u['calls']} calls"
        )
    wall = summary.get("wall_time_s")
    st_s = summary["session_time_s"]
    lines.append(
        f"Wall time: {'n/a' if wall is None else f'{wall:.1f} s'} (sessions: total {st_s['total']:.1f} s, "
        f"mean {st_s['mean']:.1f} s, max {st_s['max']:.1f} s)"
    )
    if summary["failed"]:
        lines.append(f"Not successful ({len(summary['failed'])}):")
        for f in summary["failed"]:
            trial = f" trial {f['trial']}" if summary["trials"] > 1 else ""
            lines.append(f"  {f['scenario']}{trial}: {failure_reason(f)}")
    # every line stays one line whatever a side sent (a model name must not forge a rate line)
    return "\n".join(one_line(line, None) for line in lines) + "\n"


def failure_reason(failed: Mapping[str, Any]) -> str:
    """Why one result is not successful, in one line: the failed signals, ``stalled``, and the
    stop reason with the session's error message when a side failed."""
    parts = list(failed.get("failed_signals") or [])
    if failed.get("stalled"):
        parts.append("stalled")
    if failed.get("error"):
        parts.append(f"stop={failed.get('stop_reason')}: {failed['error']}")
    elif failed.get("stop_reason") not in (None, "exit", "transfer"):
        parts.append(f"stop={failed['stop_reason']}")
    return one_line(", ".join(str(p) for p in parts) or "N/A", None)
