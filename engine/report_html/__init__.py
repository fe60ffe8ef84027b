"""``evalctl report RUN_DIR --html``: the run as one self-contained HTML file.

:func:`write_report` reads the run (:mod:`.collect`), draws the static sections and charts
(:mod:`.sections`, :mod:`.charts`: escaped HTML and inline SVG) and writes one page
(:mod:`.page`) whose script (``assets/report.js``) builds the filterable scenario table and each
result's detail from embedded JSON. The page opens from disk with no server and fetches nothing;
its raw-artifact links are relative to where the file is written. ``evalctl compare --html``
shares the page frame (:mod:`.compare_page`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engine.core.records.metrics import SIGNALS
from engine.report_html.collect import ReportModel, collect, natural_key
from engine.report_html.page import asset, document, json_block, write_page
from engine.report_html.sections import charts, h, headline, provenance, rates, usage
from engine.results.costs import PriceTable


@dataclass(frozen=True)
class Written:
    """A written report: ``path``, ``size`` in bytes, ``results`` shown, ``unreadable`` the
    record files left out because they could not be read."""

    path: Path
    size: int
    results: int
    unreadable: int = 0


def _options(values: list[str], every: str) -> str:
    return f'<option value="">{h(every)}</option>' + "".join(
        f'<option value="{h(v)}">{h(v)}</option>' for v in values
    )


def _scenarios(model: ReportModel) -> str:
    s = model.summary
    signals = [*SIGNALS, *(n for n in s.signals if n not in SIGNALS)]
    groups = sorted({r["group"] for r in model.rows}, key=natural_key)
    stops = sorted({r["stop"] for r in model.rows})
    return (
        f'<section id="scenarios"><h2>Results ({len(model.rows)})</h2><div class="filters">'
        '<label><input type="checkbox" id="f-failing"> failing only</label>'
        f'<label>signal failed <select id="f-signal">{_options(signals, "any signal")}</select></label>'
        f'<label>stop reason <select id="f-stop">{_options(stops, "any")}</select></label>'
        f'<label>group <select id="f-group">{_options(groups, "any")}</select></label>'
        '<input type="search" id="f-search" placeholder="search name, id, group, error" aria-label="search">'
        '<span id="f-count"></span></div>'
        '<div id="results"><div class="table-wrap"><table id="scenario-table"></table></div>'
        '<div id="detail" hidden></div></div></section>'
    )


def render(model: ReportModel) -> str:
    """The report page of ``model``."""
    index = {"trials": model.summary.trials, "priced": model.cost.priced, "rows": model.rows}
    body = [
        headline(model),
        charts(model),
        '<div class="cols">',
        rates(model.summary),
        usage(model.cost),
        "</div>",
        _scenarios(model),
        provenance(model.run, model.summary),
        json_block("report-index", index),
        *(json_block(f"d-{i}", d) for i, d in enumerate(model.details)),
    ]
    subtitle = model.run_dir if model.only is None else f"{model.run_dir} ({model.only})"
    media = any(d.get("voice") for d in model.details)  # a voice run's audio players
    return document("evalctl report", subtitle, body, asset("report.js"), asset("report.css"), media)


def write_report(
    run_dir: Path, out: Path, prices: PriceTable | None = None, *, failed_every_trial: bool = False
) -> Written:
    """Write the report of ``run_dir`` to ``out`` (atomically); ``failed_every_trial``: its
    scenario table holds only the scenarios that failed in every trial. Raises UsageError when
    ``run_dir`` is not a finished run or has no readable result, OutputError when ``out`` cannot
    be written."""
    model = collect(Path(run_dir), Path(out), prices, failed_every_trial=failed_every_trial)
    data = render(model).encode("utf-8")
    write_page(Path(out), data)
    return Written(Path(out), len(data), len(model.rows), len(model.unreadable))
