"""Run-level aggregation of per-scenario metrics records: ``summary.json`` and ``all_summary.txt``.

Rates are fractions in 0–1 in ``summary.json`` and percentages in the text. Each per-signal rate
has its own denominator and unit: scenarios for the boolean signals, predicates for
``db_state_assertion``, assertions for ``nl_assertion`` (a registered signal's ``unit``,
``engine.core.signals.SignalDef``). The signals are those the results hold: the six, then the
other registered ones in display order, then the domain's diagnostics. Stalled scenarios stay in
the composite denominators (as failures) and are left out of every per-signal rate. ``"N/A"``
composites are left out of the composite denominator and counted separately; so are ``"error"``
results (no verdict: infrastructure failed), which are also left out of every per-signal rate,
their number shown next to each rate. A diagnostic's string value (a label) is not applicable.

The overall (headline) rate, and pass^k, need a verdict-bearing result: one whose task verdict
(every gating signal but ``clean_exit``, or the stalled rule) is measured. When no result of a run
has one (qa scored without a judge: ``judge_passed`` is not applicable and ``clean_exit`` is all
that was measured) every result counts as not applicable there and the text says why
(:func:`headline_not_applicable`); the per-result verdicts stay as they are.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from engine import __version__
from engine.core.records.error_words import error_sources, errors_line, hints_text
from engine.core.records.fidelity import CAUSES
from engine.core.records.intervals import Adaptive
from engine.core.records.metrics import SIGNALS, MetricsRecord, Signal
from engine.core.records.summary import (
    COUNT,
    FailedResult,
    Regenerated,
    SessionTimes,
    SignalRate,
    Stalled,
    StrictTally,
    SummaryRecord,
    Tally,
    UsageTotal,
)
from engine.scoring.composite import diagnostic_verdict, normalize_verdict, plugin_verdict
from engine.scoring.fidelity import replay_note
from engine.scoring.noise import noise_floor, pass_hat_k_record
from engine.scoring.stats import ci_text, rate_interval
from engine.scoring.summary_rows import SummaryRow, summary_row
from engine.scoring.voice_figures import voice_figures, voice_lines
from engine.util.untrusted import one_line


def _rate(passed: float, total: int) -> float | None:
    return passed / total if total else None


def _tally(values: Iterable[tuple[str, Any]], errors: int = 0, read: Any = normalize_verdict) -> Tally:
    """Count verdicts, given as (scenario, value) (``read`` maps a value to True / False / None);
    ``errors`` results with the verdict ``error``, left out before. The interval treats the
    scenario as the unit (``engine.scoring.stats.rate_interval``)."""
    per: dict[str, list[int]] = {}
    na = 0
    for name, value in values:
        verdict = read(value)
        if verdict is None:
            na += 1
            continue
        counts = per.setdefault(name, [0, 0])
        counts[0] += verdict is True
        counts[1] += 1
    passed, total = sum(c[0] for c in per.values()), sum(c[1] for c in per.values())
    ci = rate_interval([(c[0], c[1]) for c in per.values()])
    return Tally(passed, total - passed, na, errors, total, _rate(passed, total), ci)


def _pooled(pairs: Iterable[tuple[str, int, int]]) -> list[tuple[int, int]]:
    """(passed, total) per scenario of (scenario, passed, total) counts."""
    per: dict[str, list[int]] = {}
    for name, passed, total in pairs:
        counts = per.setdefault(name, [0, 0])
        counts[0] += passed
        counts[1] += total
    return [(c[0], c[1]) for c in per.values()]


def _diagnostics(rows: Sequence[SummaryRow]) -> tuple[str, ...]:
    """The diagnostics the rows hold, in first-seen order."""
    return tuple(dict.fromkeys(name for m in rows for name in m.diagnostic_names))


def _signal_names(rows: Sequence[SummaryRow]) -> tuple[str, ...]:
    """The signals the rows hold: the six, then the others in first-seen order."""
    return tuple(dict.fromkeys((*SIGNALS, *(n for m in rows for n in m.signal_names))))


def _signal_rates(rows: Sequence[SummaryRow], unit: str) -> dict[str, SignalRate]:
    live = [m for m in rows if not m.stalled and not m.is_error]
    errors = sum(1 for m in rows if m.is_error)
    gating = {s for m in rows for s in m.success_signals}
    diagnostics = _diagnostics(rows)
    signals = _signal_names(rows)
    reported = {n for m in rows for n in m.reported_signals}
    out: dict[str, SignalRate] = {}
    for name in (*signals, *diagnostics):
        units = {m.units[name] for m in rows if name in m.units}
        if units:
            pairs = _pooled((m.scenario_name, *m.assertions[name]) for m in live if name in m.assertions)
            passed, total = sum(p for p, _ in pairs), sum(t for _, t in pairs)
            this_unit = min(units)
            ci = rate_interval(pairs)
        elif name in diagnostics and name not in gating and _is_count(values := _diagnostic(live, name)):
            out[name] = _count_rate(values, unit, errors)
            continue
        else:
            read = (
                (normalize_verdict if name in SIGNALS else plugin_verdict)
                if name in signals
                else diagnostic_verdict
            )
            held = (m.signal_names if name in signals else m.diagnostic_names for m in live)
            shown = (
                (m.scenario_name, m.values[name])
                for m, names in zip(live, held, strict=True)
                if name in names
            )
            t = _tally(shown, read=read)
            passed, total, this_unit, ci = t.passed, t.total, unit, t.ci
        role = (
            "diagnostic"
            if (name in diagnostics or name in reported) and name not in gating
            else ("gating" if name in gating else "informational")
        )
        out[name] = SignalRate(passed, total, _rate(passed, total), this_unit, role, errors, ci=ci)
    return out


def _diagnostic(rows: Sequence[SummaryRow], name: str) -> list[tuple[str, Any]]:
    """(scenario, value) of diagnostic ``name`` in the rows that hold it."""
    return [(m.scenario_name, m.values[name]) for m in rows if name in m.diagnostic_names]


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _is_count(values: Iterable[tuple[str, Any]]) -> bool:
    """True when a diagnostic's values are numbers (not booleans): counts of findings."""
    return any(_number(v) for _, v in values)


