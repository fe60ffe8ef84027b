"""``run.json``: what produced a run — version, git commit, spec/template/data hashes, models, args.

All hashes are SHA-256 hex of file bytes. At most MAX_DATA_FILES files per folder are hashed;
``hash_notes`` lists what was left out (the cap, links out of a folder, FIFOs), empty when nothing.
``run.json`` (``engine.core.records.run.RunRecord``) is rewritten by every ``finish_run``; the first
invocation's record is kept and each later one (a ``--resume``, an ``evalctl rescore``) is
appended to ``invocations``, so a resumed run still says how it started. An invocation is known by
its ``id`` (a random hex string), never by its start time: two invocations may start in the same
millisecond.
"""

from __future__ import annotations

import platform
import secrets
import shlex
import subprocess
import sys
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from engine import __version__
from engine.core.dataroot import pins, sha256_file
from engine.core.model import REPO_ROOT, TEMPLATE_DIR
from engine.core.records.fields import RecordError
from engine.core.records.run import Git, Invocation, RunRecord
from engine.results.unreadable import note_failure
from engine.util.artifacts import read_record
from engine.util.safepaths import check_regular, contained

MAX_DATA_FILES = 5000


@cache
def git_commit(repo: Path = REPO_ROOT) -> dict[str, Any] | None:
    """``{commit, dirty}`` of the evalctl checkout, or None when it is not a git work tree. Asked
    once per process (the code that runs is the code loaded at the start); treat it as read-only."""
    try:
        commit = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        status = subprocess.run(
            ["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "dirty": bool(status.strip())}


def hash_tree(
    root: Path, pattern: str = "**/*", limit: int = MAX_DATA_FILES, notes: list[str] | None = None
) -> dict[str, str]:
    """``{relative path: SHA-256 hex}`` of the regular files under ``root`` matching ``pattern``
    (hidden files skipped, at most ``limit`` files); empty when ``root`` is not a folder.

    Files that resolve outside ``root`` (a symlink pointing out) or are not regular files (a FIFO,
    a device) are not read. ``notes`` (when given) receives one line per such file and one when the
    limit stops the hashing, with how many files were left unhashed: provenance never stops silently.
    """
    root = Path(root)
    if not root.is_dir():
        return {}
    out: dict[str, str] = {}
    left = 0
    for path in sorted(root.glob(pattern)):
        rel = path.relative_to(root)
        if any(part.startswith(".") for part in rel.parts) or path.is_dir():
            continue
        if len(out) >= limit:
            left += 1
            continue
        try:
            check_regular(contained(root, rel), max_bytes=1 << 62)  # hashing streams: any size
        except OSError as err:
            if notes is not None and len(notes) < 20:
                notes.append(f"{root}: {rel.as_posix()} not hashed: {err}")
            continue
        out[rel.as_posix()] = sha256_file(path)
    if left and notes is not None:
        notes.append(f"{root}: stopped at {limit} files; {left} more not hashed")
    return out


def data_root_changes(files: dict[str, str]) -> list[str]:
    """Pinned upstream files (``release/relpath``) whose hash differs from the pin or that are absent."""
    changed: list[str] = []
    present_releases = {p.split("/", 1)[0] for p in files}
    for release, spec in pins().items():
        if release not in present_releases:
            continue
        for rel, digest in spec["files"].items():
            if files.get(f"{release}/{rel}") != digest:
                changed.append(f"{release}/{rel}")
    return sorted(changed)


_INFO_KEYS = (
    "invocation",
    "command",
    "settings",
    "argv",
    "args",
    "spec_dir",
    "data_root",
    "models",
    "started_at",
    "finished_at",
    "wall_time_s",
    "wall_s",
    "interrupted",
    "scenarios",
)


def _argv(run_info: dict[str, Any]) -> list[str] | None:
    """The command line: ``run_info["argv"]``, else this process's own when it is evalctl."""
    if run_info.get("argv"):
        return list(run_info["argv"])
    return list(sys.argv[1:]) if sys.argv and Path(sys.argv[0]).stem in ("evalctl", "cli") else None


def _args(run_info: dict[str, Any]) -> dict[str, Any]:
    """Parsed arguments: ``run_info["args"]``, else every other run_info key (agent, user, trials...)."""
    if run_info.get("args"):
        return dict(run_info["args"])
    return {k: v for k, v in run_info.items() if k not in _INFO_KEYS}


def new_invocation_id() -> str:
    """A fresh invocation id: 16 random hex digits."""
    return secrets.token_hex(8)


def parse_run_record(body: Any) -> RunRecord | None:
    """The record of a ``run.json`` body; None when it is not one (RecordError)."""
    try:
        return RunRecord.from_json(body)
    except RecordError:
        return None


def read_run_record(run_dir: Path) -> RunRecord | None:
    """The ``run.json`` of ``run_dir``; None when it is missing, unreadable or not a run record
    (the last two noted: ``engine.results.unreadable``)."""
    path = Path(run_dir) / "run.json"
    try:
        return RunRecord.from_json(read_record(path))
    except (OSError, ValueError) as err:  # RecordError is a ValueError
        note_failure(path, err)
        return None


def resume_command(run_dir: Path | str) -> str:
    """The command that completes the run in ``run_dir``, for a hint: ``evalctl run SPEC_DIR
    --resume RUN_DIR`` with the spec folder its ``run.json`` records (as it was given, shell-quoted
    where needed), or ``evalctl run ... --resume RUN_DIR`` when none reads. Reads quietly: a
    ``run.json`` that does not read is not noted (a hint is no place for a warning)."""
    spec = "..."
    try:
        recorded = RunRecord.from_json(read_record(Path(run_dir) / "run.json")).spec_dir
    except (OSError, ValueError):
        recorded = None
    if recorded:
        spec = shlex.quote(recorded)
    return f"evalctl run {spec} --resume {shlex.quote(str(run_dir))}"


def run_provenance(run_dir: Path, run_info: dict[str, Any]) -> RunRecord:
    """The ``run.json`` record of this invocation, merged with the run directory's existing one
    (its creation time, scenario selection and earlier invocations)."""
    spec_dir = run_info.get("spec_dir")
    data_root = run_info.get("data_root")
    notes: list[str] = []
    data_files = hash_tree(Path(data_root), notes=notes) if data_root else {}
    now = datetime.now(UTC).isoformat(timespec="milliseconds")
    argv = _argv(run_info)
    invocation = Invocation(
        id=str(run_info.get("invocation") or new_invocation_id()),
        command=str(run_info.get("command") or "run"),
        started_at=run_info.get("started_at"),
        finished_at=run_info.get("finished_at", now),  # None: marked at the start, not finished
        wall_time_s=run_info.get("wall_time_s"),
        interrupted=bool(run_info.get("interrupted", False)),
        argv=None if argv is None else tuple(argv),
        args=_args(run_info),
    )
    previous = read_run_record(run_dir)
    selected = list(previous.scenarios) if previous else []  # every invocation's selection
    # the same invocation finishing again (its record at the start, then at the end) replaces itself
    earlier = [i for i in (previous.invocations if previous else ()) if i.id != invocation.id]
    git = git_commit()
    return RunRecord(
        evalctl_version=__version__,
        git=None if git is None else Git(**git),
        python=platform.python_version(),
        spec_dir=str(spec_dir) if spec_dir else None,
        spec_files=hash_tree(Path(spec_dir), notes=notes) if spec_dir else {},
        templates=hash_tree(TEMPLATE_DIR, notes=notes),
        data_root=str(data_root) if data_root else None,
        data_root_files=data_files,
        data_root_changed_from_pins=tuple(data_root_changes(data_files)),
        hash_notes=tuple(notes),  # files left unhashed (cap reached, links out of the root, FIFOs)
        models=run_info.get("models"),
        settings=run_info.get("settings") or (previous.settings if previous else {}),
        trials=run_info.get("trials"),
        args=invocation.args,
        argv=invocation.argv,
        created_at=(previous.created_at if previous else None) or run_info.get("started_at") or now,
        scenarios=(*selected, *(str(n) for n in run_info.get("scenarios") or [] if str(n) not in selected)),
        invocations=(*earlier, invocation),
    )
