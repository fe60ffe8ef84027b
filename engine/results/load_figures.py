"""The figures of one ``evalctl load`` step, read from its finished run, and the ramp's table.

:func:`step_figures` turns a step's ``RunReport`` (its outcomes, and each session's stored
``transcript.jsonl``) into an ``engine.core.records.load.LoadStep``; :func:`load_table` lays a
``LoadRecord`` out as text lines. The agent's reply time is measured from the timestamps the engine
records in the transcript (``t``, seconds since the session's start, taken by the engine when a
frame arrives: never the agent's own stamps): for each caller utterance, the time until the agent's
next utterance (tool calls in between are part of the reply). Voice replies are not timed here yet.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from engine.core.records.error_words import short
from engine.core.records.load import PERCENTILES, LoadRecord, LoadStep
from engine.results.outcomes import Outcome
from engine.results.run_report import RunReport
from engine.results.session_files import scenario_dir
from engine.scoring import stats

_QUANTILES = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0}


def reply_times(transcript: Iterable[Mapping[str, Any]]) -> list[float]:
    """The agent's reply times in seconds: for each user ``utterance`` event, the time to the next
    agent ``utterance`` (a greeting before any caller line is not a reply; a caller line the agent
    never answered gives none)."""
    times: list[float] = []
    asked: float | None = None
    for event in transcript:
        if event.get("type") != "utterance":
            continue
        t = event.get("t")
        if not isinstance(t, (int, float)):
            continue
        if event.get("role") == "user":
            asked = float(t)
        elif event.get("role") == "agent" and asked is not None:
            times.append(max(0.0, float(t) - asked))
            asked = None
    return times


def percentiles_ms(seconds: Sequence[float]) -> dict[str, float | None]:
    """p50/p90/p95/p99 of ``seconds``, in milliseconds rounded to 0.1 ms (linear interpolation,
    numpy's default); every value None when there is none."""
    if not seconds:
        return dict.fromkeys(PERCENTILES)
    import numpy as np

    values = np.percentile(np.asarray(seconds, dtype=float) * 1000.0, list(_QUANTILES.values()))
    return {p: round(float(v), 1) for p, v in zip(_QUANTILES, values, strict=True)}


def _transcript(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return []
    events = []
    for line in text.splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            continue
    return events


def _failure_cause(item: Outcome) -> str:
    """Why a session failed: its stop reason when it did not end cleanly (``agent_error``,
    ``timeout``...), else ``stalled`` (too few agent turns) or ``signals`` (a gating signal)."""
    if not item.clean_exit:
        return item.stop_reason
    return "stalled" if item.stalled else "signals"


def step_figures(report: RunReport, callers: int, wall_s: float, cpu_s: float, run_dir: str) -> LoadStep:
    """The figures of one step whose run is ``report`` (``callers`` sessions at once, ``wall_s`` /
    ``cpu_s`` seconds of wall and of this process's CPU; ``run_dir`` as recorded)."""
    per_scenario: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    counts: Counter[str] = Counter()
    causes: Counter[str] = Counter()
    replies: list[float] = []
    for item in report.outcomes:
        verdict = item.is_successful
        if not item.scored:
            counts["unscored"] += 1
            causes["unscored"] += 1
        elif verdict == "error":
            counts["errors"] += 1
            causes[f"error:{item.verdict_source or item.error_source or 'unknown'}"] += 1
        elif verdict == "N/A":
            counts["not_applicable"] += 1
        else:
            tally = per_scenario[item.scenario_name]
            tally[1] += 1
            if verdict is True:
                tally[0] += 1
                counts["passed"] += 1
            else:
                counts["failed"] += 1
                causes[f"fail:{_failure_cause(item)}"] += 1
        sdir = scenario_dir(report.run_dir, item.scenario_name, item.trial, report.trials)
        replies.extend(reply_times(_transcript(sdir / "transcript.jsonl")))
    sessions = len(report.outcomes)
    judged = counts["passed"] + counts["failed"]
    bad = counts["failed"] + counts["errors"] + counts["unscored"]
    return LoadStep(
        callers=callers,
        sessions=sessions,
        passed=counts["passed"],
        failed=counts["failed"],
        errors=counts["errors"],
        not_applicable=counts["not_applicable"],
        unscored=counts["unscored"],
        rate=counts["passed"] / judged if judged else None,
        ci=stats.rate_interval([(p, t) for p, t in per_scenario.values()]),
        rate_scenarios=sum(1 for _, t in per_scenario.values() if t),
        failure_share=round(bad / sessions, 4) if sessions else 0.0,
        latency_ms=percentiles_ms(replies),
        replies=len(replies),
        errors_by_cause=dict(causes),
        wall_s=round(wall_s, 3),
        cpu_s=round(cpu_s, 3),
        overhead=round(cpu_s / wall_s, 4) if wall_s > 0 else 0.0,
        run_dir=run_dir,
    )


HEADER = (
    "callers",
    "sessions",
    "success (of sessions with a verdict)",
    "95% interval (scenarios as the unit)",
    "fail+err",
    "p50 ms",
    "p90 ms",
    "p95 ms",
    "p99 ms",
)
_MORE = ("failures and errors by cause", "wall s", "overhead")


def _cause(key: str, count: int) -> str:
    """``fail:signals 2``; an error with who failed: ``error:user_simulator (caller simulator) 2``."""
    kind, _, source = key.partition(":")
    return f"{key} ({short(source)}) {count}" if kind == "error" else f"{key} {count}"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def table_rows(record: LoadRecord) -> list[tuple[str, ...]]:
    """One row per step: the :data:`HEADER` columns, then the causes, the wall and the overhead."""
    rows = []
    for step in record.steps:
        rate = (
            "n/a"
            if step.rate is None
            else f"{100 * step.rate:.1f}% ({step.passed}/{step.passed + step.failed} sessions)"
        )
        ci = "-" if step.ci is None else f"{100 * step.ci.low:.1f}-{100 * step.ci.high:.1f}%"
        if step.ci is not None and step.rate_scenarios is not None:
            ci += f" ({step.rate_scenarios} scenario{'' if step.rate_scenarios == 1 else 's'})"
        causes = ", ".join(_cause(k, v) for k, v in sorted(step.errors_by_cause.items())) or "-"
        rows.append(
            (
                str(step.callers),
                str(step.sessions),
                rate,
                ci,
                f"{100 * step.failure_share:.1f}%",
                *(_ms(step.latency_ms.get(p)) for p in PERCENTILES),
                causes,
                f"{step.wall_s:.2f}",
                f"{100 * step.overhead:.1f}%",
            )
        )
    return rows


def left_out(step: LoadStep, shown: int = 5) -> str | None:
    """What a step with fewer sessions than selected scenarios did not run, in words (the first
    ``shown`` names, then how many more); None when it ran every selected scenario."""
    if not step.left_out:
        return None
    names = ", ".join(step.left_out[:shown])
    if len(step.left_out) > shown:
        names += f" and {len(step.left_out) - shown} more"
    count = len(step.left_out)
    return (
        f"{count} selected scenario{'' if count == 1 else 's'} not run (fewer sessions than "
        f"scenarios selected; give --sessions-per-step to run them all): {names}"
    )


def load_table(record: LoadRecord) -> list[str]:
    """The ramp as aligned text lines: a header, one line per step, a line for each step that
    left selected scenarios out, and the stop line when the failure threshold stopped the ramp."""
    header = (*HEADER, *_MORE)
    rows = table_rows(record)
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    ]
    lines.extend(f"{step.callers} callers: {said}" for step in record.steps if (said := left_out(step)))
    if record.stopped_at is not None and record.fail_above is not None:
        step = record.steps[record.stopped_at]
        lines.append(
            f"stopped at {step.callers} callers: failures and errors {100 * step.failure_share:.1f}% "
            f"of {step.sessions} sessions exceed --fail-above {100 * record.fail_above:.1f}%"
        )
    return lines
