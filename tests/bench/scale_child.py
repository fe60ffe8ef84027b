"""``evalctl`` run by the scaling benchmark (``bench_scaling``), counting its durable syncs.

``python -m tests.bench.scale_child COUNTS_JSON evalctl-args...`` runs ``cli.main`` with the
arguments and, at exit, writes ``{"syncfs": n, "fsync": m, "sync_s": s}`` to COUNTS_JSON: the
whole-filesystem syncs (``engine.util.artifacts._syncfs``, one per result folder write), the per-file /
per-folder fsyncs the run called, and the seconds spent in both (summed over threads).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import cli
from engine.util import artifacts

_COUNTS: dict[str, float] = {"syncfs": 0, "fsync": 0, "sync_s": 0.0}
_LOCK = threading.Lock()


def _counted(name: str, func: Any) -> Any:
    def wrapper(fd: int) -> Any:
        t0 = time.perf_counter()
        try:
            return func(fd)
        finally:
            with _LOCK:
                _COUNTS[name] += 1
                _COUNTS["sync_s"] += time.perf_counter() - t0

    return wrapper


def main(argv: list[str]) -> int:
    counts_path, args = Path(argv[0]), argv[1:]
    if hasattr(artifacts, "_syncfs"):  # (an evalctl before #18 has none: it fsyncs file by file)
        artifacts._syncfs = _counted("syncfs", artifacts._syncfs)
    os.fsync = _counted("fsync", os.fsync)
    try:
        return cli.main(args)
    finally:
        counts_path.write_text(json.dumps(_COUNTS), encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
