"""``run.json``: what produced a run (written by ``engine.results.provenance.run_provenance``).

Hashes are SHA-256 hex of file bytes, keyed by the file's path relative to its folder; times are
ISO 8601 (seconds, UTC); ``args`` are the parsed options as JSON values (free-form: the run
options record of the evalctl version that wrote it).

Versions (``"schema": "evalctl.run/N"``; ``tests/records/`` holds a run of each): 1 and 2 were
written without ``schema`` (1: no ``settings``, invocations without ``id`` / ``command``, the
earliest without ``hash_notes``; 2: those added); 3 says its schema. A file without ``schema`` is
read as version 2 when it has ``settings``, else as version 1, into today's record (:func:`upgrade`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine.core.records.fields import RecordError, exact_keys, get, schema_version, strings

#: The version written.
RUN_VERSION = 3
RUN_SCHEMA = f"evalctl.run/{RUN_VERSION}"


def _hashes(body: Mapping[str, Any], key: str) -> dict[str, str]:
    table = get(body, key, dict)
    if not all(isinstance(v, str) for v in table.values()):
        raise RecordError(f"{key}: not an object of hashes")
    return dict(table)


def _argv(body: Mapping[str, Any]) -> tuple[str, ...] | None:
    return None if get(body, "argv", list, None) is None else strings(body, "argv")


@dataclass(frozen=True)
class Git:
    """The evalctl checkout: ``commit`` hex, ``dirty`` when tracked files had changes."""

    commit: str
    dirty: bool

    def to_json(self) -> dict[str, Any]:
        return {"commit": self.commit, "dirty": self.dirty}

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Git:
        exact_keys(body, ("commit", "dirty"), "git")
        return cls(get(body, "commit", str), get(body, "dirty", bool))


@dataclass(frozen=True)
class Invocation:
    """One command on this run directory: ``command`` ``run`` (the first), ``resume`` or
    ``rescore``; ``id`` unique per invocation (session records name the invocation that ran them);
    ``started_at`` / ``finished_at`` ISO 8601 UTC (milliseconds), ``finished_at`` None while it
    runs (or when it was killed); ``wall_time_s`` seconds."""

    id: str
    command: str
    started_at: str | None
    finished_at: str | None
    wall_time_s: float | None
    interrupted: bool
    argv: tuple[str, ...] | None
    args: Mapping[str, Any]

    KEYS = ("id", "command", "started_at", "finished_at", "wall_time_s", "interrupted", "argv", "args")

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "command": self.command,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "wall_time_s": self.wall_time_s,
            "interrupted": self.interrupted,
            "argv": None if self.argv is None else list(self.argv),
            "args": dict(self.args),
        }

    @classmethod
    def from_json(cls, body: Any) -> Invocation:
        if not isinstance(body, dict):
            raise RecordError("invocations: not a list of objects")
        exact_keys(body, cls.KEYS, "invocation")
        return cls(
            get(body, "id", str),
            get(body, "command", str),
            get(body, "started_at", str, None),
            get(body, "finished_at", str, None),
            get(body, "wall_time_s", int, float, None),
            get(body, "interrupted", bool),
            _argv(body),
            get(body, "args", dict),
        )


@dataclass(frozen=True)
class RunRecord:
    """The provenance of a run directory.

    ``git`` None outside a git checkout; ``spec_files`` / ``templates`` / ``data_root_files``
    hashes; ``data_root_changed_from_pins`` pinned upstream files that differ or are absent;
    ``hash_notes`` one line per file left unhashed (the cap, links out of a folder, FIFOs);
    ``models`` role → model or backend string; ``settings`` what the results mean (the sides,
    models, limits and scoring rules; free-form, see ``engine.session.settings``): a resume reuses them,
    ``evalctl rescore`` replaces ``settings.scoring``; ``args`` / ``argv`` those of the latest invocation;
    ``created_at`` when the run directory was first used; ``scenarios`` every invocation's
    selection, first-seen order; ``invocations`` oldest first.
    """

    evalctl_version: str
    git: Git | None
    python: str
    spec_dir: str | None
    spec_files: Mapping[str, str]
    templates: Mapping[str, str]
    data_root: str | None
    data_root_files: Mapping[str, str]
    data_root_changed_from_pins: tuple[str, ...]
    hash_notes: tuple[str, ...]
    models: Mapping[str, Any] | None
    settings: Mapping[str, Any]
    trials: int | None
    args: Mapping[str, Any]
    argv: tuple[str, ...] | None
    created_at: str
    scenarios: tuple[str, ...]
    invocations: tuple[Invocation, ...]

    KEYS = (
        "schema",
        "evalctl_version",
        "git",
        "python",
        "spec_dir",
        "spec_files",
        "templates",
        "data_root",
        "data_root_files",
        "data_root_changed_from_pins",
        "hash_notes",
        "models",
        "settings",
        "trials",
        "args",
        "argv",
        "created_at",
        "scenarios",
        "invocations",
    )

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": RUN_SCHEMA,
            "evalctl_version": self.evalctl_version,
            "git": None if self.git is None else self.git.to_json(),
            "python": self.python,
            "spec_dir": self.spec_dir,
            "spec_files": dict(self.spec_files),
            "templates": dict(self.templates),
            "data_root": self.data_root,
            "data_root_files": dict(self.data_root_files),
            "data_root_changed_from_pins": list(self.data_root_changed_from_pins),
            "hash_notes": list(self.hash_notes),
            "models": None if self.models is None else dict(self.models),
            "settings": dict(self.settings),
            "trials": self.trials,
            "args": dict(self.args),
            "argv": None if self.argv is None else list(self.argv),
            "created_at": self.created_at,
            "scenarios": list(self.scenarios),
            "invocations": [i.to_json() for i in self.invocations],
        }

    @classmethod
    def from_json(cls, body: Any) -> RunRecord:
        """Parse a ``run.json`` body; raises RecordError for anything :meth:`to_json` would not
        write."""
        if not isinstance(body, dict):
            raise RecordError(f"not an evalctl run record: JSON {type(body).__name__}, not an object")
        body = upgrade(body)
        exact_keys(body, cls.KEYS, "run")
        git = get(body, "git", dict, None)
        return cls(
            evalctl_version=get(body, "evalctl_version", str),
            git=None if git is None else Git.from_json(git),
            python=get(body, "python", str),
            spec_dir=get(body, "spec_dir", str, None),
            spec_files=_hashes(body, "spec_files"),
            templates=_hashes(body, "templates"),
            data_root=get(body, "data_root", str, None),
            data_root_files=_hashes(body, "data_root_files"),
            data_root_changed_from_pins=strings(body, "data_root_changed_from_pins"),
            hash_notes=strings(body, "hash_notes"),
            models=get(body, "models", dict, None),
            settings=get(body, "settings", dict),
            trials=get(body, "trials", int, None),
            args=get(body, "args", dict),
            argv=_argv(body),
            created_at=get(body, "created_at", str),
            scenarios=strings(body, "scenarios"),
            invocations=tuple(Invocation.from_json(i) for i in get(body, "invocations", list)),
        )


def run_version(body: Mapping[str, Any]) -> int:
    """The version of a ``run.json`` body (module docstring); RecordError for a schema that is
    not a run record's or is of a newer evalctl."""
    if "schema" not in body:
        return 2 if "settings" in body else 1
    return schema_version(body, "run", RUN_VERSION, None)


def upgrade(body: Mapping[str, Any]) -> dict[str, Any]:
    """A ``run.json`` body of any version as today's writer would lay it out. Version 1 lacks
    what it did not record: ``settings`` empty (unknown: a resume or merge of such a run compares
    nothing), ``hash_notes`` empty, each invocation's ``id`` ``v1-<k>`` (k from 1) and
    ``command`` ``run`` for the first, ``resume`` after. RecordError as :func:`run_version`."""
    version = run_version(body)
    out = {"schema": RUN_SCHEMA, **body}
    out["schema"] = RUN_SCHEMA
    if version >= 2:
        return out
    out.setdefault("settings", {})
    out.setdefault("hash_notes", [])
    invocations = out.get("invocations")
    if isinstance(invocations, list):
        out["invocations"] = [
            {"id": f"v1-{k}", "command": "run" if k == 1 else "resume", **inv}
            if isinstance(inv, dict)
            else inv
            for k, inv in enumerate(invocations, 1)
        ]
    return out
