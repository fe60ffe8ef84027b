"""``evalctl list SPEC_DIR``: the scenarios of a spec directory, one line each or as JSON."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

import click

from engine.commands import library
from engine.core.model import Scenario
from engine.core.options import TaskSelection
from engine.spec.selection import select_scenarios, select_tasks
from engine.util.untrusted import one_line

#: The bidi controls (embeddings, overrides, isolates, marks): written as JSON ``\\uXXXX`` escapes
#: in ``--json`` (the same strings to a JSON reader, nothing reordered on a terminal).
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def list_scenarios(
    spec_dir: Path,
    data_root: Path | None = None,
    *,
    as_json: bool = False,
    tasks: TaskSelection | None = None,
    scenarios: tuple[str, ...] = (),
    domain_prefix: str | None = None,
) -> int:
    """Print one line per scenario (``name  record_id  description``, names padded to one width),
    or with ``as_json`` a JSON list of ``{name, id, description}`` (the id under ``eva_id`` for
    specs that say ``eva_id``); returns 0.

    The specs are loaded (with every registered domain plugin) and checked first, every prompt
    rendered, the gold traces not replayed (``validate`` does that): raises
    SpecError / DataRootError like ``engine.spec.loader.load_domain``; ``scenarios`` (names or record
    ids), ``domain_prefix`` and ``tasks`` narrow the list as ``run``'s selectors do (UsageError
    for a bad selection). Names, ids and descriptions come from specs and data: in the
    text form each is put on one line with bidi and other invisible characters shown as
    ``<U+XXXX>`` (``engine.util.untrusted.one_line``), so a spec cannot reorder what is printed."""
    loaded = library.load(spec_dir, data_root, gold=False)  # no DB is scored here
    chosen: Sequence[Scenario] = loaded.scenarios
    if scenarios or domain_prefix:
        chosen = select_scenarios(loaded.scenarios, scenarios, domain_prefix)
    if tasks:
        chosen = select_tasks(chosen, loaded, tasks, loaded.scenarios)
    if as_json:
        rows = [
            {
                "name": s.name,
                "eva_id" if s.spec_id_key == "eva_id" else "id": s.record_id,
                "description": s.description,
            }
            for s in chosen
        ]
        click.echo(
            _BIDI.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(rows, indent=2, ensure_ascii=False))
        )
        return 0
    lines = [
        (one_line(s.name, None), one_line(s.record_id, None), one_line(s.description, None)) for s in chosen
    ]
    width = max((len(name) for name, _, _ in lines), default=0)
    click.echo("\n".join(f"{name:<{width}}  {rid:<7} {text}" for name, rid, text in lines))
    return 0
