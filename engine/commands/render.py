"""``evalctl render SPEC_DIR -s NAME``: exactly what a model sees for one scenario."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

import click

from engine.core import render as templates
from engine.domains.registry import plugins
from engine.spec.loader import load_domain


def render(
    spec_dir: Path,
    scenario_name: str,
    side: Literal["agent", "user", "tools"] = "agent",
    data_root: Path | None = None,
) -> int:
    """Print the agent or user prompt of ``scenario_name`` (ending in one newline), or for side
    ``tools`` its tool schemas as indented JSON; returns 0. Raises UsageError for an unknown
    scenario (with a suggestion), SpecError for broken specs (loaded with every registered domain
    plugin)."""
    scenario = load_domain(spec_dir, data_root, plugins=plugins()).scenario(scenario_name)
    if side == "tools":
        text = json.dumps(templates.tool_schemas(scenario), indent=2, ensure_ascii=False) + "\n"
    else:
        text = templates.render(scenario, side)
        text = text if text.endswith("\n") else text + "\n"
    click.echo(text, nl=False)
    return 0
