"""Run every benchmark module in this package (``bench_*.py``), each exposing ``run() -> None``."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path


def main() -> int:
    here = Path(__file__).parent
    names = sorted(m.name for m in pkgutil.iter_modules([str(here)]) if m.name.startswith("bench_"))
    only = set(sys.argv[1:])
    for name in names:
        if only and name not in only:
            continue
        print(f"== {name}")
        importlib.import_module(f"tests.bench.{name}").run()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
