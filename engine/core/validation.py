"""Spec validation: JSON Schema checks that collect every error, "did you mean" suggestions, and
``validate_specs`` (what ``evalctl validate`` runs: load + cross-checks + templates + gold replay).

Every finding is an :class:`engine.util.errors.Problem` printed as ``file:LINE: $.json.path: message``.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any, Literal

import jsonschema
from jsonschema.exceptions import ValidationError, best_match, relevance

from engine.core.model import SCHEMA_DIR
from engine.util.errors import Problem
from engine.util.yamlload import JsonPath, YamlDoc, format_json_path

SpecKind = Literal["domain", "tools", "scenario", "prices"]


@cache
def schema_validator(kind: SpecKind) -> jsonschema.Draft202012Validator:
    """The compiled validator of ``schemas/<kind>.schema.json`` (draft 2020-12), built once."""
    schema = json.loads((SCHEMA_DIR / f"{kind}.schema.json").read_text(encoding="utf-8"))
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


def schema_problems(doc: YamlDoc, kind: SpecKind, subject: str | None = None) -> list[Problem]:
    """Validate ``doc.data`` against the ``kind`` schema; one Problem per error, best first.

    Errors under ``oneOf``/``anyOf`` are reduced to their most relevant sub-error
    (``jsonschema.exceptions.best_match``). Duplicate YAML keys found while parsing come first.
    """
    problems = list(doc.problems)
    if doc.data is None:
        return [*problems, Problem(doc.file, 1, "$", f"empty file: expected a {kind} spec mapping", subject)]
    errors = sorted(schema_validator(kind).iter_errors(doc.data), key=relevance)
    for err in errors:
        if err.context:
            err = best_match([err]) or err
        path, message = _error_location(err)
        problems.append(Problem(doc.file, doc.line(path), format_json_path(path, doc.data), message, subject))
    return problems


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
