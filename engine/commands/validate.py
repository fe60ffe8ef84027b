"""``evalctl validate SPEC_DIR``: every problem of a spec directory, then a one-line verdict."""

from __future__ import annotations

from pathlib import Path

import click

from engine.commands import library
from engine.core.options import TaskSelection
from engine.util.errors import BELOW_BAR_EXIT, OK_EXIT
from engine.util.untrusted import one_line


def validate(
    spec_dir: Path,
    data_root: Path | None = None,
    *,
    replay: bool = True,
    tasks: TaskSelection | None = None,
    language: str | None = None,
    scenarios: tuple[str, ...] = (),
    domain_prefix: str | None = None,
) -> int:
    """Print every problem as ``file:LINE: $.json.path: message [scenario]`` and the report's
    closing lines (see ``engine.spec.validate.ValidationReport.lines``); returns 1 when there is any
    problem, else 0. ``replay`` False skips the gold-trace replay. Specs are checked against every
    registered domain plugin; ``scenarios`` (names or record ids), ``domain_prefix`` and ``tasks``
    narrow the scenarios checked, as ``run``'s selectors do; ``language`` checks the domain in one
    of its languages. Raises DataRootError for a missing data root, UsageError for a bad task
    selection or language."""
    report = library.validate(
        spec_dir,
        data_root,
        replay=replay,
        tasks=tasks,
        scenarios=scenarios,
        domain_prefix=domain_prefix,
        language=language,
    )
    for line in report.lines():
        click.echo(one_line(line, None))  # a name from a spec: no control or bidi character raw
    return OK_EXIT if report.ok else BELOW_BAR_EXIT
