"""Atomic artifact writes: every file lands whole or not at all.

Each writer puts the bytes in a temporary file in the target's own directory, then
``os.replace``s it over the target (atomic on POSIX within one filesystem). A reader — or a
resumed run after SIGKILL — therefore sees either the old file or the new one, never a torn one.

Durability (after an OS crash or a power loss):

- :func:`write_bytes` and the single-file writers fsync the file and its directory (two syncs per
  file; for the few run-level files: ``summary.json``, ``run.json``...);
- :class:`FolderWrite` writes the many files of one result folder without a sync each;
  :func:`commit_folders` then makes the files of MANY such folders durable with one sync
  (:func:`durable_sync`), renames their marker files (``session.json``, ``metrics.json``) into
  place in order, and syncs once more: a marker is only ever visible over files whose bytes are on
  disk, and once :func:`commit_folders` returns the markers are on disk too (group commit: two
  syncs per batch of folders, ``engine.util.group_commit``).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import math
import os
import secrets
import stat
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import orjson

from engine.util.canonical_orjson import floats_of


def _fsync_dir(directory: Path | str) -> None:
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
    fd, tmp = _temp_beside(path)
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


def json_bytes(obj: Any) -> bytes:
    """:func:`dumps_json`'s text as UTF-8 bytes (a lone surrogate becomes ``?``)."""
    try:
        return orjson.dumps(obj, default=str, option=_ORJSON_INDENT)
    except TypeError:
        return _stdlib_text(obj).encode("utf-8", "replace")


def dumps_json(obj: Any) -> str:
    """Stable, readable JSON: 2-space indent, keys in insertion order, non-ASCII kept, ``default=str``.

    The text of ``json.dumps(obj, indent=2, ensure_ascii=False, default=str)`` plus a newline,
    written by orjson (about 25x faster than the standard library's indenting encoder, which has
    no C implementation). Two differences, both in floats: one in exponent form is written without
    a leading zero in its exponent (``1e-7``, not ``1e-07``: the same value), and NaN or an infinity,
    which JSON cannot hold, is written ``null`` (as the protocol's frames carry it; the standard
    library writes ``NaN``, which JSON readers refuse). A DB's file keeps them:
    :func:`db_json_bytes`. What orjson refuses (keys that are not strings, integers beyond 64 bits,
    lone surrogates) is written by the standard library.
    """
    try:
        return orjson.dumps(obj, default=str, option=_ORJSON_INDENT).decode("utf-8")
    except TypeError:
        return _stdlib_text(obj)


def db_json_bytes(db: Any) -> bytes:
    """A DB's file: :func:`json_bytes`, except that a DB holding NaN or an infinity is written as
    the standard library writes it (``NaN``, ``Infinity``), so the DB read back from its file (a
    rescore, a resume's scoring) is the session's DB and has its hash."""
    data = json_bytes(db)
    if b"null" in data and not _all_finite(db):
        return _stdlib_text(db).encode("utf-8", "replace")
    return data


def _stdlib_text(obj: Any) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n"


def _all_finite(obj: Any) -> bool:
    """False when a float in ``obj`` is NaN or infinite. Only asked when orjson's text holds a
    ``null`` (every DB with an empty field): the floats of a DB of plain JSON types are collected
    level by level (``engine.util.canonical_orjson.floats_of``: 22 us for an eva DB), anything else
    is asked of the standard library's C encoder, which refuses them with ``allow_nan=False`` (76
    us for the same DB)."""
    if isinstance(obj, dict) and (floats := floats_of(obj)) is not None:
        return all(map(math.isfinite, floats))
    try:
        json.dumps(obj, allow_nan=False, default=str, separators=(",", ":"))
    except ValueError:
        return False
    return True


#: Types the standard library writes with ``default=str`` go to ``default=str`` in orjson too.
_ORJSON_INDENT = (
    orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_INDENT_2
    | orjson.OPT_APPEND_NEWLINE
)


def write_json(path: Path, obj: Any) -> Path:
    """Atomically write ``obj`` as indented JSON (see :func:`dumps_json`)."""
    return write_text(path, dumps_json(obj))


#: ``json.dumps(row, ensure_ascii=False, default=str)`` made once (json.dumps builds an encoder
#: on every call given options).
_JSONL_ROW = json.JSONEncoder(ensure_ascii=False, default=str)


