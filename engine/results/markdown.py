"""A run as a short Markdown summary fit for a pull-request comment (``evalctl report RUN --markdown``).

It holds the headline rates (overall, strict, task) with their 95 % intervals and denominators,
the per-signal rates, the verdicts that flipped against a baseline run (``--baseline RUN``, read
with :func:`engine.results.compare.compare_runs`), and the most frequent failure causes (the failed
gating signals, ``stalled``, and the sources of ``error`` verdicts), counted over the run's
unsuccessful results. Everything comes from ``summary.json`` (and the baseline comparison); nothing
is rescored.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from engine.core.records.error_words import errors_line
from engine.core.records.summary import SummaryRecord
from engine.results.compare import Change, compare_runs, delta_text, rate_text
from engine.results.provenance import read_run_record
from engine.results.scoring_stage import load_summary
from engine.scoring.summary import failure_reason

#: How many flips and failure causes are listed (the rest are counted).
LISTED = 10


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def failure_causes(summary: SummaryRecord) -> Counter[str]:
    """Each cause with how many unsuccessful results it applies to: a failed gating signal,
    ``stalled``, ``error: SOURCE`` for a result without a verdict."""
    causes: Counter[str] = Counter()
    for f in summary.failed:
        if f.error_cause is not None:
            causes[f"error: {f.error_cause.source}"] += 1
            continue
        causes.update(f.failed_signals)
        if f.stalled:
            causes["stalled"] += 1
        if not f.failed_signals and not f.stalled:
            causes[failure_reason(f)] += 1
    return causes


def _flip_line(c: Change, trials: bool) -> str:
    name = c.scenario + (f" trial {c.trial}" if trials else "")
    why = "-" if c.after is True else ", ".join(c.failed_after) or "-"  # what fails now, if anything
    return f"| `{_cell(name)}` | {_verdict(c.before)} → {_verdict(c.after)} | {_cell(why)} |"


def _verdict(v: bool | str) -> str:
    return ("pass" if v else "fail") if isinstance(v, bool) else str(v)


def markdown_summary(run_dir: Path, baseline: Path | None = None) -> str:
    """The Markdown text of ``run_dir`` (ending with a newline), with the flips against
    ``baseline`` when given. Raises UsageError when a run has no readable ``summary.json`` or
    results."""
    s = load_summary(run_dir)
    record = read_run_record(run_dir)
    spec = Path(record.spec_dir).name if record is not None and record.spec_dir else Path(s.run_dir).name
    st = s.strict_tally
    lines = [
        f"### evalctl: {st.passed}/{st.total} {s.unit} successful ({_cell(spec)})",
        "",
        "| rate | value (passed/total) [95% CI] |",
        "| --- | --- |",
        f"| Overall success | {_cell(rate_text(s.overall))} |",
        f"| Strict success (errors count as failures) | {_cell(rate_text(st))} |",
        f"| Task success (excl. clean_exit) | {_cell(rate_text(s.task))} |",
    ]
    lines += [
        f"| `{_cell(name)}` | {_cell(rate_text(r))} |"
        for name, r in s.signals.items()
        if r.total or r.errors_left_out
    ]
    notes = []
    if s.errors:
        notes.append(f"verdict error: {errors_line(s.errors, s.failed)}")
    if s.stalled.count:
        notes.append(f"{s.stalled.count} stalled (fewer than {s.stalled.min_agent_turns} agent turns)")
    if s.missing:
        notes.append(f"{len(s.missing)} planned result(s) missing")
    if notes:
        lines += ["", "; ".join(notes) + "."]
    if baseline is not None:
        c = compare_runs(baseline, run_dir)
        trials = s.trials > 1
        overall = next(r for r in c.headline if r.name == "overall")
        delta = delta_text(overall.delta)
        lines += [
            "",
            f"**Against the baseline** `{_cell(str(baseline))}`: {len(c.pass_to_fail)} pass → fail, "
            f"{len(c.fail_to_pass)} fail → pass, {len(c.other_changes)} other changes; "
            f"overall {delta}"
            + ("" if c.comparable else " (the runs are not comparable: see `evalctl compare`)"),
        ]
        if c.notes:  # what else differs between the runs (agent, models, settings...), as compare says
            lines += ["", f"The runs differ: {_cell('; '.join(c.notes))}."]
        flips = [*c.pass_to_fail, *c.fail_to_pass, *c.other_changes]
        if flips:
            lines += ["", "| result | verdict | failing signals |", "| --- | --- | --- |"]
            lines += [_flip_line(f, trials) for f in flips[:LISTED]]
            if len(flips) > LISTED:
                lines.append(f"| … {len(flips) - LISTED} more | | |")
    causes = failure_causes(s)
    if causes:
        lines += ["", f"**Top failure causes** (over {len(s.failed)} unsuccessful):", ""]
        lines += [f"- `{_cell(cause)}`: {n}" for cause, n in causes.most_common(LISTED)]
    return "\n".join(lines) + "\n"
