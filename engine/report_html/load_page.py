"""``load.html``: one self-contained page of an ``evalctl load`` ramp (no script, no external file).

Two inline SVG charts from ``load.json`` (``engine.core.records.load.LoadRecord``): the verdicts
of each step as stacked bars (``engine.report_html.charts.rate_bars``: the rate over the sessions
with a verdict, as the table's; errors and unscored sessions drawn apart, never as failures) and
the agent's reply time percentiles (p50, p95, p99, in ms) against the callers of each step, then
the table of
``engine.results.load_figures.load_table``.
"""

from __future__ import annotations

from html import escape

from engine.core.records.load import LoadRecord
from engine.report_html.charts import Bar, _ticks, rate_bars
from engine.results.load_figures import load_table

_W, _H, _PAD = 520, 220, 48
_LINES = (("p50", "#1565c0"), ("p95", "#ef6c00"), ("p99", "#c62828"))


def latency_chart(record: LoadRecord) -> str:
    """Reply time (y, ms) per step (x, labelled by its callers), one polyline per percentile."""
    steps = record.steps
    values = [v for s in steps for p, _ in _LINES if (v := s.latency_ms.get(p)) is not None]
    ticks = _ticks(max(values, default=0.0))
    top = ticks[-1] or 1.0
    inner_w, inner_h = _W - 2 * _PAD, _H - 2 * _PAD

    def x(i: int) -> float:
        return _PAD + (inner_w * i / (len(steps) - 1) if len(steps) > 1 else inner_w / 2)

    def y(v: float) -> float:
        return _H - _PAD - inner_h * v / top

    title = "agent reply time by callers (ms)"
    size = f'viewBox="0 0 {_W} {_H}" width="{_W}" height="{_H}"'
    out = [f'<svg class="chart" role="img" {size} aria-label="{title}">']
    out.append(f"<title>{title}</title>")
    for t in ticks:
        out.append(f'<line x1="{_PAD}" x2="{_W - _PAD}" y1="{y(t):.1f}" y2="{y(t):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{_PAD - 6}" y="{y(t) + 4:.1f}" text-anchor="end">{t:g}</text>')
    for i, step in enumerate(steps):
        out.append(f'<text x="{x(i):.1f}" y="{_H - _PAD + 18}" text-anchor="middle">{step.callers}</text>')
    for n, (name, colour) in enumerate(_LINES):
        points = [(x(i), y(v)) for i, s in enumerate(steps) if (v := s.latency_ms.get(name)) is not None]
        if points:
            path = " ".join(f"{px:.1f},{py:.1f}" for px, py in points)
            out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{path}"/>')
            out.extend(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3" fill="{colour}"/>' for px, py in points)
        out.append(f'<text x="{_W - _PAD + 4}" y="{_PAD + 14 * n}" fill="{colour}">{name}</text>')
    out.append(f'<text x="{_W / 2}" y="{_H - 8}" text-anchor="middle">callers at once</text></svg>')
    return "".join(out)


def load_page(record: LoadRecord) -> str:
    """The whole page as HTML text."""
    # as the table: the rate over the sessions with a verdict; errors and unscored results apart
    bars = [
        Bar(
            f"{s.callers} callers",
            s.passed,
            s.failed,
            s.not_applicable,
            "sessions",
            f"of {s.sessions} sessions" + (f"; {s.unscored} not scored" if s.unscored else ""),
            s.errors + s.unscored,
        )
        for s in record.steps
    ]
    table = "\n".join(load_table(record))
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>evalctl load: {escape(record.spec_dir)}</title>"
        "<style>body{font-family:sans-serif;margin:2em}.track{fill:#eee}svg text{font-size:12px}"
        "pre{font-size:12px}</style></head><body>"
        f"<h1>evalctl load</h1><p>{escape(record.spec_dir)}, agent {escape(record.agent)}, "
        f"caller {escape(record.user)}</p>"
        f"<h2>Verdicts per step</h2>{rate_bars(bars, 'verdicts per step')}"
        f"<h2>Reply time</h2>{latency_chart(record)}"
        f"<h2>Steps</h2><pre>{escape(table)}</pre></body></html>\n"
    )
