"""Which scenarios a run covers, and its directory: a fresh ``runs/<stamp>``, no two runs mixed in
one directory, what a resumed run selected.

A run directory holds one run: ``run.json`` (written at the start, so a run killed early can be
resumed) and one folder per scenario. ``--resume`` needs such a directory. The process working in
it holds its lock (:func:`lock_run_dir`), so two processes never write one run.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # not POSIX: no lock (evalctl targets Linux and macOS)
    fcntl = None  # type: ignore[assignment]

from engine.core.model import Scenario
from engine.results import scoring_stage as results
from engine.results.provenance import parse_run_record, read_run_record, run_provenance
from engine.spec.selection import select_scenarios as select_scenarios  # its old home: re-exported
from engine.util.artifacts import read_json, write_json
from engine.util.errors import OutputError, UsageError
from engine.util.untrusted import one_line


def fresh_default_dir() -> Path:
    """Create and return ``runs/<UTC stamp>``, with ``-2``, ``-3``... when another run started in
    the same second (created atomically, so two runs never share it). Raises OutputError."""
    base = Path("runs") / datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    candidate, n = base, 1
    while True:
        try:
            candidate.mkdir(parents=True)
            return candidate
        except FileExistsError:
            n += 1
            candidate = base.with_name(f"{base.name}-{n}")
        except OSError as err:
            raise OutputError(f"cannot write the run directory {candidate}: {err.strerror or err}") from None


def open_run_dir(run_dir: Path, resume: bool, info: dict[str, Any]) -> None:
    """Create ``run_dir`` and record this invocation in ``run.json`` at once, as not finished (a
    new run: so a run killed early can be resumed; a resume: so the results it writes never name
    an invocation ``run.json`` lacks, even when it is killed with SIGKILL before its end). The
    record is replaced by the finished one at the end. Raises OutputError (one line) when it
    cannot be written."""
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        first = {**info, "finished_at": None, "interrupted": True}
        write_json(run_dir / "run.json", run_provenance(run_dir, first).to_json())
    except OSError as err:
        raise OutputError(f"cannot write the run directory {run_dir}: {err.strerror or err}") from None


def check_run_dir(run_dir: Path, resume: bool, trials: int) -> tuple[str, ...]:
    """Refuse a run directory that would mix or lose results; raises UsageError. Returns the
    scenario names the run being resumed selected (from its ``run.json``; empty when unknown).

    ``--resume`` needs an evalctl run there (``run.json`` or scored results) and the ``--trials``
    it was run with (another count lays results out differently and would count them twice).
    A fresh run needs a directory that holds no run (it would overwrite that run's results).
    """
    why = "not a run record"
    try:
        body = read_json(run_dir / "run.json")
    except (OSError, ValueError) as err:
        body, why = None, one_line(f"{type(err).__name__}: {err}", 200)
    recorded = parse_run_record(body)  # None for a run.json that is not a run record
    is_run = holds_a_run(run_dir, body)
    if not resume:
        if is_run:
            raise UsageError(
                f"{run_dir} already holds a run; complete it with --resume {run_dir}, "
                "or give another --output-dir"
            )
        return ()
    if not is_run:
        raise UsageError(f"--resume: {run_dir} is not an evalctl run directory (no run.json, no results)")
    if recorded is None and (run_dir / "run.json").exists():
        # run.json is written whole or not at all: one that cannot be read was damaged, and a
        # resume with the command line's options would run other scenarios with other sides
        raise UsageError(
            f"--resume: {run_dir / 'run.json'} cannot be read ({why}): the run's settings and "
            "selection are unknown; restore that file, or start a new run in another folder"
        )
    if recorded is None:
        return ()  # results without a run.json (an evalctl before run.json): selection unknown
    if recorded.trials is not None and recorded.trials != trials:
        raise UsageError(
            f"--resume: {run_dir} was run with --trials {recorded.trials}; "
            f"resume it with --trials {recorded.trials}"
        )
    return recorded.scenarios


def holds_a_run(run_dir: Path, body: Any = None) -> bool:
    """Whether ``run_dir`` holds an evalctl run: a ``run.json`` object (``body``, read when None)
    or scored results."""
    if body is None:
        try:
            body = read_json(run_dir / "run.json")
        except (OSError, ValueError):
            body = None
    return isinstance(body, dict) or (run_dir.is_dir() and bool(results.scored_dirs(run_dir)))


def recorded_selection(loaded: Any, names: tuple[str, ...], run_dir: Path) -> list[Scenario]:
    """The scenarios a resumed run selected; UsageError naming the run's spec dir when the given
    spec dir does not hold them (a resume with the wrong SPEC_DIR)."""
    known = {s.name for s in loaded.scenarios}
    missing = [n for n in names if n not in known]
    if missing:
        recorded = read_run_record(run_dir)
        spec_dir = recorded.spec_dir if recorded is not None and recorded.spec_dir else "?"
        raise UsageError(
            f"--resume: the run in {run_dir} was made from {spec_dir}, whose scenario {missing[0]!r} "
            f"is not in {loaded.domain.spec_dir}; resume it with that spec dir"
        )
    return select_scenarios(loaded.scenarios, names, None)


#: The lock file of a run directory: held (``fcntl.flock``) by the process running in it.
LOCK_FILE = ".evalctl.lock"


@contextlib.contextmanager
def lock_run_dir(run_dir: Path, choice: str = " or choose another --output-dir") -> Iterator[None]:
    """Hold the run directory's lock (an exclusive ``flock`` on :data:`LOCK_FILE`, which also
    names the holder's pid) for the ``with`` block: one ``evalctl run``, resume or rescore per
    folder at a time. The lock goes with the process, however it ends (even SIGKILL). Raises
    UsageError (one line; ``choice`` ends it: what else the user may do) when another process
    holds it, OutputError when the folder cannot be written."""
    path = Path(run_dir) / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as err:
        raise OutputError(f"cannot write the run directory {run_dir}: {err.strerror or err}") from None
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
                who = f" (pid {holder})" if holder.isdigit() else ""
                raise UsageError(
                    f"{run_dir} is in use by another evalctl process{who}: one run per output folder; "
                    f"wait for it to end{choice}"
                ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock; the file stays (removing it would race with the next locker)
