"""``evalctl list SPEC_DIR``: the scenarios of a spec directory, one line each or as JSON."""

from __future__ import annotations

import json
from pathlib import Path

import click

from engine.commands import library


def list_scenarios(spec_dir: Path, data_root: Path | None = None, *, as_json: bool = False) -> int:
    """Print one line per scenario (``name  record_id  description``, names padded to one width),
    or with ``as_json`` a JSON list of ``{name, id, description}`` (the id under ``eva_id`` for
    specs that say ``eva_id``); returns 0.

    The specs are fully loaded (with every registered domain plugin) and checked first: raises
    SpecError / DataRootError like ``engine.spec.loader.load_domain``."""
    loaded = library.load(spec_dir, data_root)
    if as_json:
        rows = [
            {
                "name": s.name,
                "eva_id" if s.spec_id_key == "eva_id" else "id": s.record_id,
                "description": s.description,
            }
            for s in loaded.scenarios
        ]
        click.echo(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    width = max((len(s.name) for s in loaded.scenarios), default=0)
    click.echo("\n".join(f"{s.name:<{width}}  {s.record_id:<7} {s.description}" for s in loaded.scenarios))
    return 0
