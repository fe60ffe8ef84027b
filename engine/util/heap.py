"""The garbage collector during a run: the specs, DBs and prompts loaded at the start live until
the end, so they are frozen out of the collector's passes while the sessions run.

Without this, every full collection (triggered by the many short-lived objects of frames, tool
calls and records) walks the whole loaded data set again: measured, about a tenth of a replay
run's CPU on eva_airline (``make bench``).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def settled() -> Iterator[None]:
    """Collect the young generations, then move every object alive now into the permanent
    generation (``gc.freeze``) so the collections during the block skip it; on leaving, unfreeze
    (the objects are collected normally again, so a process running many runs leaks nothing).
    Enter it once the specs are loaded, before the sessions start.

    Only generations 0 and 1 are collected first: the garbage the loading just made is there,
    while a full collection walks the whole heap of the process, which in a process that runs many
    runs (the test suite, an embedding program) holds far more than the run; whatever cyclic
    garbage the old generation still holds is frozen with it and collected after the block."""
    gc.collect(1)
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
