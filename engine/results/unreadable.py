"""Records a verb found and could not read: never dropped without a word.

A reader of a run folder (``metrics.json``, ``session.json``, ``run.json``) that meets a file it
cannot parse (not JSON, torn, not the record, a schema of a newer evalctl) skips it, as before,
and calls :func:`note` with its path and why. The verbs that read run folders (``report``,
``diff``, ``compare``, ``rescore``, ``merge``) run inside :func:`watching`: each file noted is
printed at once as one ``warning: PATH: REASON`` line (on stderr) and counted in the
:class:`UnreadableLog` the verb shows in its output. Outside :func:`watching` (``evalctl run``,
``--resume``) nothing is collected: those paths already say what they do with such a folder.
A file that is missing is not unreadable (a result not run yet); the callers only note files
that exist (a symbolic link that leads nowhere or loops exists: it is unreadable). What a record
reader refuses before parsing (not a regular file, too large, too deep, a non-finite number):
``engine.util.artifacts.read_record``.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

from engine.util.untrusted import one_line


@dataclass(frozen=True)
class Unreadable:
    """One file that could not be read: its ``path`` (as the verb reached it) and ``reason``
    (one line)."""

    path: Path
    reason: str

    def line(self) -> str:
        """``warning: PATH: REASON``, one line."""
        return one_line(f"warning: {self.path}: {self.reason}", 500)


class UnreadableLog:
    """The files a verb could not read, once each (first reason kept), in the order met.
    ``echo`` is called with each new one (the verb prints its warning line)."""

    def __init__(self, echo: Callable[[Unreadable], None] | None = None) -> None:
        self._found: dict[str, Unreadable] = {}
        self._echo = echo

    def add(self, path: Path, reason: str) -> None:
        key = _identity(path)
        if key in self._found:
            return
        item = Unreadable(Path(path), reason)
        self._found[key] = item
        if self._echo is not None:
            self._echo(item)

    @property
    def items(self) -> tuple[Unreadable, ...]:
        return tuple(self._found.values())

    def __len__(self) -> int:
        return len(self._found)

    def under(self, folder: Path) -> int:
        """How many of the files are under ``folder``."""
        root = os.path.abspath(folder) + os.sep
        return sum(1 for item in self._found.values() if os.path.abspath(item.path).startswith(root))


def _identity(path: Path) -> str:
    """One file however it is reached: its device and inode (a merged run's hard link to a
    source's file is that file; of a symbolic link that leads nowhere, the link's own), else its
    absolute path."""
    try:
        st = os.stat(path)
    except OSError:
        try:
            st = os.lstat(path)
        except OSError:
            return os.path.abspath(path)
    return f"{st.st_dev}:{st.st_ino}"


_LOG: ContextVar[UnreadableLog | None] = ContextVar("evalctl_unreadable", default=None)


def note(path: Path, reason: str) -> None:
    """Record that ``path`` could not be read (see the module docstring); a no-op outside
    :func:`watching`."""
    log = _LOG.get()
    if log is not None:
        log.add(path, reason)


def reason_of(err: BaseException) -> str:
    """Why a record file did not read, in one line: ``not JSON (...)``, ``not UTF-8 text``, the
    OS's reason, or the record's own message (``RecordError``)."""
    if isinstance(err, json.JSONDecodeError):
        return f"not JSON ({err.msg} at line {err.lineno} column {err.colno}; truncated or damaged?)"
    if isinstance(err, UnicodeDecodeError):
        return "not UTF-8 text (damaged?)"
    if isinstance(err, OSError):
        return f"cannot be read ({err.strerror or err})"
    return str(err)


def note_failure(path: Path, err: BaseException) -> None:
    """:func:`note` ``path`` with :func:`reason_of` ``err``, unless the file is simply missing."""
    if isinstance(err, FileNotFoundError):
        return
    note(path, reason_of(err))


@contextlib.contextmanager
def watching(echo: Callable[[Unreadable], None] | None = None) -> Iterator[UnreadableLog]:
    """Collect the files noted inside the ``with`` block (this thread and the tasks and threads
    it starts with its context) into the log yielded; ``echo`` sees each new one at once. Inside
    another ``watching`` block each file goes to the outer log instead, whose echo says it once
    (a verb's count of one of its parts; a verb that prints another's outcome, as ``rescore``
    and ``merge`` print the report)."""
    parent = _LOG.get()

    def forward(item: Unreadable) -> None:
        if parent is not None:
            parent.add(item.path, item.reason)  # the outermost log echoes, once per file
        elif echo is not None:
            echo(item)

    log = UnreadableLog(forward)
    token = _LOG.set(log)
    try:
        yield log
    finally:
        _LOG.reset(token)


def records_text(n: int) -> str:
    """``1 unreadable record`` / ``3 unreadable records``."""
    return f"{n} unreadable record{'' if n == 1 else 's'}"