def _count_rate(values: Sequence[tuple[str, Any]], unit: str, errors: int = 0) -> SignalRate:
    """A count diagnostic (findings per result, 0 = clean): ``passed`` / ``rate`` are the clean
    results, ``sum`` / ``max`` the findings; values that are not numbers are not applicable."""
    numbers = [(name, float(v)) for name, v in values if _number(v)]
    counts = [v for _, v in numbers]
    clean = sum(1 for v in counts if v == 0)
    total = sum(counts, 0.0)  # a float, so is_integer() exists (int has it from Python 3.12 only)
    ci = rate_interval(_pooled((name, int(v == 0), 1) for name, v in numbers))
    return SignalRate(
        clean,
        len(counts),
        _rate(clean, len(counts)),
        unit,
        "diagnostic",
        errors,
        kind=COUNT,
        sum=int(total) if total.is_integer() else total,
        max=max(counts, default=0),
        ci=ci,
    )


def _usage(rows: Sequence[SummaryRow]) -> dict[str, UsageTotal]:
    models: dict[str, list[str]] = {}
    sums: dict[str, list[int]] = {}
    for m in rows:
        for role, model, prompt, completion, calls, unreported in m.usage:
            seen = models.setdefault(role, [])
            if model and model not in seen:
                seen.append(model)
            acc = sums.setdefault(role, [0, 0, 0, 0])
            acc[0] += prompt
            acc[1] += completion
            acc[2] += calls
            acc[3] += unreported
    return {role: UsageTotal(tuple(models[role]), *sums[role]) for role in sorted(sums)}


