"""Data-root file access for one spec load: every file is read and parsed at most once.

Datasets are large (eva 2.1.0's is 2 MB), so ``load_domain`` shares one :class:`DataFiles` across
all scenarios of a load. A :class:`DataFiles` made with ``lean=True`` (the scenario index of a run,
``engine.spec.index``) keeps nothing per scenario: a JSON Lines dataset is indexed by byte range
(:class:`JsonlRecords`: each record is parsed when asked for, never kept) and a file named after a
record (``{id}`` in its path) is parsed each time it is read.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from engine.core.gold import resolve_pointer
from engine.core.tools.writeset import changed_outside
from engine.util.safepaths import MAX_DATA_BYTES, open_contained, read_text

_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _jsonl(text: str) -> list[Any]:
    """Records of a JSON Lines text; a bad record raises JSONDecodeError with its line in the file."""
    records, offset = [], 0
    for line in text.splitlines(keepends=True):
        if line.strip():
            try:
                records.append(json.loads(line, parse_constant=_no_constant))
            except json.JSONDecodeError as err:
                raise json.JSONDecodeError(err.msg, text, offset + err.pos) from None
        offset += len(line)
    return records


#: Data-root JSON may nest about this deep: the decoders stop at Python's recursion limit.
MAX_DEPTH = 1000


class BadContent(ValueError):
    """A data-root file that parses but cannot be used: NaN / Infinity in JSON (not JSON, and
    nothing ``final_db.json`` could hold) or nesting past :data:`MAX_DEPTH`; ``kind`` names the
    format (``JSON``) for :func:`read_error`."""

    def __init__(self, message: str, kind: str = "JSON"):
        super().__init__(message)
        self.kind = kind


def _no_constant(name: str) -> Any:
    raise BadContent(f"{name} is not a JSON number (NaN and the infinities are refused)")


def _parse(text: str, fmt: str) -> Any:
    """``text`` parsed as ``fmt``; JSON's non-finite constants raise :class:`BadContent`."""
    if fmt == "yaml":
        return yaml.load(text, Loader=_YAML_LOADER)
    if fmt == "jsonl":
        return _jsonl(text)
    if fmt == "toml":
        return tomllib.loads(text)  # TOMLDecodeError is a ValueError
    if fmt == "text":
        return text
    return json.loads(text, parse_constant=_no_constant)


class JsonlRecords(Mapping[str, Any]):
    """The records of a JSON Lines dataset by key (as str), read from the file when asked for:
    only each record's byte range is kept (about 100 bytes a record, against the parsed record's
    tens of KiB). Each lookup parses the record anew (a fresh object). Built by one streaming pass
    that parses every line (a bad line raises as :func:`_jsonl` does, with its line in the file);
    a later lookup raises OSError / ValueError if the file changed under it."""

    def __init__(self, root: Path, rel: str, key: str):
        self.root, self.rel = root, rel
        self._at: dict[str, tuple[int, int]] = {}
        offset = 0
        with open_contained(root, rel, MAX_DATA_BYTES) as fh:
            for raw in fh:
                if raw.strip():
                    try:
                        record = json.loads(raw, parse_constant=_no_constant)
                    except (json.JSONDecodeError, UnicodeDecodeError):
                        _parse(read_text(root, rel, MAX_DATA_BYTES), "jsonl")  # the error, located
                        raise
                    if isinstance(record, dict):
                        self._at.setdefault(str(record.get(key)), (offset, len(raw)))
                offset += len(raw)
        if offset > MAX_DATA_BYTES:
            raise ValueError(f"{rel} grew over the {MAX_DATA_BYTES} byte limit while read")

    def __getitem__(self, name: str) -> Any:
        start, size = self._at[name]
        with open_contained(self.root, self.rel, MAX_DATA_BYTES) as fh:
            fh.seek(start)
            return json.loads(fh.read(size), parse_constant=_no_constant)

    def __iter__(self) -> Iterator[str]:
        return iter(self._at)

    def __len__(self) -> int:
        return len(self._at)


