"""The conditions of one ``evalctl run --voice --conditions clean,snr=5,telephone``: per condition
its rates and voice figures, and the paired difference of each condition against the first (the
baseline, usually ``clean``), written as ``conditions.json`` and printed.

Every condition is a complete run of the same scenarios in its own sub-folder of the run folder
(``RUN_DIR/<label>/``, the label of :attr:`engine.core.caller.Perturbation.label`), so each has its
own ``run.json`` (its ``perturb`` setting), ``summary.json`` and HTML report; the pairing is
:func:`engine.results.compare.compare_runs` (McNemar / paired permutation tests and the interval
of the difference, ``engine.scoring.stats``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.core.records.intervals import interval_json
from engine.core.records.summary import SummaryRecord
from engine.core.records.voice_run import Share
from engine.results.compare import compare_runs
from engine.results.scoring_stage import load_summary
from engine.scoring.voice_figures import share_text
from engine.util.artifacts import write_json

CONDITIONS_JSON = "conditions.json"


@dataclass(frozen=True)
class Condition:
    """One condition's run: ``label`` (its folder), ``perturb`` (the grammar's text), ``run_dir``."""

    label: str
    perturb: str
    run_dir: Path


def _figures(summary: SummaryRecord) -> dict[str, Any]:
    ov, voice = summary.overall, summary.voice
    body: dict[str, Any] = {
        "success": {"passed": ov.passed, "total": ov.total, "rate": ov.rate, "ci": interval_json(ov.ci)},
        "wer": None,
        "entities": None,
        "latency_ms": None,
    }
    if voice is not None:
        body["wer"] = None if voice.wer is None else voice.wer.to_json()
        body["entities"] = None if voice.entities is None else voice.entities.to_json()
        body["latency_ms"] = voice.latency_ms.to_json()
    return body


def condition_report(conditions: Sequence[Condition]) -> dict[str, Any]:
    """``conditions.json``: ``baseline`` (the first label), per condition ``{label, perturb,
    run_dir, success, wer, entities, latency_ms}`` (``success`` the overall rate with its 95 %
    interval; the voice figures as ``summary.json`` ``voice`` has them) and, for every condition
    after the first, ``paired``: the overall rate's paired difference and the voice changes
    against the baseline (``engine.results.compare``). Raises UsageError when a condition's run
    has no readable summary."""
    base = conditions[0]
    rows = []
    for c in conditions:
        row: dict[str, Any] = {"label": c.label, "perturb": c.perturb, "run_dir": str(c.run_dir)}
        row.update(_figures(load_summary(c.run_dir)))
        if c is not base:
            cmp = compare_runs(base.run_dir, c.run_dir)
            overall = next((p for p in cmp.paired if p.name == "overall"), None)
            row["paired"] = {
                "against": base.label,
                "overall": None if overall is None else overall.to_json(),
                "voice": [v.to_json() for v in cmp.voice],
            }
        rows.append(row)
    return {"baseline": base.label, "conditions": rows}


def write_condition_report(run_dir: Path, conditions: Sequence[Condition]) -> dict[str, Any]:
    """Write ``run_dir/conditions.json`` (:func:`condition_report`); returns it."""
    doc = condition_report(conditions)
    write_json(run_dir / CONDITIONS_JSON, doc)
    return doc


def _pct(share: dict[str, Any] | None, hits: str = "") -> str:
    """A condition's share as the run summary prints it (``share_text``): rate, counts in their
    unit and sessions, interval and what it resamples; the success rate (no unit) as before."""
    if share is None or share.get("rate") is None:
        return "n/a"
    if "unit" in share:
        return share_text(Share.from_json(share, "condition share"), hits)
    ci = share.get("ci")
    interval = "" if ci is None else f" [95% CI {100 * ci['low']:.1f}-{100 * ci['high']:.1f}%]"
    return f"{100 * share['rate']:.1f}%{interval}"


def condition_lines(doc: dict[str, Any]) -> list[str]:
    """The conditions report as text: one line per condition, then its differences against the
    baseline."""
    lines = [f"Conditions ({len(doc['conditions'])}, paired against {doc['baseline']}):"]
    for row in doc["conditions"]:
        lat = row["latency_ms"]
        latency = "n/a" if not lat or lat["p50"] is None else f"p50 {lat['p50']:.0f} ms"
        lines.append(
            f"  {row['label']} ({row['perturb']}): success {_pct(row['success'])}, "
            f"WER {_pct(row['wer'], 'edits')}, entities heard {_pct(row['entities'])}, latency {latency}"
        )
        paired = row.get("paired")
        if not paired:
            continue
        overall = paired["overall"]
        if overall is not None and overall["difference"] is not None:
            lines.append(
                f"    success vs {paired['against']}: {100 * overall['difference']:+.1f} pt, "
                f"p={overall['p_value']:.3g}: {overall['verdict']}"
            )
        for v in paired["voice"]:
            unit = v["unit"]

            def show(x: float, unit: str = unit) -> str:
                return f"{x:+.0f} ms" if unit == "ms" else f"{100 * x:+.1f} pt"

            ci = v["ci"]
            interval = "" if ci is None else f" [95% CI {show(ci['low'])} to {show(ci['high'])}, by scenario]"
            lines.append(
                f"    {v['name']} vs {paired['against']}: {show(v['difference'])}{interval}, "
                f"paired p={v['p_value']:.3g} ({v['scenarios']} scenarios): {v['verdict']}"
            )
    return lines
