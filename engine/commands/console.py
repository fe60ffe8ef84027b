"""The consoles the verbs print on (rich)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

import click
from rich.console import Console

from engine.results.unreadable import UnreadableLog, watching
from engine.util.errors import BROKEN_PIPE_EXIT

#: Columns of a verb's tables when its output is not a terminal (a pipe, a file, a CI log) and
#: ``$COLUMNS`` does not say: rich's default of 80 wraps the signal table's longer rows.
PIPED_WIDTH = 120


class _Console(Console):
    """rich's console, but a closed pipe (``| head -1``) ends the verb with
    :data:`engine.util.errors.BROKEN_PIPE_EXIT`: rich's own exit code there is 1, which ``run``
    documents as below ``--fail-under``."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())  # the interpreter's last flush must not fail again
        raise SystemExit(BROKEN_PIPE_EXIT)


def text_console(stderr: bool = False) -> Console:
    """A console for a verb's text: long lines stay whole when piped (``soft_wrap``: grep finds
    them), no emoji codes (``:m:`` in ``openai:m: HTTP 401`` is not one), and tables
    :data:`PIPED_WIDTH` wide off a terminal unless ``$COLUMNS`` is set."""
    console = _Console(stderr=stderr, soft_wrap=True, emoji=False)
    # a $COLUMNS that is not a positive number (0 in some CI shells) does not count: rich read 0 as
    # a width of 0 and printed nothing at all (no rates, no results folder, no error line)
    if not _columns() and (not console.is_terminal or console.width < 1):
        console.width = PIPED_WIDTH
    return console


def _columns() -> int | None:
    """``$COLUMNS`` when it is a positive whole number, else None."""
    raw = os.environ.get("COLUMNS", "").strip()
    return int(raw) if raw.isdigit() and int(raw) > 0 else None


@contextlib.contextmanager
def warning_of_unreadable() -> Iterator[UnreadableLog]:
    """Run a verb that reads run folders: each record file it cannot read is printed at once on
    stderr as ``warning: PATH: REASON`` and counted in the log yielded (the verb shows the count
    in its output; ``engine.results.unreadable``)."""
    with watching(lambda item: click.echo(item.line(), err=True)) as log:
        yield log


def size_text(size: int) -> str:
    """A file's size for a line: ``820 bytes``, ``13 KB``, ``4.2 MB`` (decimal units)."""
    if size < 1000:
        return f"{size} bytes"
    if size < 1_000_000:
        return f"{size / 1000:.0f} KB"
    return f"{size / 1e6:.1f} MB"
