"""What the HTML report shows, read from a run directory: the summary, the provenance, one index
row per (scenario, trial) and one detail per (scenario, trial), all plain JSON values.

Reads ``summary.json`` (:class:`SummaryRecord`), ``run.json`` (:class:`RunRecord`), every
complete ``metrics.json`` (:class:`MetricsRecord`), ``judge_result.json`` (:class:`JudgeRecord`),
``transcript.jsonl`` (:mod:`.transcript`) and each result's ``scenario_config/metadata.json``
(its ``group`` and ``description``). DB differences come from ``engine.results.diff.explain``, worded by
``engine.results.diff.db_lines`` and followed by ``engine.results.diff.agent_hash_lines`` (an
agent's own DB hash that differs from the engine's): exactly what ``evalctl diff`` prints.

Bounds: each result's detail gets a share of :data:`DETAIL_BUDGET` characters (at least
:data:`MIN_SHARE`, at most :data:`MAX_SHARE`); text beyond it is cut to previews and noted, so a
500-scenario run stays well under 20 MB whatever the sides said.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from engine.core.records.judge import JudgeRecord
from engine.core.records.metrics import MetricsRecord
from engine.core.records.run import RunRecord
from engine.core.records.summary import SummaryRecord
from engine.report_html.transcript import Budget, chat_entries
from engine.report_html.voice import voice_detail
from engine.results.costs import PriceTable, RunCost, run_costs
from engine.results.diff import agent_hash_lines, caller_lines, db_lines, error_line, explain
from engine.results.provenance import read_run_record
from engine.results.scoring_stage import load_summary, scored_dirs
from engine.results.unreadable import Unreadable, records_text, watching
from engine.scoring.passk import failed_every_trial as failed_every_trial_names
from engine.util.artifacts import read_json, read_record
from engine.util.errors import UsageError
from engine.util.untrusted import one_line

DETAIL_BUDGET = 15_000_000
MIN_SHARE = 32_000
MAX_SHARE = 1_000_000
#: Most DB difference lines shown per result (the rest: ``evalctl diff``).
MAX_DB_LINES = 200

#: Raw artifacts a result links to, in the order shown: (file under the result folder, label).
ARTIFACTS = (
    ("metrics.json", "metrics.json"),
    ("transcript.jsonl", "transcript.jsonl"),
    ("tool_calls.json", "tool_calls.json"),
    ("actions.json", "actions.json"),
    ("final_db.json", "final_db.json"),
    ("expected_db.json", "expected_db.json"),
    ("final_user_db.json", "final_user_db.json"),
    ("final_scenario_db_hash.txt", "final_scenario_db_hash.txt"),
    ("judge_result.json", "judge_result.json"),
    ("scenario_config/metadata.json", "metadata.json"),
    ("scenario_config/agent_prompt.md", "agent_prompt.md"),
    ("scenario_config/user_prompt.md", "user_prompt.md"),
    ("scenario_config/tools.json", "tools.json"),
)


@dataclass(frozen=True)
class GroupRate:
    """Composite verdicts of one scenario group: passed, failed, N/A."""

    name: str
    passed: int
    failed: int
    not_applicable: int


@dataclass(frozen=True)
class ReportModel:
    """Everything the page shows; ``rows`` / ``details`` are JSON values, one per result, in the
    same (scenario, trial) order; ``grouped`` says whether the domain declared its groups."""

    run_dir: str
    summary: SummaryRecord
    run: RunRecord | None
    cost: RunCost
    rows: list[dict[str, Any]]
    details: list[dict[str, Any]]
    groups: list[GroupRate]
    grouped: bool
    #: The record files of the run that could not be read (left out of ``rows``; warned of).
    unreadable: tuple[Unreadable, ...] = ()
    #: What the scenario table is narrowed to (``--failed-every-trial``), None: every result.
    only: str | None = None


def natural_key(text: str) -> tuple[Any, ...]:
    """Sort key that orders numbers by value: ``flow 2.x`` before ``flow 10.x``."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", text))


def _verdict(value: bool | str) -> str:
    """``pass``, ``fail``, ``error`` (no verdict: the caller simulator, the judge or infrastructure
    failed) or ``n/a``."""
    return "pass" if value is True else "fail" if value is False else "error" if value == "error" else "n/a"


