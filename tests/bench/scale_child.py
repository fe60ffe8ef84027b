"""``evalctl`` run by the scaling benchmark (``bench_scaling``), counting its durable syncs.

``python -m tests.bench.scale_child COUNTS_JSON evalctl-args...`` runs ``cli.main`` with the
arguments and, at exit, writes ``{"syncfs": n, "fsync": m}`` to COUNTS_JSON: the whole-filesystem
syncs (``engine.artifacts._syncfs``, one per result folder write) and the per-file / per-folder
fsyncs the run called.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

import cli
from engine import artifacts

_COUNTS = {"syncfs": 0, "fsync": 0}
_LOCK = threading.Lock()


def _counted(name: str, func: Any) -> Any:
    def wrapper(fd: int) -> Any:
        with _LOCK:
            _COUNTS[name] += 1
        return func(fd)

    return wrapper


def main(argv: list[str]) -> int:
    counts_path, args = Path(argv[0]), argv[1:]
    artifacts._syncfs = _counted("syncfs", artifacts._syncfs)  # type: ignore[assignment]
    os.fsync = _counted("fsync", os.fsync)
    try:
        return cli.main(args)
    finally:
        counts_path.write_text(json.dumps(_COUNTS), encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