class SummaryTotals:
    """Running totals of a run's results: one small row per (scenario, trial)
    (``engine.scoring.summary_rows.SummaryRow``; adding a key again replaces its row), from which
    :meth:`summary` builds the same summary as :func:`build_summary` of their metrics records."""

    def __init__(self) -> None:
        self._rows: dict[tuple[str, int], SummaryRow] = {}

    def add(self, metrics: MetricsRecord) -> None:
        """Count one scored result (replacing an earlier row of its scenario and trial)."""
        self._rows[(metrics.scenario_name, metrics.trial)] = summary_row(metrics)

    def add_row(self, row: SummaryRow) -> None:
        """Count one result by its row (:func:`engine.scoring.summary_rows.summary_row`), as
        :meth:`add` does with its metrics: how a ``--workers`` run's process counts its workers'."""
        self._rows[row.key] = row

    def __len__(self) -> int:
        return len(self._rows)

    def __iter__(self) -> Iterator[tuple[str, int]]:
        """The (scenario, trial) of every result counted."""
        return iter(list(self._rows))

    def __contains__(self, key: object) -> bool:
        return key in self._rows

    def rows(self) -> list[SummaryRow]:
        """The rows counted so far, sorted by (scenario, trial)."""
        return [self._rows[k] for k in sorted(self._rows)]

    def summary(self, run_info: Mapping[str, Any], run_dir: str = "") -> SummaryRecord:
        """The summary of the results counted so far (see :func:`build_summary`)."""
        return _summarize(self.rows(), run_info, run_dir)


def build_summary(
    metrics: Iterable[MetricsRecord], run_info: Mapping[str, Any], run_dir: str = ""
) -> SummaryRecord:
    """Aggregate complete per-session metrics (one per (scenario, trial)) into the summary.

    ``run_info`` supplies ``trials``, ``min_agent_turns``, ``wall_time_s`` (seconds, every
    invocation's), ``invocations`` (their number), ``scenarios`` (planned names, to list missing
    ones) and ``interrupted`` when known; ``run_dir`` is recorded as given.
    """
    return _summarize(sorted((summary_row(m) for m in metrics), key=lambda r: r.key), run_info, run_dir)


