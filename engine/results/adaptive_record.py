"""``adaptive.json``: what an adaptive-trials run (``evalctl run --trials auto``) has spent so far.

The runner writes it as the run starts (``stopped`` = ``interrupted`` until a round decides
otherwise) and after every round; ``finish_run`` puts it into the summary (``adaptive``), so a
rescore, a resume or an interrupted run keeps saying how the trials were spent, and the summary
counts as missing only the trials an adaptive run planned (``engine.scoring.summary``).
"""

from __future__ import annotations

import json
from pathlib import Path

from engine.core.records.fields import RecordError
from engine.core.records.intervals import Adaptive
from engine.util.artifacts import write_json

ADAPTIVE_FILE = "adaptive.json"


def write_adaptive(run_dir: Path, record: Adaptive) -> None:
    """Write ``record`` as ``run_dir/adaptive.json`` (atomically). Raises OSError."""
    write_json(Path(run_dir) / ADAPTIVE_FILE, record.to_json())


def read_adaptive(run_dir: Path) -> Adaptive | None:
    """The run's adaptive record; None for a run with a fixed number of trials, or a file that
    cannot be read as one (it is rewritten by the next round or resume)."""
    try:
        return Adaptive.from_json(json.loads((Path(run_dir) / ADAPTIVE_FILE).read_text(encoding="utf-8")))
    except (OSError, ValueError, RecordError):
        return None
