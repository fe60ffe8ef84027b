"""``evalctl compare RUN_A RUN_B --html``: the comparison as one self-contained page (no script:
its Content-Security-Policy allows none). Every value from the runs is escaped."""

from __future__ import annotations

from pathlib import Path

from engine.report_html.page import asset, document, write_page
from engine.report_html.sections import h
from engine.results.compare import Change, Comparison, RateChange, delta_text, rate_text
from engine.results.costs import money
from engine.results.paired import PairedRate


def _changes(title: str, changes: tuple[Change, ...], trials: bool, cls: str) -> str:
    if not changes:
        return f"<h3>{h(title)}: none</h3>"
    items = []
    for c in changes:
        failed = c.failed_after if c.after is False else c.failed_before
        why = f' <span class="muted">[{h(", ".join(failed))}]</span>' if failed else ""
        verdicts = f" ({h(c.before)} → {h(c.after)})" if cls == "other" else ""
        trial = f" trial {c.trial}" if trials else ""
        items.append(f"<li>{h(c.scenario)}{h(trial)}{verdicts}{why}</li>")
    return f'<h3>{h(title)} ({len(changes)})</h3><ul class="flips {cls}">{"".join(items)}</ul>'


def _rate_row(r: RateChange) -> str:
    delta = r.delta
    cls = "" if delta is None or abs(delta) < 1e-12 else ("up" if delta > 0 else "down")
    return (
        f"<tr><td>{h(r.name)}</td><td>{h(rate_text(r.before))}</td><td>{h(rate_text(r.after))}</td>"
        f'<td class="{cls}">{h(delta_text(delta))}</td></tr>'
    )


def _paired_row(p: PairedRate) -> str:
    cls = {"better": "up", "worse": "down"}.get(p.verdict, "")
    diff = "n/a" if p.difference is None else f"{100 * p.difference:+.1f} pt"
    if p.ci is not None:
        ci = f"{100 * p.ci.low:+.1f} to {100 * p.ci.high:+.1f} pt"
    else:
        ci = "-" if p.difference is None else "n too small"
    pv = "-" if p.p_value is None else f"{p.p_value:.3g}"
    disc = f" ({p.discordant[0]} vs {p.discordant[1]})" if p.discordant else ""
    return (
        f"<tr><td>{h(p.name)}</td><td>{p.scenarios}</td><td>{h(diff)}</td><td>{h(ci)}</td>"
        f'<td>{h(p.test)}{h(disc)}</td><td>{h(pv)}</td><td class="{cls}">{h(p.verdict)}</td></tr>'
    )


def _significance(c: Comparison) -> str:
    rows = "".join(_paired_row(p) for p in c.paired if p.scenarios)
    noise = ""
    if c.noise is not None:
        noise = (
            f"<p>Changed scenarios: {len(c.noise.consistent)} consistent across trials "
            f"({h(', '.join(c.noise.consistent) or 'none')}), {len(c.noise.within_noise)} within their "
            f"own noise ({h(', '.join(c.noise.within_noise) or 'none')}).</p>"
        )
    return (
        '<section id="significance"><h2>Is the difference real?</h2><table class="paired"><thead><tr>'
        "<th>rate</th><th>paired scenarios</th><th>B − A</th><th>95% CI</th><th>test</th><th>p</th>"
        f"<th>verdict</th></tr></thead><tbody>{rows}</tbody></table>{noise}</section>"
    )


def _voice(c: Comparison) -> str:
    """The voice measures paired (voice runs), under each run's caller condition."""
    if not c.voice:
        return ""
    tone = {"regression": "down", "improvement": "up"}
    rows = "".join(
        f'<tr><td>{h(v.text())}</td><td class="{tone.get(v.verdict, "")}">{h(v.verdict)}</td></tr>'
        for v in c.voice
    )
    label = ""
    if c.condition_a or c.condition_b:
        label = f"<p>Caller: A {h(c.condition_a or 'text run')} → B {h(c.condition_b or 'text run')}</p>"
    return (
        f'<section id="voice"><h2>Voice (paired over the scenarios both runs measured)</h2>{label}'
        f'<table class="paired"><tbody>{rows}</tbody></table></section>'
    )


