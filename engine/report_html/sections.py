"""The report's static sections as HTML text: headline rates, charts, per-signal rates, stop
reasons and errors, tokens and cost per role, provenance. Every value from the run passes through
:func:`h` (``html.escape`` with quotes), so nothing a side sent can become markup."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from html import escape
from typing import Any

from engine.core.records.intervals import Interval
from engine.core.records.run import RunRecord
from engine.core.records.summary import COUNT, SignalRate, SummaryRecord, Tally
from engine.report_html.charts import Bar, Dot, rate_bars, scatter
from engine.report_html.collect import ReportModel
from engine.results.costs import RunCost, money
from engine.results.unreadable import records_text
from engine.scoring.summary import headline_not_applicable, missing_text
from engine.scoring.voice_figures import voice_lines
from engine.util.untrusted import one_line


def h(value: Any) -> str:
    """``value`` as HTML text (escaped, quotes too)."""
    return escape(str(value), quote=True)


def _pct(rate: float | None) -> str:
    return "n/a" if rate is None else f"{100 * rate:.1f}%"


def _ci(ci: Interval | None) -> str:
    """``95% CI 44.2-71.0%``; ``no interval`` without one."""
    return "no interval" if ci is None else f"95% CI {100 * ci.low:.1f}-{100 * ci.high:.1f}%"


def _table(head: Iterable[str], rows: Iterable[Iterable[Any]], cls: str = "") -> str:
    out = [f'<table class="{h(cls)}"><thead><tr>' if cls else "<table><thead><tr>"]
    out.extend(f"<th>{h(c)}</th>" for c in head)
    out.append("</tr></thead><tbody>")
    for row in rows:
        out.append("<tr>" + "".join(f"<td>{h(c)}</td>" for c in row) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _card(label: str, value: str, detail: str, cls: str = "") -> str:
    return (
        f'<div class="card {h(cls)}"><div class="label">{h(label)}</div>'
        f'<div class="value">{h(value)}</div><div class="detail">{h(detail)}</div></div>'
    )


def _tally_detail(t: Tally, unit: str) -> str:
    na = f", +{t.not_applicable} n/a" if t.not_applicable else ""
    errors = f", {t.errors} error(s) left out" if t.errors else ""
    return f"{t.passed}/{t.total} {unit}{na}{errors}; {_ci(t.ci)}"


def headline(model: ReportModel) -> str:
    s = model.summary
    ov = s.overall
    cls = "good" if ov.rate == 1 else "bad" if ov.rate is not None and ov.rate < 1 else ""
    cards = [
        _card("Overall success", _pct(ov.rate), _tally_detail(ov, s.unit), cls),
        _card(
            "Strict success (errors count as failures)",
            _pct(s.strict_tally.rate),
            f"{s.strict_tally.passed}/{s.strict_tally.total} {s.unit}, {s.strict_tally.errors} error(s); "
            f"{_ci(s.strict_tally.ci)}",
        ),
        _card("Task success (excl. clean_exit)", _pct(s.task.rate), _tally_detail(s.task, s.unit)),
        _card("Results", str(s.results), f"{s.scenarios} scenarios × {s.trials} trial(s)"),
        _card("Errors", str(s.errors), f"{s.judge_errors} judge errors, {s.stalled.count} stalled"),
    ]
    if s.pass_hat_k is not None and s.pass_hat_k.overall:
        k, v = list(s.pass_hat_k.overall.items())[-1]
        n = (s.pass_hat_k.scenarios or {}).get(k, s.scenarios)
        ci = (s.pass_hat_k.ci or {}).get(k)
        cards.append(_card(f"pass^{k}", f"{v:.3f}", f"over {s.trials} trials, {n} scenarios; {_ci(ci)}"))
    if s.noise is not None:
        mdd = s.noise.minimum_detectable_difference
        share = "n/a" if s.noise.flaky_share is None else f"{100 * s.noise.flaky_share:.1f}%"
        cards.append(
            _card(
                "Flaky scenarios",
                f"{s.noise.flaky}/{s.noise.scenarios}",
                f"{share}; detectable difference ~{'n/a' if mdd is None else f'{100 * mdd:.1f} pt'}",
            )
        )
    if s.adaptive is not None:
        cards.append(_card("Adaptive trials", f"{s.adaptive.sessions} sessions", s.adaptive.stopped))
    if s.voice is not None and s.voice.callers:  # a caller voice or perturbation (--perturb, caller:)
        listed = ", ".join(f"{name}: {n}" for name, n in s.voice.callers.items())
        cards.append(_card("Callers", str(len(s.voice.callers)), f"sessions per caller: {listed}"))
    if model.unreadable:
        cards.append(_card("Unreadable records", str(len(model.unreadable)), "left out: see below", "bad"))
    wall = "n/a" if s.wall_time_s is None else f"{s.wall_time_s:.1f} s"
    cards.append(_card("Wall time", wall, f"sessions: mean {s.session_time_s.mean:.1f} s"))
    tokens = f"{model.cost.tokens:,} tokens"
    if model.cost.priced:
        cards.append(_card("Cost", money(model.cost.cost), tokens + _unpriced(model.cost.unpriced)))
    else:
        cards.append(_card("Tokens", f"{model.cost.tokens:,}", "no --prices given: no cost"))
    warn = []
    if (why := headline_not_applicable(s)) is not None:
        warn.append(f"Overall success is not applicable: {why}.")
    if s.missing:
        warn.append(f"INCOMPLETE: {missing_text(len(s.missing))} (resume the run to complete it).")
    if s.interrupted:
        warn.append("The run was interrupted before all scenarios finished.")
    if model.unreadable:
        listed = "\n".join(f"{u.path}: {u.reason}" for u in model.unreadable[:20])
        more = f"\n... and {len(model.unreadable) - 20} more" if len(model.unreadable) > 20 else ""
        warn.append(
            f"{records_text(len(model.unreadable))}: left out of the results below (the summary's rates "
            f"were computed when they were written):\n{listed}{more}"
        )
    notes = "".join(f'<p class="warn">{h(w)}</p>' for w in warn)
    return f'<section id="headline"><div class="cards">{"".join(cards)}</div>{notes}{voice(s)}</section>'


def voice(summary: SummaryRecord) -> str:
    """The run's voice figures (latency, time to first audio, turn-taking, WER, entities, the
    gate's turns) as the lines ``evalctl run`` prints them
    (``engine.scoring.voice_figures.voice_lines``); empty for a text run."""
    lines = voice_lines(summary.voice)
    if not lines:
        return ""
    items = "".join(f"<li>{h(one_line(line.strip(), None))}</li>" for line in lines[1:])
    return f'<div id="voice-figures"><h3>{h(lines[0].rstrip(":"))}</h3><ul>{items}</ul></div>'


def _unpriced(models: Iterable[str]) -> str:
    names = list(models)
    return f"; unpriced: {', '.join(names)}" if names else ""


def charts(model: ReportModel) -> str:
    s = model.summary
    signal_bars = [
        Bar(f"{name} (clean)" if r.kind == COUNT else name, r.passed, r.total - r.passed, 0, r.unit, r.role)
        for name, r in s.signals.items()
    ]
    what = "scenario group" if model.grouped else "domain"
    group_bars = [Bar(g.name, g.passed, g.failed, g.not_applicable, s.unit) for g in model.groups]
    dots = [
        Dot(
            r["i"],
            f"{r['name']}" + (f" trial {r['trial']}" if s.trials > 1 else ""),
            r["dur"],
            r["turns"],
            r["verdict"],
        )
        for r in model.rows
    ]
    return (
        '<section id="charts"><h2>Charts</h2><div class="charts">'
        f"<figure><figcaption>Pass rate per signal (stalled results left out)</figcaption>"
        f"{rate_bars(signal_bars, 'pass rate per signal')}</figure>"
        f"<figure><figcaption>Success per {h(what)} (composite verdict)</figcaption>"
        f"{rate_bars(group_bars, 'success per ' + what)}</figure>"
        '<figure class="wide"><figcaption>Agent turns and duration per result '
        "(click a dot to open it)</figcaption>"
        f"{scatter(dots, 'agent turns against session duration')}</figure>"
        "</div></section>"
    )


def _signal_label(name: str, r: SignalRate) -> str:
    """A count diagnostic's rate is its clean share: say so, with the findings."""
    return f"{name} (clean; {r.sum:g} found)" if r.kind == COUNT else name


