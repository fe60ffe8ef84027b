"""The report's charts as inline SVG text (no script, no external file): every label passes
through :func:`html.escape`, every number is formatted here.

- :func:`rate_bars` — one horizontal bar per rate (per signal, per group), with its count;
- :func:`scatter` — one dot per result: duration (x, seconds) against agent turns (y), coloured
  by verdict; a dot carries ``data-i`` (the result's index) so the page can open it on a click.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

PASS, FAIL, NA, ERROR = "#2e7d32", "#c62828", "#9e9e9e", "#ef8f00"
_LABEL_W, _BAR_W, _TEXT_W, _ROW_H = 160, 240, 180, 22


@dataclass(frozen=True)
class Bar:
    """One bar: ``label``, ``passed`` / ``failed`` / ``not_applicable`` counts (stacked), the
    ``unit`` after the count (``scenarios``, ``predicates``...), a ``note`` shown in its title and
    ``errors``: results without a verdict, drawn after the N/A ones and never in the rate's
    denominator (``passed + failed``)."""

    label: str
    passed: int
    failed: int
    not_applicable: int = 0
    unit: str = ""
    note: str = ""
    errors: int = 0

    @property
    def total(self) -> int:
        return self.passed + self.failed


def _pct(passed: int, total: int) -> str:
    return "n/a" if total == 0 else f"{100 * passed / total:.1f}%"


def rate_bars(bars: Sequence[Bar], title: str) -> str:
    """Horizontal bars: the pass share of ``passed + failed`` in green, failures in red, N/A in
    grey and errors in amber after them; right of each bar its rate and ``passed/total unit``."""
    height = _ROW_H * len(bars) + 8
    width = _LABEL_W + _BAR_W + _TEXT_W
    out = [
        f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" width="{width}" height="{height}"'
        f' aria-label="{escape(title)}"><title>{escape(title)}</title>'
    ]
    for n, bar in enumerate(bars):
        y = 4 + n * _ROW_H
        counted = bar.total + bar.not_applicable + bar.errors
        label = bar.label if len(bar.label) <= 24 else bar.label[:23] + "…"
        tip = f"{bar.label}: {bar.passed} passed, {bar.failed} failed"
        tip += f", {bar.not_applicable} n/a" if bar.not_applicable else ""
        tip += f", {bar.errors} without a verdict (errors)" if bar.errors else ""
        tip += f" ({bar.note})" if bar.note else ""
        out.append(f"<g><title>{escape(tip)}</title>")
        out.append(f'<text x="{_LABEL_W - 8}" y="{y + 15}" text-anchor="end">{escape(label)}</text>')
        out.append(f'<rect x="{_LABEL_W}" y="{y + 3}" width="{_BAR_W}" height="16" class="track"/>')
        x = float(_LABEL_W)
        for count, colour in (
            (bar.passed, PASS),
            (bar.failed, FAIL),
            (bar.not_applicable, NA),
            (bar.errors, ERROR),
        ):
            if counted and count:
                w = _BAR_W * count / counted
                out.append(f'<rect x="{x:.1f}" y="{y + 3}" width="{w:.1f}" height="16" fill="{colour}"/>')
                x += w
        unit = f" {bar.unit}" if bar.unit else ""
        text = f"{_pct(bar.passed, bar.total)}  ({bar.passed}/{bar.total}{unit})"
        out.append(f'<text x="{_LABEL_W + _BAR_W + 8}" y="{y + 15}">{escape(text)}</text></g>')
    out.append("</svg>")
    return "".join(out)


@dataclass(frozen=True)
class Dot:
    """One result in the scatter: index ``i``, its ``label``, ``seconds``, agent ``turns``, verdict."""

    i: int
    label: str
    seconds: float
    turns: int
    verdict: str


def _ticks(top: float, whole: bool = False) -> list[float]:
    """Round tick values from 0 to at least ``top``: a step of 1, 2 or 5 times a power of ten
    (at least 1 when ``whole``), at most six steps."""
    if top <= 0:
        return [0.0, 1.0]
    magnitude = 10 ** math.floor(math.log10(top / 5))
    step = next(m * magnitude for m in (1, 2, 5, 10) if top / (m * magnitude) <= 6)
    step = max(step, 1) if whole else step
    return [step * k for k in range(math.ceil(top / step) + 1)]


def _tick_text(v: float) -> str:
    return f"{v:g}"


def scatter(dots: Sequence[Dot], title: str) -> str:
    """Duration (x) against agent turns (y), one circle per result."""
    w, h, left, bottom, top_pad, right_pad = 580, 250, 50, 40, 10, 20
    xs = _ticks(max((d.seconds for d in dots), default=1.0))
    ys = _ticks(max((d.turns for d in dots), default=1), whole=True)
    xmax, ymax = xs[-1] or 1.0, ys[-1] or 1.0
    pw, ph = w - left - right_pad, h - bottom - top_pad

    def px(v: float) -> float:
        return left + pw * v / xmax

    def py(v: float) -> float:
        return top_pad + ph * (1 - v / ymax)

    out = [
        f'<svg class="chart" role="img" viewBox="0 0 {w} {h}" width="{w}" height="{h}"'
        f' aria-label="{escape(title)}"><title>{escape(title)}</title>'
    ]
    for v in xs:
        out.append(
            f'<line class="grid" x1="{px(v):.1f}" x2="{px(v):.1f}" y1="{top_pad}" y2="{top_pad + ph}"/>'
        )
        out.append(f'<text x="{px(v):.1f}" y="{h - bottom + 16}" text-anchor="middle">{_tick_text(v)}</text>')
    for v in ys:
        out.append(f'<line class="grid" x1="{left}" x2="{left + pw}" y1="{py(v):.1f}" y2="{py(v):.1f}"/>')
        out.append(f'<text x="{left - 6}" y="{py(v) + 4:.1f}" text-anchor="end">{_tick_text(v)}</text>')
    out.append(f'<text x="{left + pw / 2}" y="{h - 6}" text-anchor="middle">session duration (s)</text>')
    out.append(
        f'<text x="12" y="{top_pad + ph / 2}" text-anchor="middle"'
        f' transform="rotate(-90 12 {top_pad + ph / 2})">agent turns</text>'
    )
    colour = {"pass": PASS, "fail": FAIL}
    for d in dots:
        tip = f"{d.label}: {d.verdict}, {d.turns} agent turns, {d.seconds:.2f} s"
        out.append(
            f'<circle class="dot" data-i="{d.i}" cx="{px(d.seconds):.1f}" cy="{py(d.turns):.1f}" r="5"'
            f' fill="{colour.get(d.verdict, NA)}"><title>{escape(tip)}</title></circle>'
        )
    out.append("</svg>")
    return "".join(out)
