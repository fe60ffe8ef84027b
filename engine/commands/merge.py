"""``evalctl merge RUN... --output-dir OUT``: combine shard runs into one run (``engine.results.merge``),
then print the outcome as ``evalctl run`` does and pick the exit code."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from engine.commands.console import warning_of_unreadable
from engine.commands.run import print_outcome
from engine.results.merge import merge_runs
from engine.results.run_report import RunReport


def merge(
    sources: Sequence[Path],
    out: Path,
    argv: Sequence[str] | None = None,
    fail_under: float | None = None,
    allow_errors: bool = False,
) -> int:
    """Merge ``sources`` into ``out`` and print the outcome; returns the exit code of
    ``evalctl run`` over the merged results (3 when a result has the verdict ``error`` unless
    ``allow_errors``, 1 under ``fail_under``, else 0; a source's record that does not read is a
    warning line on stderr, counted in the merged run's report). Raises UsageError (one line) for
    sources that do not make one run or hold no readable result, before anything is written."""
    with warning_of_unreadable():  # the report of the merged run counts them
        summary = merge_runs(sources, out, argv)
        return print_outcome(RunReport(Path(out), summary=summary), fail_under, allow_errors=allow_errors)
