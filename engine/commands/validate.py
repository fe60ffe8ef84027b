"""``evalctl validate SPEC_DIR``: every problem of a spec directory, then a one-line verdict."""

from __future__ import annotations

from pathlib import Path

import click

from engine.core.options import TaskSelection
from engine.domains.registry import plugins
from engine.spec.validate import validate_specs


def validate(
    spec_dir: Path, data_root: Path | None = None, *, replay: bool = True, tasks: TaskSelection | None = None
) -> int:
    """Print every problem as ``file:LINE: $.json.path: message [scenario]`` and the report's
    closing lines (see ``engine.spec.validate.ValidationReport.lines``); returns 1 when there is any
    problem, else 0. ``replay`` False skips the gold-trace replay. Specs are checked against every
    registered domain plugin; ``tasks`` narrows the scenarios checked. Raises DataRootError for a
    missing data root, UsageError for a bad task selection."""
    report = validate_specs(spec_dir, data_root, replay=replay, plugins=plugins(), tasks=tasks)
    for line in report.lines():
        click.echo(line)
    return 0 if report.ok else 1
