"""The model-call cache (``--cache DIR`` / ``$EVALCTL_CACHE``): every model request's response,
stored in one SQLite file (``DIR/calls.sqlite3``, standard library ``sqlite3``, WAL journal) so a
second run of the same command asks no model again.

A call's key (:func:`call_key`) is the SHA-256 of the canonical JSON of everything that decides its
answer: the endpoint's base URL and the request body (model, full messages, tools, every sampling
setting and seed, provider-specific fields). The API key is never part of it, nor stored. The
value is the response as JSON. Any number of processes (``--workers``) share one file: SQLite
serialises the writers (a busy file is waited for up to 30 s) and a key written twice keeps the
first answer.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

from engine.util.errors import UsageError

#: The environment variable naming the cache folder when ``--cache`` is not given.
CACHE_ENV = "EVALCTL_CACHE"
#: The SQLite file inside the cache folder.
FILE_NAME = "calls.sqlite3"

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, base_url TEXT NOT NULL, "
    "model TEXT NOT NULL, response TEXT NOT NULL, created REAL NOT NULL)"
)


#: The columns of the ``calls`` table; a file whose ``calls`` table has others is not a cache.
_COLUMNS = ("key", "base_url", "model", "response", "created")


class UnusableCache(UsageError):
    """The cache folder cannot be created, or its file is not a model-call cache (not SQLite, or
    a ``calls`` table of another schema). ``reason``: why, in one line."""

    def __init__(self, directory: Path, reason: str) -> None:
        self.directory, self.reason = directory, reason
        super().__init__(f"--cache {directory}: not a usable cache folder ({reason})")


def remove_cache_file(directory: Path) -> list[Path]:
    """Delete the cache file of ``directory`` and its SQLite journal files (``-wal``, ``-shm``),
    e.g. a broken one (``evalctl cache clear``); returns the paths removed. Raises OSError when one
    cannot be removed."""
    removed = []
    for suffix in ("", "-wal", "-shm"):
        path = Path(directory) / (FILE_NAME + suffix)
        if path.is_file() or path.is_symlink():
            path.unlink()
            removed.append(path)
    return removed


def call_key(base_url: str, request: dict[str, Any]) -> str:
    """The cache key of one request to ``base_url`` (hex SHA-256 of the canonical JSON of the URL
    and the request body; keys sorted, no whitespace)."""
    body = json.dumps(
        {"base_url": base_url.rstrip("/"), "request": request},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        default=str,
    )
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def cache_dir_from(given: str | Path | None) -> Path | None:
    """The cache folder: ``given`` (``--cache``), else ``$EVALCTL_CACHE``, else None (no cache)."""
    value = given if given not in (None, "") else os.environ.get(CACHE_ENV) or None
    return None if value is None else Path(value)


class CallCache:
    """One cache folder. ``hits`` / ``misses`` count this process's lookups. Raises
    :class:`UnusableCache` (a UsageError, one line, exit 2) when the folder cannot be created or
    its file is not a cache (not SQLite, or a ``calls`` table of another schema)."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.path = self.directory / FILE_NAME
        self.hits = 0
        self.misses = 0
        self._conn: sqlite3.Connection | None = None
        self._pid = 0
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._db()
        except (OSError, sqlite3.Error) as err:
            self.close()
            raise UnusableCache(self.directory, str(err)) from None

    def _db(self) -> sqlite3.Connection:
        """This process's connection (a forked worker opens its own)."""
        if self._conn is None or self._pid != os.getpid():
            conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(_SCHEMA)
            columns = tuple(row[1] for row in conn.execute("PRAGMA table_info(calls)"))
            if sorted(columns) != sorted(_COLUMNS):
                conn.close()
                raise sqlite3.DatabaseError(
                    f"{self.path} has a table calls of another schema: ({', '.join(columns)})"
                )
            self._conn, self._pid = conn, os.getpid()
        return self._conn

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored response of ``key``, or None (counted as a hit or a miss)."""
        row = self._db().execute("SELECT response FROM calls WHERE key = ?", (key,)).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        value = json.loads(row[0])
        return value if isinstance(value, dict) else None

    def put(self, key: str, base_url: str, model: str, response: dict[str, Any]) -> None:
        """Store ``response`` under ``key`` (a key already there keeps its first answer)."""
        text = json.dumps(response, ensure_ascii=False, separators=(",", ":"), default=str)
        self._db().execute(
            "INSERT OR IGNORE INTO calls (key, base_url, model, response, created) VALUES (?, ?, ?, ?, ?)",
            (key, base_url.rstrip("/"), model, text, time.time()),
        )

    def stats(self) -> dict[str, Any]:
        """``{"path", "entries", "bytes", "models": {"<base_url> <model>": entries}}``."""
        db = self._db()
        entries = db.execute("SELECT COUNT(*) FROM calls").fetchone()[0]
        models = {
            f"{url} {model}": n
            for url, model, n in db.execute(
                "SELECT base_url, model, COUNT(*) FROM calls GROUP BY base_url, model ORDER BY 1, 2"
            )
        }
        size = sum(p.stat().st_size for p in self.directory.glob(FILE_NAME + "*") if p.is_file())
        return {"path": str(self.path), "entries": int(entries), "bytes": size, "models": models}

    def clear(self) -> int:
        """Delete every entry; returns how many there were."""
        db = self._db()
        count = int(db.execute("SELECT COUNT(*) FROM calls").fetchone()[0])
        db.execute("DELETE FROM calls")
        db.execute("VACUUM")
        return count

    def close(self) -> None:
        if self._conn is not None and self._pid == os.getpid():
            self._conn.close()
        self._conn = None
