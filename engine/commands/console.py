"""The consoles the verbs print on (rich)."""

from __future__ import annotations

import os

from rich.console import Console

#: Columns of a verb's tables when its output is not a terminal (a pipe, a file, a CI log) and
#: ``$COLUMNS`` does not say: rich's default of 80 wraps the signal table's longer rows.
PIPED_WIDTH = 120


def text_console(stderr: bool = False) -> Console:
    """A console for a verb's text: long lines stay whole when piped (``soft_wrap``: grep finds
    them), no emoji codes (``:m:`` in ``openai:m: HTTP 401`` is not one), and tables
    :data:`PIPED_WIDTH` wide off a terminal unless ``$COLUMNS`` is set."""
    console = Console(stderr=stderr, soft_wrap=True, emoji=False)
    if not console.is_terminal and not os.environ.get("COLUMNS"):
        console.width = PIPED_WIDTH
    return console