def _signal_counts(r: SignalRate) -> str:
    out = f", {r.errors_left_out} error(s) left out" if r.errors_left_out else ""
    return f"{r.passed}/{r.total} {r.unit}{out}"


def trust(summary: SummaryRecord) -> str:
    """The caller's note, the failures by cause and the regenerated sessions (as the summary says)."""
    out = ""
    if summary.caller_note:
        out += f'<p class="warn">{h(one_line(summary.caller_note, 500))}</p>'
    causes = [[c, n] for c, n in (summary.attribution or {}).items() if n]
    if causes:
        out += "<h3>Failures by cause</h3>" + _table(("cause", "failures"), causes, "causes")
    regen = summary.regenerated
    if regen is not None and regen.sessions:
        why = ", ".join(f"{r}: {n}" for r, n in (regen.reasons or {}).items())
        out += (
            f'<p class="warn">regenerated: {regen.sessions} session(s), {regen.attempts} attempt(s) '
            f"replaced ({h(why)}): their callers broke their instructions</p>"
        )
    return out


def rates(summary: SummaryRecord) -> str:
    rows = [
        [_signal_label(name, r), _pct(r.rate), _ci(r.ci), _signal_counts(r), r.role]
        for name, r in summary.signals.items()
    ]
    stops = [[reason, n] for reason, n in summary.stop_reasons.items()]
    extra = ""
    if summary.stalled.count:
        extra += (
            f'<p class="warn">{summary.stalled.count} stalled (fewer than '
            f"{h(summary.stalled.min_agent_turns)} agent turns): counted as failures, "
            "left out of the signal rates: "
            f"{h(', '.join(summary.stalled.scenarios))}</p>"
        )
    errors = [f for f in summary.failed if f.error]
    if errors:
        trials = summary.trials > 1
        failures = [
            [f.scenario + (f" trial {f.trial}" if trials else ""), str(f.stop_reason), one_line(f.error, 300)]
            for f in errors
        ]
        extra += "<h3>Session errors</h3>" + _table(("result", "stop reason", "error"), failures, "errors")
    extra += trust(summary)
    if summary.judge_errors:
        first = one_line(summary.first_judge_error or "", 500)
        extra += (
            f'<p class="warn">{summary.judge_errors} judge errors (recorded as n/a); first: {h(first)}</p>'
        )
    return (
        '<section id="rates"><h2>Signals</h2><div class="cols"><div>'
        + _table(("signal", "rate", "95% CI", "passed / total", "role"), rows, "rates")
        + "</div><div>"
        + _table(("stop reason", "results"), stops, "stops")
        + f"</div></div>{extra}</section>"
    )


