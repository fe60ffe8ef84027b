"""Reading a file named by a spec or found in a data root, without leaving that root.

Spec folders and data roots may come from someone else. Every path the engine reads from them is
resolved with symlinks followed and must stay inside its root (the spec folder, the data root or
``templates/``); the file must be a regular file (a FIFO would block the run, ``/dev/zero`` would
never end) of bounded size. Errors are :class:`UnsafePathError` (an ``OSError``): their text names
the path and says why, and never quotes the file's content.

Bounds: :data:`MAX_SPEC_BYTES` (10 MiB) for spec files and templates, :data:`MAX_DATA_BYTES`
(64 MiB) for data-root files (datasets, fixture DBs, policies, tool descriptions).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

MAX_SPEC_BYTES = 10 * 1024 * 1024
"""Largest spec file (YAML) or template read, in bytes (as ``engine.util.yamlload.MAX_FILE_BYTES``)."""
MAX_DATA_BYTES = 64 * 1024 * 1024
"""Largest data-root file read, in bytes. A fixture DB near it already costs seconds per session
to copy and parse; eva's largest file is 2 MB."""


class UnsafePathError(OSError):
    """A path that leaves its root, a symlink loop, or a file that is not a regular file of bounded
    size. ``str(err)`` is one line saying why (it never quotes the file)."""

    def __init__(self, message: str):
        super().__init__(message)


def contained(root: str | os.PathLike[str], rel: str | os.PathLike[str]) -> Path:
    """``root / rel`` with every symlink resolved, checked to lie inside ``root`` (resolved too).

    The file need not exist (reading it then raises FileNotFoundError). Raises UnsafePathError for
    an absolute ``rel``, a path that resolves outside ``root`` (``..``, a symlink pointing out) or a
    symlink loop.
    """
    base = Path(root).resolve()
    if Path(rel).is_absolute():
        raise UnsafePathError("is an absolute path; paths are relative to their folder")
    try:
        target = (base / rel).resolve()
    except (RuntimeError, OSError) as err:  # Python 3.11 raises RuntimeError on a symlink loop
        raise UnsafePathError(f"cannot be resolved ({type(err).__name__}: symlink loop?)") from None
    if not target.is_relative_to(base):
        raise UnsafePathError(f"leaves its folder {base} (it resolves to {target})")
    return target


def check_regular(path: Path, max_bytes: int) -> os.stat_result:
    """``os.stat`` of ``path`` after checking it is a regular file of at most ``max_bytes`` bytes.

    Raises FileNotFoundError when absent, UnsafePathError for a FIFO, device, socket or directory
    (never opened) or an oversized file.
    """
    info = os.stat(path)
    _check_info(info, max_bytes)
    return info


def _check_info(info: os.stat_result, max_bytes: int) -> None:
    if not stat.S_ISREG(info.st_mode):
        kind = (
            "a directory"
            if stat.S_ISDIR(info.st_mode)
            else "a FIFO"
            if stat.S_ISFIFO(info.st_mode)
            else "a device or socket"
        )
        raise UnsafePathError(f"is {kind}, not a regular file (never read)")
    if info.st_size > max_bytes:
        raise UnsafePathError(f"is {info.st_size} bytes, over the {max_bytes} byte limit")


def read_contained(root: str | os.PathLike[str], rel: str | os.PathLike[str], max_bytes: int) -> bytes:
    """The bytes of ``root / rel``: contained in ``root`` (:func:`contained`), a regular file of at
    most ``max_bytes`` bytes. The file is opened without following a last-moment symlink and
    without blocking, and checked again on the open descriptor, so a swap after the check cannot
    make it read a FIFO or a device. Raises FileNotFoundError or UnsafePathError (both OSError).
    """
    with open_contained(root, rel, max_bytes) as fh:
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise UnsafePathError(f"grew over the {max_bytes} byte limit while read")
    return data


def open_contained(root: str | os.PathLike[str], rel: str | os.PathLike[str], max_bytes: int) -> BinaryIO:
    """``root / rel`` opened for reading in binary, checked as :func:`read_contained` checks it
    (contained, a regular file of at most ``max_bytes`` bytes, checked again on the descriptor):
    for a reader that streams the file or reads one part of it. Raises as :func:`read_contained`."""
    path = contained(root, rel)
    check_regular(path, max_bytes)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    fh = os.fdopen(fd, "rb")
    try:
        _check_info(os.fstat(fh.fileno()), max_bytes)
    except BaseException:
        fh.close()
        raise
    return fh


def read_text(root: str | os.PathLike[str], rel: str | os.PathLike[str], max_bytes: int) -> str:
    """:func:`read_contained` decoded as UTF-8 (raises UnicodeDecodeError for other bytes)."""
    return read_contained(root, rel, max_bytes).decode("utf-8")


def outside_problem(root: str | os.PathLike[str], path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` (absolute, or relative to the working directory) may not be read as a file of
    ``root``, or None when it lies inside: the message of :func:`contained`."""
    try:
        contained(root, os.path.relpath(Path(path).absolute(), Path(root).absolute()))
    except UnsafePathError as err:
        return str(err)
    return None