def _summarize(rows: Sequence[SummaryRow], run_info: Mapping[str, Any], run_dir: str) -> SummaryRecord:
    """The summary of ``rows`` sorted by (scenario, trial)."""
    trials = int(run_info.get("trials") or max((m.trial for m in rows), default=1))
    unit = "scenarios" if trials == 1 else "sessions"
    names = sorted({m.scenario_name for m in rows})
    planned = list(run_info.get("scenarios") or [])
    done = {(m.scenario_name, m.trial) for m in rows}
    adaptive = run_info.get("adaptive")
    adaptive = adaptive if isinstance(adaptive, Adaptive) else None
    upto = dict.fromkeys(planned, trials)
    if adaptive is not None:  # every scenario's first two trials, then the ones started on it
        highest = {n: t for n, t in sorted(done)}
        upto = {n: max(min(2, trials), highest.get(n, 0)) for n in planned}
    missing = [
        f"{n}" if trials == 1 else f"{n}#trial_{t}"
        for n in planned
        for t in range(1, upto[n] + 1)
        if (n, t) not in done
    ]
    stalled = [
        m.scenario_name if trials == 1 else f"{m.scenario_name}#trial_{m.trial}" for m in rows if m.stalled
    ]
    durations = [float(m.duration_s) for m in rows]
    failed = [
        FailedResult(
            m.scenario_name,
            m.trial,
            m.failed_signals,
            m.stalled,
            m.stop_reason,
            one_line(m.error) if m.error else m.error,
            m.is_successful,
            m.error_cause,
            m.attribution,
        )
        for m in rows
        if m.is_successful is not True
    ]
    errored = [m for m in rows if m.is_error]
    overall = _tally(((m.scenario_name, m.is_successful) for m in rows if not m.is_error), len(errored))
    task = _tally(((m.scenario_name, m.is_task_successful) for m in rows if not m.is_error), len(errored))
    verdicts = task.total > 0  # some result says something of the task, not only of the hang-up
    if not verdicts and overall.total:
        overall = Tally(0, 0, overall.not_applicable + overall.total, overall.errors, 0, None)
    pass_hat_k = noise = None
    if trials > 1:
        # an "N/A" or "error" trial (nothing gating was measurable, e.g. the judge failed) is left
        # out, as in the composite rate; how many is said beside each value (PassHatK.left_out)
        outcomes: dict[str, list[bool]] = {}
        for m in rows:
            if verdicts and isinstance(m.is_successful, bool):
                outcomes.setdefault(m.scenario_name, []).append(m.is_successful)
        pass_hat_k = pass_hat_k_record(outcomes, trials, len(errored))
        noise = noise_floor(outcomes)
    judge_errors = [m.judge_error for m in rows if m.judge_error]
    first_error = None
    if errored:
        first = errored[0]
        label = first.scenario_name if trials == 1 else f"{first.scenario_name}#trial_{first.trial}"
        first_error = one_line(f"{label}: {first.error_cause}")
    return SummaryRecord(
        run_dir=run_dir,
        evalctl_version=__version__,
        results=len(rows),
        scenarios=len(names),
        trials=trials,
        unit=unit,
        missing=tuple(missing),
        interrupted=bool(run_info.get("interrupted", False)),
        overall=overall,
        # the errors counted as failures, the interval over scenarios as the overall rate's
        strict=StrictTally.of(
            overall, _tally((m.scenario_name, False if m.is_error else m.is_successful) for m in rows).ci
        ),
        task=task,
        signals=_signal_rates(rows, unit),
        stalled=Stalled(len(stalled), tuple(stalled), run_info.get("min_agent_turns")),
        stop_reasons=dict(sorted(Counter(str(m.stop_reason) for m in rows).items())),
        errors=len(errored),
        first_error=first_error,
        judge_errors=len(judge_errors),
        first_judge_error=one_line(judge_errors[0]) if judge_errors else None,
        usage=_usage(rows),
        invocations=int(run_info.get("invocations") or 1),
        wall_time_s=run_info.get("wall_time_s"),
        session_time_s=SessionTimes(
            sum(durations), _rate(sum(durations), len(durations)) or 0.0, max(durations, default=0.0)
        ),
        failed=tuple(failed),
        pass_hat_k=pass_hat_k,
        noise=noise,
        adaptive=adaptive,
        attribution=_attribution(rows),
        regenerated=_regenerated(rows),
        caller_note=run_info.get("caller_note") or _caller_note(rows),
        voice=voice_figures([m.voice for m in rows if m.voice is not None]),
    )


def _attribution(rows: Sequence[SummaryRow]) -> dict[str, int]:
    """FAILs by attributed cause, every cause listed (``engine.core.records.fidelity.CAUSES``)."""
    counts = Counter(m.attribution.cause for m in rows if m.attribution is not None)
    return {cause: counts.get(cause, 0) for cause in CAUSES}


def _caller_note(rows: Sequence[SummaryRow]) -> str | None:
    """The replay caller's note read from the results (a merge or a rescore, which have no run
    settings at hand): every result's caller is ``replay``; the ones where it said nothing had no
    gold caller words. None for any other caller, or records before version 4."""
    names = {m.scenario_name: m for m in rows}
    if not names or any(m.user_backend != "replay" or m.caller_turns is None for m in rows):
        return None
    mute = sum(1 for m in names.values() if m.caller_turns == 0)
    return replay_note(len(names), mute)


def _regenerated(rows: Sequence[SummaryRow]) -> Regenerated:
    """The results a regeneration replaced attempts of, and why."""
    reasons = Counter(r for m in rows for r in m.replaced)
    return Regenerated(
        sum(1 for m in rows if m.replaced), sum(len(m.replaced) for m in rows), dict(sorted(reasons.items()))
    )


def _pct(rate: float | None) -> str:
    return "n/a" if rate is None else f"{100 * rate:.1f}%"


#: The signals a judge grades: not applicable in a run without one.
_JUDGED = (Signal.JUDGE_PASSED, Signal.NL_ASSERTION)