def usage(cost: RunCost) -> str:
    if not cost.roles:
        return '<section id="usage"><h2>Tokens and cost</h2><p>No model usage recorded.</p></section>'
    head = ["role", "models", "prompt tokens", "completion tokens", "requests"]
    if cost.priced:
        head.append("cost")
    rows = []
    for role, rc in cost.roles.items():
        row: list[Any] = [role, ", ".join(rc.models) or "?", *rc.token_cells(), f"{rc.calls:,}"]
        if cost.priced:
            row.append(money(rc.cost) + _unpriced(rc.unpriced))
        rows.append(row)
    note = (
        f"<p>Prices from {h(cost.source)} (per million tokens); total {h(money(cost.cost))}"
        f"{h(_unpriced(cost.unpriced))}. Cost per scenario: the table below and each scenario's detail.</p>"
        if cost.priced
        else "<p>Give <code>--prices FILE</code> for the cost per role and per scenario.</p>"
    )
    return f'<section id="usage"><h2>Tokens and cost</h2>{_table(head, rows, "usage")}{note}</section>'


def _digest(hashes: Mapping[str, str]) -> str:
    text = "\n".join(f"{k} {v}" for k, v in sorted(hashes.items()))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _hash_list(title: str, hashes: Mapping[str, str]) -> str:
    rows = [[path, digest[:16]] for path, digest in sorted(hashes.items())]
    return (
        f"<details><summary>{h(title)}: {len(hashes)} files, digest {_digest(hashes)}</summary>"
        f"{_table(('file', 'sha256 (first 16)'), rows, 'hashes')}</details>"
    )


def provenance(run: RunRecord | None, summary: SummaryRecord) -> str:
    if run is None:
        return (
            '<section id="provenance"><h2>Provenance</h2><p class="warn">No readable run.json.</p></section>'
        )
    git = "n/a" if run.git is None else run.git.commit[:12] + (" (dirty)" if run.git.dirty else "")
    facts: list[list[Any]] = [
        ["evalctl", run.evalctl_version],
        ["git commit", git],
        ["python", run.python],
        ["created", run.created_at],
        ["spec dir", run.spec_dir or "n/a"],
        ["data root", run.data_root or "n/a"],
        ["models", ", ".join(f"{k}: {v}" for k, v in (run.models or {}).items()) or "n/a"],
        ["trials", run.trials if run.trials is not None else summary.trials],
        ["invocations", len(run.invocations)],
        ["command", "evalctl " + " ".join(run.argv) if run.argv else "n/a"],
    ]
    if run.data_root_changed_from_pins:
        facts.append(["data changed from pins", ", ".join(run.data_root_changed_from_pins)])
    facts.extend(["hash note", note] for note in run.hash_notes)
    options = json.dumps(dict(run.args), indent=2, ensure_ascii=False, default=str)
    return (
        '<section id="provenance"><h2>Provenance</h2>'
        + _table(("", ""), [[k, one_line(v, 2000)] for k, v in facts], "facts")
        + _hash_list("spec files", run.spec_files)
        + _hash_list("templates", run.templates)
        + _hash_list("data root files", run.data_root_files)
        + f"<details><summary>options</summary><pre>{h(options)}</pre></details></section>"
    )
