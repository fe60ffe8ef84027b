"""``evalctl rescore RUN_DIR``: score a run's stored sessions again (``engine.results.rescoring``), then
print the outcome as ``evalctl run`` does and pick the exit code."""

from __future__ import annotations

from engine.commands import library
from engine.commands.console import text_console, warning_of_unreadable
from engine.commands.run import print_outcome
from engine.results.rescoring import RescoreOptions, RescoreReport
from engine.results.unreadable import records_text


def rescore(opts: RescoreOptions, fail_under: float | None = None, allow_errors: bool = False) -> int:
    """Rescore (with every registered domain plugin) and print the outcome; returns the exit code
    of ``evalctl run`` (3 when a result has the verdict ``error`` unless ``allow_errors``, 1 under
    ``fail_under``, else 0). Raises UsageError / SpecError / DataRootError / InfrastructureError
    before anything is rewritten."""
    with warning_of_unreadable():
        done = library.rescore_options(opts)
        return _outcome(done, fail_under, allow_errors)


def _outcome(done: RescoreReport, fail_under: float | None, allow_errors: bool) -> int:
    err = text_console(stderr=True)
    for note in done.notes:
        err.print(f"evalctl: note: {note}", markup=False, highlight=False)
    out = text_console()
    kept = f", {done.kept} kept as they were" if done.kept else ""
    bad = (
        f"; {records_text(done.unreadable)} (warned above): scored again from the stored session, "
        "or left out where none reads"
        if done.unreadable
        else ""
    )
    out.print(f"rescored {done.rescored} result(s){kept}{bad}", markup=False, highlight=False)
    return print_outcome(done.report, fail_under, allow_errors=allow_errors)