def missing_text(n: int) -> str:
    """``1 result missing`` / ``3 results missing``: the planned results a summary lacks."""
    return f"{n} result{'' if n == 1 else 's'} missing"


def headline_not_applicable(summary: SummaryRecord) -> str | None:
    """Why the overall rate is not applicable, in one line (``no verdict-bearing signal was
    measured (judge_passed needs a judge: --judge-model); clean_exit alone is no verdict``); None
    when it has a value or the run has no result that is not an error."""
    if summary.overall.rate is not None or not summary.overall.not_applicable:
        return None
    gating = [(name, s.total) for name, s in summary.signals.items() if s.role == "gating"]
    unmeasured = [name for name, total in gating if not total]
    measured = [name for name, total in gating if total]
    why = "no verdict-bearing signal was measured"
    judged = [name for name in unmeasured if name in _JUDGED]
    if judged and "judge" not in summary.usage:
        why += f" ({', '.join(judged)} needs a judge: --judge-model)"
    elif unmeasured:
        why += f" ({', '.join(unmeasured)} not applicable)"
    if measured:
        why += f"; {', '.join(measured)} alone is no verdict"
    return why


def headline_lines(summary: SummaryRecord) -> list[str]:
    """The three headline rate lines: ``Overall Success Rate: ...``, ``Strict Success Rate ...``,
    ``Task Success Rate ...``, each with its counts and 95 % interval, and each marked
    ``INCOMPLETE`` when results are missing (an interrupted run: every rate is over part of it)."""
    unit = summary.unit
    ov, task = summary.overall, summary.task
    na = f"; {ov.not_applicable} N/A" if ov.not_applicable else ""
    why = headline_not_applicable(summary)
    strict = summary.strict_tally
    incomplete = f" - INCOMPLETE: {missing_text(len(summary.missing))}" if summary.missing else ""
    return [
        f"Overall Success Rate: {_pct(ov.rate)} ({ov.passed}/{ov.total} {unit}{na}{_errors(ov.errors)})"
        + ci_text(ov.ci)
        + (f": {why}" if why else "")
        + incomplete,
        f"Strict Success Rate (errors count as failures): {_pct(strict.rate)} ({strict.passed}/"
        f"{strict.total} {unit}{na}; {strict.errors} error{'' if strict.errors == 1 else 's'})"
        + ci_text(strict.ci)
        + incomplete,
        f"Task Success Rate (excl. clean_exit): {_pct(task.rate)} ({task.passed}/{task.total} {unit}"
        f"{_left_out(task.errors)}){ci_text(task.ci)}{incomplete}",
    ]


def outcome_lines(summary: SummaryRecord, voice_cache: str | None = None, note: bool = True) -> list[str]:
    """What ``evalctl run`` prints above its report table and ``evalctl report`` prints the same:
    the headline rates, the voice block (:func:`engine.scoring.voice_figures.voice_lines`, with
    ``voice_cache``, this process's voice cache line, indented at its end), then the caller's
    note (``note`` False leaves it out: printed once already), the failures by cause and the
    regenerated sessions. Each line is one line whatever a side sent."""
    lines = headline_lines(summary)
    voice = voice_lines(summary.voice)
    if voice_cache:
        voice.append(f"  {voice_cache}")
    lines += voice
    lines += [line for line in trust_lines(summary) if note or not line.startswith("NOTE: ")]
    return [one_line(line, None) for line in lines]


def _scenarios_text(summary: SummaryRecord) -> str:
    """``24`` (the scenarios with a result), or ``24 of 50 selected (26 with no result yet)`` when
    the missing results include every trial of some scenarios (an interrupted run: the count alone
    read as if the run had selected 24). Not for ``--trials auto``, whose scenarios are planned
    fewer trials than ``trials``."""
    if not summary.missing or summary.adaptive is not None:
        return str(summary.scenarios)
    per_name = Counter(key.split("#trial_")[0] if summary.trials > 1 else key for key in summary.missing)
    none_yet = sum(1 for count in per_name.values() if count >= summary.trials)
    if not none_yet:
        return str(summary.scenarios)
    return f"{summary.scenarios} of {summary.scenarios + none_yet} selected ({none_yet} with no result yet)"


