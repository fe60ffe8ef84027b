"""Will the process's open-file limit carry the run's concurrency? Checked before anything runs.

Every session holds WebSocket connections to both sides (two descriptors for a side the run
serves itself, client and server end, one for an external side), an HTTP connection per
``openai:`` side, and scoring holds one per judge request; a few more are the process's own
(standard streams, the event loop, files being written). When the soft limit (``ulimit -n``) is
too low the run raises it up to the hard limit; when even that is too low the run is refused
with one line, instead of failing sessions with "Too many open files".
"""

from __future__ import annotations

from collections.abc import Mapping

from engine.util.errors import UsageError

try:
    import resource
except ImportError:  # not POSIX: nothing to check
    resource = None  # type: ignore[assignment]

#: Descriptors the process needs whatever the concurrency (streams, loop, imports, writes).
BASE_FILES = 64
#: Per session: a built-in side (client and server end of its WebSocket), an external side, and
#: the HTTP connection of a built-in openai side.
FILES_PER_SIDE = {"replay": 2, "noop": 2, "openai": 3, "external": 1}


def files_needed(at_once: int, sides: Mapping[str, str], judge: bool) -> int:
    """Descriptors a run needs at most with ``at_once`` sessions at once: ``sides`` maps role to
    backend kind (``replay``, ``openai``, ``external``...); ``judge`` adds one connection per
    concurrent judge request."""
    per_session = sum(FILES_PER_SIDE.get(kind, 2) for kind in sides.values()) + (1 if judge else 0)
    return BASE_FILES + at_once * per_session


def check_open_files(
    needed: int, concurrency: int, at_once: int | None = None, limits: tuple[int, int] | None = None
) -> int:
    """Make sure ``needed`` descriptors are allowed (``at_once`` sessions at once: ``--concurrency``,
    or the number of sessions the run has when that is smaller): raise the soft limit toward the
    hard one when it is lower; raise UsageError (one line, with the largest concurrency that fits)
    when the hard limit is lower. ``limits`` (soft, hard) replaces the process's own (tests).
    Returns the soft limit in force."""
    at_once = concurrency if at_once is None else at_once
    if resource is None:
        return needed
    soft, hard = limits if limits is not None else resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or needed <= soft:
        return soft
    if hard == resource.RLIM_INFINITY or needed <= hard:
        if limits is None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
        return needed
    per_session = max(1, (needed - BASE_FILES) // max(at_once, 1))
    fits = (hard - BASE_FILES) // per_session
    lower = f"give --concurrency {fits} or less, or raise the limit" if fits >= 1 else "raise the limit"
    sessions = f" ({at_once} sessions at once)" if at_once < concurrency else ""
    raise UsageError(
        f"--concurrency {concurrency}{sessions} needs about {needed} open files, over this process's "
        f"limit of {hard} (ulimit -n); {lower}"
    )