class DataFiles:
    """Parsed data-root files by relative path (JSON, JSONL or YAML), cached per instance.

    ``lean``: keep nothing per scenario (module docstring): :meth:`dataset` of a JSON Lines file
    is a :class:`JsonlRecords`, and :meth:`file` with ``per_record`` parses without keeping."""

    def __init__(self, root: Path, lean: bool = False):
        self.root = root
        self.lean = lean
        self._files: dict[tuple[str, str], Any] = {}
        self._datasets: dict[tuple[str, str, str], Mapping[str, Any]] = {}
        self._watched: dict[int, tuple[str, Any, str]] = {}
        self._record_files: set[str] = set()

    def file(self, rel: str, fmt: str | None = None, per_record: bool = False) -> Any:
        """Parsed content of ``root/rel``; ``fmt`` is json, jsonl, yaml, toml or text (default: from
        the extension; ``.md`` and ``.txt`` are text, returned as a str). ``per_record``: the file
        belongs to one dataset record (its path was made from the record's id); a lean instance
        parses it at every call and keeps nothing.

        ``rel`` (after any ``{eva_id}`` substitution) must resolve, symlinks included, inside the data
        root to a regular file of at most MAX_DATA_BYTES (engine.util.safepaths). Raises FileNotFoundError /
        OSError (UnsafePathError) when unreadable, ValueError or yaml.YAMLError for bad content
        (NaN / Infinity in JSON and nesting past :data:`MAX_DEPTH` are bad content).
        """
        if fmt is None:
            fmt = format_of(rel)
        if (rel, fmt) in self._files:
            return self._files[(rel, fmt)]
        text = read_text(self.root, rel, MAX_DATA_BYTES)  # inside the root, a regular file, bounded
        try:
            content = _parse(text, fmt)
        except RecursionError:  # a file nested deeper than Python's recursion limit
            kind = {"yaml": "YAML", "toml": "TOML"}.get(fmt, "JSON")
            raise BadContent(f"nested too deeply (more than about {MAX_DEPTH} levels)", kind) from None
        if not (self.lean and per_record):
            self._files[(rel, fmt)] = content
        else:
            self._record_files.add(rel)
        return content

    def take_record_files(self) -> set[str]:
        """The per-record files a lean instance parsed since the last call (and forget them)."""
        taken, self._record_files = self._record_files, set()
        return taken

    def watch(self, rel: str, value: Any) -> None:
        """Remember ``value`` (a DB parsed from ``rel``, shared by every session that starts from it)
        as it is now, so :meth:`changed` can tell whether anything wrote into it."""
        if isinstance(value, dict) and id(value) not in self._watched:
            self._watched[id(value)] = (rel, value, json.dumps(value, sort_keys=True, default=str))

    def unwatch(self, rels: set[str]) -> None:
        """Stop watching the DBs parsed from ``rels`` (one scenario's own files, checked and let go)."""
        self._watched = {k: v for k, v in self._watched.items() if v[0] not in rels}

    def changed(self, only: set[str] | None = None) -> list[tuple[str, list[str]]]:
        """``(file, changed paths)`` of every watched DB (of the files ``only``, when given) that is
        no longer as it was parsed: a tool changed a part of a shared DB its ``writes`` do not
        declare (sessions would see each other's changes, and an expected DB replayed from it would
        drift with them)."""
        out = []
        for rel, value, text in self._watched.values():
            if only is not None and rel not in only:
                continue
            if json.dumps(value, sort_keys=True, default=str) != text:
                out.append((rel, changed_outside(json.loads(text), value, [])[:5]))
        return out

    def dataset(self, spec: Mapping[str, Any]) -> Mapping[str, Any]:
        """``{record key value (as str): record}`` for a dataset spec ``{path, format?, key?,
        pointer?}`` (``pointer``: where the records sit inside the file, e.g. ``/scenarios``).

        A file may hold a list of records or one record. Raises like :meth:`file`, and
        ValueError when the file holds no records or nothing at ``pointer``, holds NaN or an
        infinity (:class:`BadContent`) or nests deeper than :data:`MAX_DEPTH`.
        """
        rel, key, pointer = spec["path"], spec.get("key", "id"), spec.get("pointer", "")
        fmt = spec.get("format") or format_of(rel)
        if (rel, key, pointer) not in self._datasets and self.lean and fmt == "jsonl" and not pointer:
            self._datasets[(rel, key, pointer)] = JsonlRecords(self.root, rel, key)
        if (rel, key, pointer) not in self._datasets:
            records = self.file(rel, spec.get("format"))
            if pointer:
                try:
                    records = resolve_pointer(records, pointer)
                except KeyError:
                    raise ValueError(f"{rel} has nothing at {pointer}") from None
            if isinstance(records, dict):
                records = [records]
            if not isinstance(records, list):
                raise ValueError(f"{rel} does not hold a list of records")
            self._datasets[(rel, key, pointer)] = {str(r.get(key)): r for r in records if isinstance(r, dict)}
        return self._datasets[(rel, key, pointer)]


def format_of(rel: str) -> str:
    """The parse format a data-root file name implies: yaml, jsonl, toml, text (.md, .txt) or json."""
    for suffixes, fmt in (
        ((".yaml", ".yml"), "yaml"),
        ((".jsonl",), "jsonl"),
        ((".toml",), "toml"),
        ((".md", ".txt"), "text"),
    ):
        if rel.endswith(suffixes):
            return fmt
    return "json"


def read_error(rel: str, root: Path, err: BaseException) -> str:
    """One-line message for a data-root file that could not be used (missing, unreadable, bad content)."""
    if isinstance(err, FileNotFoundError):
        return f"{rel} not found in data root {root}"
    if isinstance(err, OSError):
        return f"cannot read {rel} in data root {root}: {err.strerror or err}"
    kind = "content"
    if isinstance(err, BadContent):
        kind = err.kind
    elif isinstance(err, json.JSONDecodeError):
        kind = "JSON"
    elif isinstance(err, yaml.YAMLError):
        kind = "YAML"
    elif isinstance(err, tomllib.TOMLDecodeError):
        kind = "TOML"
    elif isinstance(err, UnicodeDecodeError):
        kind = "UTF-8"
    detail = " ".join(str(err).split())  # one line, even for YAML's multi-line marks
    return f"{rel} in data root {root} is not valid {kind}: {detail}"