def render_summary_text(summary: SummaryRecord, title: str = "") -> str:
    """The ``all_summary.txt`` text (headline lines first, as the reference harness prints them)."""
    unit = summary.unit
    lines = [
        f"evalctl run summary{': ' + title if title else ''}",
        *headline_lines(summary),
        f"Scenarios: {_scenarios_text(summary)}, trials: {summary.trials}, results: {summary.results}",
    ]
    if summary.errors:
        lines.append(
            f"ERRORS: {errors_line(summary.errors, summary.failed)}, left out of every rate; "
            f"{hints_text(error_sources(summary.failed))}; first: {summary.first_error}"
        )
    if summary.missing:
        lines.append(f"Missing results: {len(summary.missing)} (resume the run to complete them)")
    if summary.interrupted:
        lines.append("Run was interrupted before all scenarios finished.")
    lines.append("Per-signal pass rates (stalled scenarios left out; each with its own denominator):")
    for name, s in summary.signals.items():
        out = _left_out(s.errors_left_out)
        if s.total == 0:
            lines.append(f"  {name}: n/a (0 {s.unit}{out}) [{s.role}]")
        elif s.kind == COUNT:
            lines.append(
                f"  {name}: {s.sum:g} found in {s.total - s.passed}/{s.total} {s.unit}{out}, "
                f"{_pct(s.rate)} clean{ci_text(s.ci)} [{s.role}]"
            )
        else:
            lines.append(
                f"  {name}: {_pct(s.rate)} ({s.passed}/{s.total} {s.unit}{out}){ci_text(s.ci)} [{s.role}]"
            )
    lines.extend(voice_lines(summary.voice))
    st = summary.stalled
    if st.count:
        lines.append(
            f"WARNING: {st.count} stalled {unit} (fewer than {st.min_agent_turns} agent turns, "
            "or than the gold's) "
            f"counted as failures and left out of per-signal rates: {', '.join(st.scenarios)}"
        )
    if summary.pass_hat_k is not None:
        lines.append(pass_hat_k_line(summary))
    lines.extend(noise_lines(summary))
    lines.append("Stop reasons: " + ", ".join(f"{k} {v}" for k, v in summary.stop_reasons.items()))
    lines.extend(trust_lines(summary))
    if summary.judge_errors:
        lines.append(
            f"Judge errors (never an agent failure: the verdict error where a judge signal gates, "
            f"else not applicable): {summary.judge_errors}; first: {summary.first_judge_error}"
        )
    lines.append("Token usage:" if summary.usage else "Token usage: none (no model calls)")
    for role, u in summary.usage.items():
        models = ", ".join(u.models) or "?"
        tokens = (
            "unknown tokens (not reported)"
            if u.unreported and u.unreported >= u.calls
            else f"{u.prompt_tokens} prompt + {u.completion_tokens} completion tokens"
            + (f" ({u.unreported} calls' tokens unknown)" if u.unreported else "")
        )
        lines.append(f"  {role} ({models}): {tokens}, {u.calls} calls")
    wall = summary.wall_time_s
    st_s = summary.session_time_s
    over = f" over {summary.invocations} invocations" if summary.invocations > 1 else ""
    lines.append(
        f"Wall time: {'n/a' if wall is None else f'{wall:.1f} s'}{over} (sessions: total {st_s.total:.1f} s, "
        f"mean {st_s.mean:.1f} s, max {st_s.max:.1f} s)"
    )
    if summary.failed:
        lines.append(f"Not successful ({len(summary.failed)}):")
        for f in summary.failed:
            trial = f" trial {f.trial}" if summary.trials > 1 else ""
            lines.append(f"  {f.scenario}{trial}: {failure_reason(f)}")
    # every line stays one line whatever a side sent (a model name must not forge a rate line)
    return "\n".join(one_line(line, None) for line in lines) + "\n"