def dumps_jsonl(rows: Iterable[Any]) -> str:
    """One compact JSON object per line (``default=str``)."""
    encode = _JSONL_ROW.encode
    return "".join(encode(r) + "\n" for r in rows)


def write_jsonl(path: Path, rows: Iterable[Any]) -> Path:
    """Atomically write one compact JSON object per line (:func:`dumps_jsonl`)."""
    return write_text(path, dumps_jsonl(rows))


#: The largest file :func:`read_json` reads (64 MiB): a run's records are kilobytes, a session's
#: transcript or DB a few megabytes; a larger file (or a device that never ends) is refused.
MAX_READ_BYTES = 64 * 1024 * 1024

#: The deepest nesting of arrays and objects :func:`read_record` accepts (a record is a few levels
#: deep; the standard library's parser itself gives up near the interpreter's recursion limit).
MAX_RECORD_DEPTH = 256


class UnreadableFile(ValueError):
    """A file :func:`read_json` refuses: not a regular file, too large, nested too deeply, holding
    a non-finite number (:func:`read_record`), a dangling symbolic link. Its message is the
    reason, in one line."""


def read_bytes_bounded(path: Path, limit: int = MAX_READ_BYTES) -> bytes:
    """The bytes of the regular file at ``path`` (symbolic links followed), at most ``limit``.

    Never blocks and never reads without end: the file is opened non-blocking and checked with
    fstat, so a FIFO, a device (``/dev/zero``), a socket or a directory is refused
    (:class:`UnreadableFile`), as is a file larger than ``limit``. A missing file raises
    FileNotFoundError; a dangling symbolic link raises :class:`UnreadableFile`; other
    OS failures (a symbolic link loop, no permission) raise OSError."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | _O_CLOEXEC)
    except FileNotFoundError:
        if os.path.islink(path):
            raise UnreadableFile(f"a dangling symbolic link (to {os.readlink(path)})") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnreadableFile(f"not a regular file ({_file_kind(st.st_mode)})")
        if st.st_size > limit:
            raise UnreadableFile(f"too large ({st.st_size} bytes; the limit is {limit})")
        chunks: list[bytes] = []
        size = 0
        while True:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:  # grew while read
                raise UnreadableFile(f"too large (over {limit} bytes)")
        return b"".join(chunks)
    finally:
        os.close(fd)


def _file_kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a file"


def _no_constant(name: str) -> Any:
    raise UnreadableFile(f"holds a non-finite number ({name})")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise UnreadableFile(f"holds a non-finite number ({text[:40]})")
    return value


def read_json(path: Path, finite: bool = False) -> Any:
    """Parse a JSON file read by :func:`read_bytes_bounded` (a regular file, at most
    :data:`MAX_READ_BYTES`); raises OSError / UnicodeDecodeError / json.JSONDecodeError as is
    (callers decide), :class:`UnreadableFile` (a ValueError) for a file refused or nested beyond
    what the parser can hold. ``finite``: refuse ``NaN`` / ``Infinity`` and a number beyond a
    float's range too (a record; a DB's file may hold them, :func:`db_json_bytes`)."""
    text = read_bytes_bounded(path).decode("utf-8")
    try:
        if finite:
            return json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
        return json.loads(text)
    except RecursionError:
        raise UnreadableFile("nested too deeply") from None


def loads_bounded(text: str, max_depth: int = MAX_RECORD_DEPTH) -> Any:
    """The JSON value of ``text`` (a command-line argument, a small document), refusing what the
    parser cannot hold: raises json.JSONDecodeError as is, :class:`UnreadableFile` (one line) for
    nesting deeper than ``max_depth`` levels or beyond the interpreter's recursion limit, a
    non-finite number (``NaN``, ``1e999``), or an integer longer than Python converts (4,300
    digits by default)."""
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
    except RecursionError:
        raise UnreadableFile("nested too deeply") from None
    except UnreadableFile:
        raise
    except json.JSONDecodeError:
        raise
    except ValueError as err:  # an integer of more digits than int() converts
        raise UnreadableFile(f"an integer too long ({str(err).split(':')[-1].strip()})") from None
    if _depth_over(value, max_depth):
        raise UnreadableFile(f"nested too deeply (over {max_depth} levels)")
    return value


def read_record(path: Path) -> Any:
    """A record file (``metrics.json``, ``session.json``, ``run.json``, ``summary.json``...):
    :func:`read_json` with ``finite``, and at most :data:`MAX_RECORD_DEPTH` levels of nesting."""
    body = read_json(path, finite=True)
    if _depth_over(body, MAX_RECORD_DEPTH):
        raise UnreadableFile(f"nested too deeply (over {MAX_RECORD_DEPTH} levels)")
    return body


def _depth_over(body: Any, limit: int) -> bool:
    """Whether arrays / objects in ``body`` nest deeper than ``limit`` (iterative: no recursion)."""
    stack = [(body, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: Iterable[Any] = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def read_jsonl(path: Path) -> list[Any]:
    """Parse a JSON-lines file (blank lines skipped); raises ValueError naming the line (from 1)
    of a line that does not parse, OSError / UnicodeDecodeError as is."""
    out = []
    for number, line in enumerate(read_bytes_bounded(path).decode("utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError as err:
            raise ValueError(f"line {number}: {err}") from None
    return out


def _load_syncfs() -> Any:
    """libc's ``syncfs`` (Linux), or None where there is none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        func = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return None
    func.argtypes = [ctypes.c_int]
    func.restype = ctypes.c_int
    return func


