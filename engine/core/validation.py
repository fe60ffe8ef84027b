"""Spec validation: JSON Schema checks that collect every error, "did you mean" suggestions, and
``validate_specs`` (what ``evalctl validate`` runs: load + cross-checks + templates + gold replay).

Every finding is an :class:`engine.util.errors.Problem` printed as ``file:LINE: $.json.path: message``.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any, Literal

import jsonschema
from jsonschema.exceptions import ValidationError, best_match, relevance

from engine.core.model import SCHEMA_DIR
from engine.util.errors import Problem
from engine.util.yamlload import JsonPath, YamlDoc, format_json_path

SpecKind = Literal["domain", "tools", "scenario", "prices"]


def with_signal_enum(schema: Any, signals: Iterable[str]) -> Any:
    """A copy of ``schema`` whose ``success_signals`` item enums list ``signals`` (the signal
    registry's gating names, ``engine.scoring.registry.signal_names``): the committed schemas hold
    the built-in ones (``make schemas`` writes them; a test checks), a run's validator every
    registered one."""
    names = list(signals)

    def walk(node: Any, key: str | None = None) -> Any:
        if isinstance(node, list):
            return [walk(v) for v in node]
        if not isinstance(node, dict):
            return node
        out = {k: walk(v, k) for k, v in node.items()}
        if key == "success_signals" and isinstance(out.get("items"), dict) and "enum" in out["items"]:
            out["items"] = {**out["items"], "enum": names}
        return out

    return walk(schema)


def schema_text(kind: SpecKind, signals: Iterable[str], schema_dir: Path = SCHEMA_DIR) -> str:
    """The text of ``schemas/<kind>.schema.json`` with the signal enums of ``signals``, as the
    committed file is written (2-space JSON and a final newline)."""
    schema = json.loads((schema_dir / f"{kind}.schema.json").read_text(encoding="utf-8"))
    return json.dumps(with_signal_enum(schema, signals), indent=2, ensure_ascii=False) + "\n"


def write_schemas(signals: Iterable[str], schema_dir: Path = SCHEMA_DIR) -> None:
    """Rewrite the domain and scenario schemas' signal enums with ``signals`` (``make schemas``
    passes the built-in signals' gating names, ``engine.scoring.signals.BUILTIN_REGISTRY``)."""
    names = tuple(signals)
    kinds: tuple[SpecKind, ...] = ("domain", "scenario")
    texts = {kind: schema_text(kind, names, schema_dir) for kind in kinds}
    for kind, text in texts.items():
        (schema_dir / f"{kind}.schema.json").write_text(text, encoding="utf-8")


@cache
def schema_validator(
    kind: SpecKind, signals: tuple[str, ...] | None = None
) -> jsonschema.Draft202012Validator:
    """The compiled validator of ``schemas/<kind>.schema.json`` (draft 2020-12), built once per
    ``signals``: the names ``success_signals`` may list (None: the committed file's, the built-in
    ones)."""
    schema = json.loads((SCHEMA_DIR / f"{kind}.schema.json").read_text(encoding="utf-8"))
    if signals is not None:
        schema = with_signal_enum(schema, signals)
    return jsonschema.Draft202012Validator(schema)


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest choice (difflib), else ``''``."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _error_location(err: ValidationError) -> tuple[JsonPath, str]:
    """Path and message of one schema error; unknown keys point at the key itself."""
    path: JsonPath = tuple(err.absolute_path)
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        known = set(err.schema.get("properties", {}) if isinstance(err.schema, Mapping) else ())
        extras = [k for k in err.instance if k not in known]
        if extras:
            key = extras[0]
            return (*path, key), f"unknown key {key!r}{did_you_mean(key, known)}" + (
                f" (also unknown: {', '.join(map(repr, extras[1:]))})" if len(extras) > 1 else ""
            )
    if err.validator == "required" and isinstance(err.instance, dict):
        return path, f"missing required key: {err.message.split(' is a required')[0]}"
    if err.validator == "minItems" and path and path[-1] == "success_signals":
        return path, "success_signals is empty; it must list at least clean_exit"
    if err.validator == "enum" and isinstance(err.instance, str):
        allowed: Any = err.validator_value  # an enum error's value is the enum's list
        return path, err.message + did_you_mean(err.instance, [str(x) for x in allowed])
    return path, err.message


def schema_problems(
    doc: YamlDoc, kind: SpecKind, subject: str | None = None, signals: tuple[str, ...] | None = None
) -> list[Problem]:
    """Validate ``doc.data`` against the ``kind`` schema (``signals``: the signal names
    ``success_signals`` may list, see :func:`schema_validator`); one Problem per error, best first.

    Errors under ``oneOf``/``anyOf`` are reduced to their most relevant sub-error
    (``jsonschema.exceptions.best_match``). Duplicate YAML keys found while parsing come first.
    """
    problems = list(doc.problems)
    if doc.data is None:
        return [*problems, Problem(doc.file, 1, "$", f"empty file: expected a {kind} spec mapping", subject)]
    if not isinstance(doc.data, dict):  # the schema's errors would be about each of its oneOf branches
        return [*problems, Problem(doc.file, doc.line(()), "$", _not_a_mapping(doc.data, kind), subject)]
    errors = sorted(schema_validator(kind, signals).iter_errors(doc.data), key=relevance)
    for err in errors:
        if err.context:
            err = best_match([err]) or err
        path, message = _error_location(err)
        problems.append(Problem(doc.file, doc.line(path), format_json_path(path, doc.data), message, subject))
    return problems


def _not_a_mapping(data: Any, kind: SpecKind) -> str:
    if isinstance(data, list):
        what = "a list (its lines start with '- ')"
    else:
        what = "a single text" if isinstance(data, str) else "a single value"
    return f"the file's top level is {what}: a {kind} spec file must be a mapping (key: value lines)"


def problem_at(doc: YamlDoc, path: JsonPath, message: str, subject: str | None = None) -> Problem:
    """A Problem located at ``path`` of ``doc`` (line from the YAML marks)."""
    return Problem(doc.file, doc.line(path), format_json_path(path, doc.data), message, subject)


def check_signals(doc: YamlDoc, path: JsonPath, signals: Any, subject: str | None) -> list[Problem]:
    """``success_signals`` must contain ``clean_exit`` (emptiness and names are schema-checked)."""
    if not isinstance(signals, list):
        return []
    if signals and "clean_exit" not in signals:  # an empty list is the schema's (minItems) finding
        return [problem_at(doc, path, "success_signals must include clean_exit", subject)]
    return []