def trust_lines(summary: SummaryRecord) -> list[str]:
    """The caller's note, the FAILs by cause and the regenerated sessions (each when there is one)."""
    lines = []
    if summary.caller_note:
        lines.append(f"NOTE: {summary.caller_note}")
    causes = {c: n for c, n in (summary.attribution or {}).items() if n}
    if causes:
        lines.append("Failures by cause: " + ", ".join(f"{c} {n}" for c, n in causes.items()))
    regen = summary.regenerated
    if regen is not None and regen.sessions:
        why = ", ".join(f"{r}: {n}" for r, n in (regen.reasons or {}).items())
        lines.append(
            f"regenerated: {regen.sessions} session(s), {regen.attempts} attempt(s) replaced ({why}); "
            "their callers broke their instructions (kept under .regenerated/)"
        )
    return lines


def pass_hat_k_line(summary: SummaryRecord) -> str:
    """``pass^k over 3 trials: pass^1 = 0.800 [95% CI 70.0-88.0%] (50 scenarios), ...``, with the
    error trials left out."""
    phk = summary.pass_hat_k
    if phk is None:
        return ""
    counts, cis = phk.scenarios or {}, phk.ci or {}
    ks = ", ".join(
        f"pass^{k} = {v:.3f}{ci_text(cis.get(k))} ({counts.get(k, '?')} scenario"
        f"{'' if counts.get(k) == 1 else 's'})"
        for k, v in phk.overall.items()
    )
    ks = ks or "n/a (no trial had a verdict)"
    return f"pass^k over {summary.trials} trials: {ks}{_left_out(phk.errors_left_out)}"


def noise_lines(summary: SummaryRecord) -> list[str]:
    """The noise floor (runs with trials) and what an adaptive run spent, one line each."""
    lines = []
    nf = summary.noise
    if nf is not None:
        share = "n/a" if nf.flaky_share is None else f"{100 * nf.flaky_share:.1f}%"
        mdd = nf.minimum_detectable_difference
        lines.append(
            f"Noise floor: {nf.flaky}/{nf.scenarios} scenarios flaky ({share}: their verdicts disagree "
            f"across trials); minimum detectable difference at 80% power: "
            + ("n/a" if mdd is None else f"~{100 * mdd:.1f} pt")
            + " (between this run and another over the same scenarios and trials)"
            + (f"; flaky: {', '.join(nf.flaky_scenarios)}" if nf.flaky_scenarios else "")
        )
    ad = summary.adaptive
    if ad is not None:
        width = "n/a" if ad.width is None else f"{100 * ad.width:.1f} pt"
        lines.append(
            f"Adaptive trials: {ad.sessions} sessions in {ad.rounds} extra round(s), up to {ad.max_trials} "
            f"trials per scenario; overall interval width {width} (target {100 * ad.target_width:.1f} pt); "
            f"stopped: {ad.stopped}"
        )
    return lines


def _left_out(errors: int) -> str:
    return f"; {errors} error{'' if errors == 1 else 's'} left out" if errors else ""


def _errors(errors: int) -> str:
    """The headline's error count, always shown: ``; 0 errors``, ``; 2 errors left out``."""
    return _left_out(errors) or "; 0 errors"


def failure_reason(failed: FailedResult) -> str:
    """Why one result is not successful, in one line: ``ERROR <source>: <message>`` for a result
    without a verdict, else the failed signals, ``stalled``, and the stop reason with the session's
    error message when a side failed."""
    if failed.error_cause is not None:
        return one_line(f"ERROR {failed.error_cause}", None)
    parts = list(failed.failed_signals)
    if failed.stalled:
        parts.append("stalled")
    if failed.error:
        parts.append(f"stop={failed.stop_reason}: {failed.error}")
    elif failed.stop_reason not in (None, "exit", "transfer"):
        parts.append(f"stop={failed.stop_reason}")
    return one_line(", ".join(str(p) for p in parts) or "N/A", None)
