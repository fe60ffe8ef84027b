"""Spec validation: JSON Schema checks that collect every error, "did you mean" suggestions, and
``validate_specs`` (what ``evalctl validate`` runs: load + cross-checks + templates + gold replay).

Every finding is an :class:`engine.errors.Problem` printed as ``file:LINE: $.json.path: message``.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal

import jsonschema
from jsonschema.exceptions import ValidationError, best_match, relevance

from engine.errors import Problem, SpecError
from engine.model import SCHEMA_DIR
from engine.yamlload import JsonPath, YamlDoc, format_json_path

SpecKind = Literal["domain", "tools", "scenario"]


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
        known = set(err.schema.get("properties", {}))
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
        return path, err.message + did_you_mean(err.instance, [str(x) for x in err.validator_value])
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


@dataclass
class ValidationReport:
    """Outcome of ``validate_specs``.

    ``problems``: every spec finding; ``scenarios``: scenario count loaded; ``prompts``: prompts
    rendered (agent + user per scenario); ``replay``: one object per replayed scenario (``.ok``,
    ``.scenario_name``, ``.lines``); ``replay_note``: why replay did not run, if it did not.
    """

    spec_dir: str
    problems: list[Problem] = field(default_factory=list)
    scenarios: int = 0
    prompts: int = 0
    replay: list[Any] = field(default_factory=list)
    replay_note: str | None = None
    sources: dict[str, str] = field(default_factory=dict)  # scenario name -> "file:line"

    @property
    def replay_failures(self) -> list[Any]:
        return [r for r in self.replay if not r.ok]

    @property
    def ok(self) -> bool:
        return not self.problems and not self.replay_failures

    def lines(self) -> list[str]:
        """Every finding as one printable line, then the summary line."""
        out = [str(p) for p in self.problems]
        for r in self.replay_failures:
            where = self.sources.get(r.scenario_name, self.spec_dir)
            problem = "gold replay failed, the final DB differs from the expected one"
            out.append(f"{where}: $: {problem} [{r.scenario_name}]")
            if r.error:
                out.append(f"  {r.error}")
            out.extend(f"  {line}" for line in r.lines)
        out.append(self.summary())
        return out

    def summary(self) -> str:
        if self.problems:
            return f"{self.spec_dir}: {len(self.problems)} problem(s) found; specs not valid"
        if self.replay_note:
            replay = f"gold replay skipped ({self.replay_note})"
        else:
            replay = f"gold replay {len(self.replay) - len(self.replay_failures)}/{len(self.replay)}"
        return (
            f"validated {self.scenarios} scenario{'' if self.scenarios == 1 else 's'} in {self.spec_dir}: "
            "schemas ok, cross-checks ok, "
            f"{self.prompts} prompts rendered, {replay}"
        )


def validate_specs(
    spec_dir: str | Path, data_root: str | Path | None = None, *, replay: bool = True
) -> ValidationReport:
    """Load and check a spec directory; never raises for spec problems (they go in the report).

    Runs the schemas, every cross-check and both templates for every scenario (via
    ``engine.specs.load_domain``), then replays each scenario's gold trace with
    ``engine.replay.replay_gold`` unless ``replay`` is False. Raises DataRootError for a missing
    data root.
    """
    from engine.specs import load_domain  # late: specs imports this module

    report = ValidationReport(spec_dir=str(spec_dir))
    try:
        loaded = load_domain(spec_dir, data_root)
    except SpecError as err:
        report.problems = err.problems
        return report
    report.scenarios = len(loaded.scenarios)
    report.prompts = loaded.prompts_rendered
    if not replay:
        report.replay_note = "--no-replay"
        return report
    try:
        from engine.replay import replay_gold
    except ImportError:
        report.replay_note = "engine.replay is not available yet"
        return report
    for scenario in loaded.scenarios:
        report.sources[scenario.name] = f"{scenario.source.file}:{scenario.source.line}"
        if scenario.gold_trace is not None:
            report.replay.append(replay_gold(scenario))
    return report
