"""Atomic artifact writes: every file lands whole or not at all.

Each writer puts the bytes in a temporary file in the target's own directory, flushes and fsyncs
it, then ``os.replace``s it over the target (atomic on POSIX within one filesystem) and fsyncs the
directory. A reader — or a resumed run after SIGKILL — therefore sees either the old file or the
new one, never a torn one.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def _fsync_dir(directory: Path) -> None:
    """fsync a directory so a rename in it survives a crash (no-op where unsupported)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_bytes(path: Path, data: bytes) -> Path:
    """Atomically write ``data`` to ``path`` (parents created). Returns ``path``.

    Raises OSError when the directory cannot be written; the target is then left untouched.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)
    return path


def write_text(path: Path, text: str) -> Path:
    """Atomically write UTF-8 ``text`` to ``path``; a lone surrogate (not encodable) becomes ``?``
    rather than losing the whole file."""
    return write_bytes(path, text.encode("utf-8", "replace"))


def dumps_json(obj: Any) -> str:
    """Stable, readable JSON: 2-space indent, keys in insertion order, non-ASCII kept, ``default=str``."""
    return json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n"


def write_json(path: Path, obj: Any) -> Path:
    """Atomically write ``obj`` as indented JSON (see :func:`dumps_json`)."""
    return write_text(path, dumps_json(obj))


def write_jsonl(path: Path, rows: Iterable[Any]) -> Path:
    """Atomically write one compact JSON object per line (``default=str``)."""
    body = "".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in rows)
    return write_text(path, body)


def read_json(path: Path) -> Any:
    """Parse a JSON file; raises OSError / json.JSONDecodeError as is (callers decide)."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


def read_jsonl(path: Path) -> list[Any]:
    """Parse a JSON-lines file (blank lines skipped)."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]