def _metadata(sdir: Path) -> tuple[str | None, str]:
    """``group`` and ``description`` of a result's metadata.json (None / "" when absent: runs
    older than grouping, or a damaged file)."""
    try:
        meta = read_json(sdir / "scenario_config" / "metadata.json")
    except (OSError, ValueError):
        return None, ""
    if not isinstance(meta, dict):
        return None, ""
    group = meta["group"] if isinstance(meta.get("group"), str) else None
    description = meta["description"] if isinstance(meta.get("description"), str) else ""
    return group, description


def _judge(sdir: Path) -> tuple[JudgeRecord | None, str | None]:
    path = sdir / "judge_result.json"
    if not path.is_file():
        return None, None
    try:
        return JudgeRecord.from_json(read_record(path)), None
    except (OSError, ValueError) as err:  # RecordError is a ValueError
        return None, f"judge_result.json unreadable: {err}"


def _value_text(value: Any) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.2f}"
    return one_line(value, 80)


def _is_count(m: MetricsRecord, name: str) -> bool:
    """A diagnostic that counts findings (a number, not gating; 0 = clean), as the summary
    reads it (``engine.scoring.summary``)."""
    value = m.signals.value(name)
    return (
        name not in m.signal_names
        and name not in m.success_signals
        and isinstance(value, int | float)
        and not isinstance(value, bool)
    )


def _is_bad(m: MetricsRecord, name: str) -> bool:
    """The signal failed (False, a rate under 1) or the count diagnostic found something."""
    value = m.signals.value(name)
    if isinstance(value, bool):
        return value is False
    if not isinstance(value, int | float):
        return False
    return value > 0 if _is_count(m, name) else value < 1


def _signals(m: MetricsRecord) -> list[list[Any]]:
    """``[name, value text, status, gating]`` per signal then per diagnostic; status is the
    breakdown's: passed, failed, n/a (not applicable) or excluded (computed, not gating)."""
    bd = m.success_breakdown
    out = []
    for name in (*m.signal_names, *m.diagnostic_names):
        status = (
            "passed"
            if name in bd.passed
            else "failed"
            if name in bd.failed
            else "n/a"
            if name in bd.not_applicable
            else "excluded"
        )
        value = m.signals.value(name)
        text = f"{value:g} found" if _is_count(m, name) else _value_text(value)
        out.append([name, text, status, name in m.success_signals])
    return out


def _href(path: Path, base: Path) -> str:
    """A relative URL from the report's folder to ``path``, percent-encoded (a name can never
    become a scheme such as ``javascript:``: ``:`` is encoded)."""
    rel = os.path.relpath(path, base).replace(os.sep, "/")
    return "./" + quote(rel, safe="/") if not rel.startswith("../") else quote(rel, safe="/")


def _judge_detail(judge: JudgeRecord | None, note: str | None, budget: Budget) -> dict[str, Any] | None:
    if judge is None:
        return None if note is None else {"note": note}
    claims = [
        {
            "assertion": budget.keep(one_line(v.get("assertion", ""), 2000)),
            "passed": v.get("passed") if isinstance(v.get("passed"), bool) else None,
            "reason": budget.keep(str(v.get("reason", ""))),
        }
        for v in judge.nl_assertion_verdicts
    ]
    return {
        "model": one_line(judge.model, 200),
        "score": judge.score,
        "passed": judge.passed,
        "threshold": judge.threshold,
        "reason": budget.keep(judge.reason),
        "error": None if judge.error is None else budget.keep(judge.error),
        "claims": claims,
    }


def trust_head(d: Any) -> list[str]:
    """The lines shown above the DB differences: a FAIL's cause, an ``error`` verdict's (who failed
    and what helps, as ``evalctl diff`` says) and the caller's findings."""
    head = [f"cause: {d.attribution['cause']}: {d.attribution['evidence']}"] if d.attribution else []
    if d.error_cause:
        head.append(error_line(d))
    return head + caller_lines(d)


