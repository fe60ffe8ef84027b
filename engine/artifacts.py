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


#: Per ``(table, key)`` of a DB: the indented row text of the last records seen there, as
#: (object, text); per table: the last tables seen, as ((key, record) pairs, text). See
#: :func:`dumps_db_json`. Strong references keep the objects' ids unique.
_ROWS: dict[tuple[str, str], list[tuple[Any, str]]] = {}
_TABLES: dict[str, list[tuple[tuple[tuple[str, Any], ...], str]]] = {}
_KEEP = 2


def _row(table: str, key: str, record: Any) -> str:
    """``    "<key>": <record>`` as :func:`dumps_json` writes it inside a table of a DB."""
    slot = _ROWS.setdefault((table, key), [])
    for obj, text in slot:
        if obj is record:
            return text
    body = json.dumps(record, indent=2, ensure_ascii=False, default=str).replace("\n", "\n    ")
    text = f"    {json.dumps(key, ensure_ascii=False)}: {body}"
    slot.insert(0, (record, text))
    del slot[_KEEP:]
    return text


def _table(name: str, table: dict[str, Any]) -> str:
    """A table's text inside a DB (``{`` ... ``  }``); the same table contents (keys in the same
    order holding the same objects) reuse the text."""
    slot = _TABLES.setdefault(name, [])
    for pairs, text in slot:
        if len(pairs) == len(table) and all(
            k == k2 and v is r for (k, v), (k2, r) in zip(table.items(), pairs, strict=True)
        ):
            return text
    pairs = tuple(table.items())
    text = "{\n" + ",\n".join(_row(name, k, r) for k, r in pairs) + "\n  }"
    slot.insert(0, (pairs, text))
    del slot[_KEEP:]
    return text


def dumps_db_json(db: Any) -> str:
    """:func:`dumps_json` of a DB, byte for byte, fast for DBs that share record objects.

    A DB is a mapping of tables; a table that is a mapping of records has each record's text
    cached by object (the last two objects per table and key) and its own text cached while it
    holds the same objects, so the many session DBs over one shared initial DB (tau2: 2 to 7 MB)
    dump only the records a session replaced. Anything else is dumped as :func:`dumps_json` does.
    Valid while a record object is never changed in place after it was dumped (the engine's
    runtime copies a record before every call that may write it).
    """
    if not isinstance(db, dict) or not db or not all(type(k) is str for k in db):
        return dumps_json(db)
    parts = []
    for name, table in db.items():
        if isinstance(table, dict) and table and all(type(k) is str for k in table):
            body = _table(name, table)
        else:
            body = json.dumps(table, indent=2, ensure_ascii=False, default=str).replace("\n", "\n  ")
        parts.append(f"  {json.dumps(name, ensure_ascii=False)}: {body}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def write_db_json(path: Path, db: Any) -> Path:
    """Atomically write a DB as :func:`dumps_db_json` (the same bytes as :func:`write_json`)."""
    return write_text(path, dumps_db_json(db))


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
