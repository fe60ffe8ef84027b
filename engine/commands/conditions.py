"""``evalctl run --voice --conditions clean,snr=5,telephone``: the same scenarios once per
condition, each condition a complete run in its own sub-folder of one run folder, then the
conditions side by side with their paired differences against the first
(``engine.results.conditions``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path

from engine.commands.console import text_console
from engine.core.caller import parse_perturbation
from engine.core.options import RunOptions
from engine.results.conditions import CONDITIONS_JSON, Condition, condition_lines, write_condition_report
from engine.results.rundir import fresh_default_dir
from engine.util.errors import UsageError


def parse_conditions(text: str) -> tuple[tuple[str, str], ...]:
    """``(label, perturb)`` of each condition of ``--conditions`` (conditions separated by ``;``
    or, when no condition has two items, by ``,``: ``clean,snr=5,telephone`` or
    ``clean;telephone,snr=10``). Raises UsageError (one line) for a bad condition, a repeated one,
    or fewer than two."""
    parts = text.split(";") if ";" in text else text.split(",")
    out: list[tuple[str, str]] = []
    for part in parts:
        try:
            p = parse_perturbation(part)
        except ValueError as err:
            raise UsageError(f"--conditions: {err}") from None
        if any(label == p.label for label, _ in out):
            raise UsageError(f"--conditions names {p.spec} twice")
        out.append((p.label, p.spec))
    if len(out) < 2:
        raise UsageError("--conditions needs at least two conditions, e.g. clean,snr=5,telephone")
    return tuple(out)


def run_conditions(
    opts: RunOptions, conditions: Sequence[tuple[str, str]], run_one: Callable[[RunOptions, bool], int]
) -> int:
    """Run ``opts`` once per condition (``run_one(opts, first)``: ``engine.commands.run.run`` with
    the verb's other options; ``first`` True for the first condition only, whose summary alone
    prints the caller's note) into ``RUN_DIR/<label>/``, write ``RUN_DIR/conditions.json`` and print the
    comparison. Returns the highest exit code of the runs. Raises UsageError for options a
    condition run cannot take (``--resume``, ``--shard``, ``--perturb``)."""
    if not opts.voice:
        raise UsageError("--conditions compares caller conditions of voice runs: it goes with --voice")
    if opts.resume is not None or opts.shard is not None:
        raise UsageError(
            "--conditions runs each condition in its own sub-folder: resume or shard one of them alone"
        )
    if opts.perturb is not None:
        raise UsageError("--conditions sets each run's perturbation: leave --perturb out")
    base = opts.output_dir if opts.output_dir is not None else fresh_default_dir()
    out = text_console()
    done: list[Condition] = []
    codes: list[int] = []
    for label, spec in conditions:
        out.print(f"condition {label} ({spec}): {base / label}", markup=False, highlight=False)
        sub = dataclasses.replace(opts, perturb=None if spec == "clean" else spec, output_dir=base / label)
        codes.append(run_one(sub, not codes))
        if (base / label / "summary.json").is_file():
            done.append(Condition(label, spec, base / label))
    if len(done) >= 2 and done[0].label == conditions[0][0]:
        doc = write_condition_report(base, done)
        for line in condition_lines(doc):
            out.print(line, markup=False, highlight=False)
        pages = _compare_pages(base, done)
        out.print(
            f"conditions: {Path(base) / CONDITIONS_JSON}; HTML: {', '.join(map(str, pages))}",
            markup=False,
            highlight=False,
        )
    return max(codes)


def _compare_pages(base: Path, done: Sequence[Condition]) -> list[Path]:
    """One ``evalctl compare --html`` page per condition against the first:
    ``RUN_DIR/compare-<label>.html``."""
    from engine.report_html.compare_page import write_compare
    from engine.results.compare import compare_runs

    pages = []
    for c in done[1:]:
        page = Path(base) / f"compare-{c.label}.html"
        write_compare(compare_runs(done[0].run_dir, c.run_dir), page)
        pages.append(page)
    return pages