def _comparable(c: Comparison) -> str:
    if c.comparable:
        head = '<p class="ok-box">Comparable: the same spec, template and data hashes.</p>'
    else:
        head = '<p class="warn">NOT comparable: the inputs differ (below).</p>'
    rows = "".join(
        f"<tr><td>{h(d.kind)}</td><td>{h(d.path)}</td><td>{h(d.change)}</td></tr>" for d in c.differences
    )
    table = (
        f"<table><thead><tr><th>input</th><th>file</th><th>change</th></tr></thead><tbody>{rows}</tbody></table>"
        if rows
        else ""
    )
    warnings = "".join(f'<p class="warn">{h(w)}</p>' for w in c.warnings)
    notes = "".join(f"<li>{h(n)}</li>" for n in c.notes)
    return head + warnings + table + (f"<ul>{notes}</ul>" if notes else "")


def _usage(c: Comparison) -> str:
    roles = list(dict.fromkeys([*c.cost_a.roles, *c.cost_b.roles]))
    if not roles:
        return ""
    priced = c.cost_a.priced
    rows = []
    for role in roles:
        cells = [h(role)]
        for cost in (c.cost_a, c.cost_b):
            rc = cost.roles.get(role)
            cells.append("-" if rc is None else f"{rc.prompt_tokens:,} + {rc.completion_tokens:,}")
            if priced:
                cells.append("-" if rc is None else h(money(rc.cost)))
        rows.append("<tr>" + "".join(f"<td>{x}</td>" for x in cells) + "</tr>")
    head = ["role", "A tokens (prompt + completion)", *(["A cost"] if priced else [])]
    head += ["B tokens", *(["B cost"] if priced else [])]
    total = f"<p>Total cost: A {h(money(c.cost_a.cost))}, B {h(money(c.cost_b.cost))}.</p>" if priced else ""
    return (
        "<h2>Tokens and cost</h2><table><thead><tr>"
        + "".join(f"<th>{h(x)}</th>" for x in head)
        + f"</tr></thead><tbody>{''.join(rows)}</tbody></table>{total}"
    )


def render(c: Comparison) -> str:
    """The comparison page."""
    trials = any(ch.trial != 1 for ch in (*c.pass_to_fail, *c.fail_to_pass, *c.other_changes))
    only = "".join(
        f"<p>Only in {which} ({len(names)}): {h(', '.join(names))}</p>"
        for which, names in (("A", c.only_in_a), ("B", c.only_in_b))
        if names
    )
    body = [
        f'<section id="comparable"><h2>Inputs</h2>{_comparable(c)}</section>',
        '<section id="rates"><h2>Rates (A → B)</h2><table class="rates"><thead><tr><th>rate</th><th>A</th>'
        "<th>B</th><th>change</th></tr></thead><tbody>"
        + "".join(_rate_row(r) for r in (*c.headline, *c.signals))
        + "</tbody></table></section>",
        _significance(c),
        _voice(c),
        '<section id="flips"><h2>Verdicts that changed</h2>'
        + _changes("pass → fail", c.pass_to_fail, trials, "down")
        + _changes("fail → pass", c.fail_to_pass, trials, "up")
        + (_changes("other changes", c.other_changes, trials, "other") if c.other_changes else "")
        + f"<p>Unchanged: {c.unchanged_pass} passing, {c.unchanged_fail} failing.</p>{only}</section>",
        f'<section id="usage">{_usage(c)}</section>',
    ]
    css = asset("report.css") + asset("compare.css")
    return document("evalctl compare", f"A: {c.run_a}  →  B: {c.run_b}", body, None, css)


def write_compare(c: Comparison, out: Path) -> int:
    """Write the page of ``c`` to ``out`` (atomically); returns its size in bytes. Raises
    OutputError when ``out`` cannot be written."""
    data = render(c).encode("utf-8")
    write_page(Path(out), data)
    return len(data)