def _detail(
    sdir: Path, m: MetricsRecord, description: str, base: Path, cost: Mapping[str, Any] | None, share: int
) -> dict[str, Any]:
    budget = Budget(share)
    d = explain(sdir, m)
    lines = [one_line(line, 2000) for line in (*db_lines(d), *agent_hash_lines(d))]
    if len(lines) > MAX_DB_LINES:
        lines = [
            *lines[:MAX_DB_LINES],
            f"... {len(lines) - MAX_DB_LINES} more lines: evalctl diff shows them all",
        ]
    judge, judge_note = _judge(sdir)
    return {
        "description": budget.keep(one_line(description, 2000)),
        "signals": _signals(m),
        "db": budget.keep(lines),
        "db_failed": m.signals.db_state_match is False,
        "trust": budget.keep([one_line(line, 2000) for line in trust_head(d)]),
        "gold": None if d.gold_path is None else one_line(d.gold_path, 2000),
        "unmatched": budget.keep([one_line(line, 2000) for line in d.unmatched_reference[:MAX_DB_LINES]]),
        "judge": _judge_detail(judge, judge_note, budget),
        "judge_error": None if m.signals.judge_error is None else one_line(m.signals.judge_error, 2000),
        "usage": cost,
        "error": None if m.error is None else budget.keep(m.error),
        "chat": chat_entries(sdir / "transcript.jsonl", budget),
        "voice": voice_detail(sdir, lambda path: _href(path, base)),
        "files": [[label, _href(sdir / f, base)] for f, label in ARTIFACTS if (sdir / f).is_file()],
    }


def collect(
    run_dir: Path, out_path: Path, prices: PriceTable | None = None, *, failed_every_trial: bool = False
) -> ReportModel:
    """Read ``run_dir`` for a report written to ``out_path`` (links are relative to its folder);
    ``failed_every_trial``: only the results of the scenarios that failed in every trial with a
    verdict (``engine.scoring.passk.failed_every_trial``) are in ``rows`` / ``details``.
    Raises UsageError when ``run_dir`` is not a finished run (see
    ``engine.results.scoring_stage.load_summary``) or has no readable result at all (its
    unreadable records are noted: ``engine.results.unreadable``)."""
    run_dir = Path(run_dir)
    with watching() as found:
        summary = load_summary(run_dir)
        scored = scored_dirs(run_dir)
        run = read_run_record(run_dir)
    if not scored and len(found):
        raise UsageError(f"{run_dir}: no readable results ({records_text(len(found))}, warned above)")
    cost = run_costs([m for _, m in scored], prices)
    only = None
    if failed_every_trial:
        outcomes: dict[str, list[bool | str]] = {}
        for _, m in scored:
            outcomes.setdefault(m.scenario_name, []).append(m.is_successful)
        kept = set(failed_every_trial_names(outcomes))
        scored = [(sdir, m) for sdir, m in scored if m.scenario_name in kept]
        only = f"only the {len(kept)} of {len(outcomes)} scenarios that failed in every trial"
    costs = {(c.scenario, c.trial): c.to_json() for c in cost.scenarios}
    base = Path(out_path).resolve().parent
    share = max(MIN_SHARE, min(MAX_SHARE, DETAIL_BUDGET // max(1, len(scored))))
    rows: list[dict[str, Any]] = []
    details: list[dict[str, Any]] = []
    groups: dict[str, list[int]] = {}
    grouped = False
    for i, (sdir, m) in enumerate(scored):
        group, description = _metadata(sdir)
        grouped = grouped or group is not None
        group = one_line(group if group is not None else m.domain, 100)
        verdict = _verdict(m.is_successful)
        tally = groups.setdefault(group, [0, 0, 0])
        tally[("pass", "fail", "n/a").index(verdict if verdict != "error" else "n/a")] += 1  # left out
        c = costs[(m.scenario_name, m.trial)]
        rows.append(
            {
                "i": i,
                "name": m.scenario_name,
                "trial": m.trial,
                "id": one_line(m.record_id, 100),
                "group": group,
                "verdict": verdict,
                "failed": list(m.success_breakdown.failed),
                "bad": [n for n in (*m.signal_names, *m.diagnostic_names) if _is_bad(m, n)],
                "stop": str(m.stop_reason),
                "stalled": m.stalled,
                "error": None if m.error is None else one_line(m.error, 300),
                "turns": m.agent_turns,
                "uturns": m.user_turns,
                "calls": m.num_tool_calls,
                "dur": round(m.duration_s, 3),
                "cost": c["cost"],
                "tokens": sum(r["prompt_tokens"] + r["completion_tokens"] for r in c["roles"].values()),
            }
        )
        details.append(_detail(sdir, m, description, base, c, share))
    rates = [GroupRate(name, *t) for name, t in sorted(groups.items(), key=lambda kv: natural_key(kv[0]))]
    return ReportModel(str(run_dir), summary, run, cost, rows, details, rates, grouped, found.items, only)