_SYNCFS = _load_syncfs()


def _syncfs(fd: int) -> bool:
    """syncfs(2) of the filesystem holding ``fd`` (the GIL is released meanwhile); True when done,
    False where it is missing or failed (the caller then fsyncs file by file)."""
    return _SYNCFS is not None and _SYNCFS(fd) == 0


def _temp_beside(path: Path) -> tuple[int, Path]:
    """A new temporary file next to ``path`` (``.<name>.<random>.tmp``), open for writing, with
    the permissions of any file the user creates (0o666 less the umask: ``tempfile.mkstemp``'s
    0o600 would hide a run's summary from the user's group). Returns (descriptor, path)."""
    while True:
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_CLOEXEC, 0o666), tmp
        except FileExistsError:
            continue


def _write_new(path: Path | str, data: bytes) -> None:
    """Write ``data`` to ``path`` in place (created or truncated; mode 0o666 less the umask)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _O_CLOEXEC, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def durable_sync(folder: Path | str, files: Iterable[Path | str], dirs: Iterable[Path | str]) -> None:
    """Make the bytes of ``files`` and the entries of ``dirs`` durable with one sync: on Linux one
    syncfs(2) of the filesystem holding ``folder`` (it also writes out whatever else is pending on
    that filesystem, so it waits for other programs' large writes there too); elsewhere, or when
    it fails, an fsync of each file then of each directory. Raises OSError when ``folder`` cannot
    be opened."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        if _syncfs(fd):
            return
    finally:
        os.close(fd)
    for path in files:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    for directory in dirs:
        _fsync_dir(directory)


class FolderWrite:
    """The files of one result folder (and its sub-folders), made durable together.

    A ``marker`` file (``session.json``, ``metrics.json``: its presence says the folder is
    complete) is written under a temporary name (``.<name>.tmp``) and stays there until
    :meth:`commit` (or :func:`commit_folders`, for many folders at once), which makes every file
    durable with ONE sync (:func:`durable_sync`), only then renames the markers into place, in the
    order they were put, and syncs again. A crash at any point therefore never leaves a marker over
    a missing or torn file, and a folder whose commit returned stays complete through a power cut
    (a crash before that may leave it incomplete: it is then redone).

    The other files: in a folder the caller made ``incomplete`` (no marker in it:
    ``engine.results.session_files.open_folder``), each is written in place, since only a folder that
    reads as incomplete can hold a torn one and such a folder is redone; otherwise (a complete
    folder getting a new file, e.g. a rescore's ``judge_result.json``) each goes to a temporary file
    renamed over the target, so it is never torn.

    Use as a context manager: leaving it by an exception (or without :meth:`commit`) removes the
    markers' temporary files. Paths given to ``put_*`` are relative to ``folder``; their folders are
    created as needed (``made``: ``folder`` itself exists already). One batch per
    folder at a time (the run's lock keeps other runs out).
    """

    def __init__(self, folder: Path, incomplete: bool = False, made: bool = False) -> None:
        self.folder = Path(folder)
        self.incomplete = incomplete
        # plain strings: a folder's dozen writes went through pathlib's joins and parents per file
        self._root = os.fspath(self.folder)
        self._files: list[str] = []
        self._dirs: dict[str, None] = {os.path.dirname(self._root) or ".": None}
        if made:  # the caller just made the folder: not made again at the first file
            self._dirs[self._root] = None
        self._markers: list[tuple[str, str]] = []

    def __enter__(self) -> FolderWrite:
        return self

    def __exit__(self, *exc: object) -> None:
        self.abandon()

    def _path_of(self, name: str | Path) -> str:
        """``folder/name``, its parent folder created (once per batch) when ``name`` has one."""
        path = os.path.join(self._root, name)
        parent = os.path.dirname(path)
        if parent not in self._dirs:
            os.makedirs(parent, exist_ok=True)
            self._dirs[parent] = None
        return path

    def put_bytes(self, name: str | Path, data: bytes, marker: bool = False) -> None:
        """Write ``folder/name`` (parents created); a ``marker`` lands at :meth:`commit`. Raises
        OSError when it cannot be written."""
        path = self._path_of(name)
        if marker:
            head, tail = os.path.split(path)
            tmp = os.path.join(head, f".{tail}.tmp")
            _write_new(tmp, data)
            self._markers.append((tmp, path))
            self._files.append(tmp)
            return
        if self.incomplete:
            _write_new(path, data)
        else:
            fd, temp = _temp_beside(Path(path))
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                os.replace(temp, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temp)
                raise
        self._files.append(path)

    def put_text(self, name: str | Path, text: str, marker: bool = False) -> None:
        """UTF-8 ``text`` (a lone surrogate becomes ``?``), as :func:`write_text`."""
        self.put_bytes(name, text.encode("utf-8", "replace"), marker)

    def put_json(self, name: str | Path, obj: Any, marker: bool = False) -> None:
        """``obj`` as :func:`dumps_json` writes it."""
        self.put_bytes(name, json_bytes(obj), marker)

    def put_db_json(self, name: str | Path, db: Any) -> None:
        """A DB as :func:`db_json_bytes` writes it."""
        self.put_bytes(name, db_json_bytes(db))

    def put_jsonl(self, name: str | Path, rows: Iterable[Any]) -> None:
        """One compact JSON object per line, as :func:`write_jsonl`."""
        self.put_text(name, dumps_jsonl(rows))

    def commit(self) -> None:
        """:func:`commit_folders` of this folder alone: one durable sync for every file put, the
        markers renamed into place in order, one more sync. Raises OSError; the markers not yet
        in place are then dropped."""
        commit_folders([self])

    def land_markers(self) -> list[str]:
        """Rename the markers into place, in the order they were put (after a sync of the files:
        :func:`commit_folders`); returns the directories that got one. Raises OSError."""
        landed: dict[str, None] = {}
        while self._markers:
            tmp, path = self._markers[0]
            os.replace(tmp, path)
            self._markers.pop(0)
            landed[os.path.dirname(path)] = None
        return list(landed)

    def abandon(self) -> None:
        """Drop the markers not yet in place (their temporary files)."""
        for tmp, _ in self._markers:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        self._markers.clear()


def commit_folders(batches: Sequence[FolderWrite], marked: Callable[[], None] | None = None) -> int:
    """Make the folder writes ``batches`` durable together (group commit): ONE
    :func:`durable_sync` of every file they put (per filesystem holding them), then each folder's
    markers renamed into place in order, then one more sync for the renamed markers. When it
    returns, every folder of ``batches`` is complete on disk, through a power cut too. Returns the
    number of syncs made (0 for no batches). ``marked``: called once the markers are renamed,
    before the second sync (a test's fault injection). Raises OSError (a folder that cannot be synced or a
    marker that cannot be renamed); the markers not yet in place are then dropped."""
    try:
        if not batches:
            return 0
        syncs = 0
        files = [p for b in batches for p in b._files]
        dirs = list(dict.fromkeys(d for b in batches for d in b._dirs))
        for folder in _one_per_filesystem(b.folder for b in batches):
            durable_sync(folder, files, dirs)
            syncs += 1
        landed = [d for b in batches for d in b.land_markers()]
        if marked is not None:
            marked()
        for folder in _one_per_filesystem(landed):
            durable_sync(folder, (), landed)
            syncs += 1
        return syncs
    finally:
        for batch in batches:
            batch.abandon()


def _one_per_filesystem(folders: Iterable[Path | str]) -> list[Path | str]:
    """One of ``folders`` per filesystem (device) holding them, in order: one syncfs covers a
    filesystem. Raises OSError for a folder that cannot be stat'ed."""
    seen: dict[int, Path | str] = {}
    for folder in folders:
        seen.setdefault(os.stat(folder).st_dev, folder)
    return list(seen.values())
