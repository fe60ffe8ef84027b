"""The data root: where upstream fixtures are read in place.

A data root is a folder holding upstream releases in upstream layout (``eva-0.1.3/``,
``eva-2.1.0/``, ``tau2-17e07b1/``, ``tau2-v0.2.0/``, ``nemo-1a83139/``; the list is
``upstream_pins.json``). It is chosen by ``--data-root``, else ``$EVAL_DATA_ROOT``, else ``./data``.
Files whose SHA-256 differs from the pinned upstream sums are accepted with one warning line.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from engine.util.errors import DataRootError
from engine.util.safepaths import MAX_DATA_BYTES, check_regular, contained

ENV_VAR = "EVAL_DATA_ROOT"
DEFAULT = "data"
PINS_FILE = Path(__file__).resolve().parents[1] / "upstream_pins.json"


def resolve_data_root(explicit: str | os.PathLike[str] | None = None) -> Path:
    """Return the data root as an absolute path.

    Order: ``explicit`` (the ``--data-root`` option), then ``$EVAL_DATA_ROOT``, then ``./data``.
    Raises DataRootError when the folder does not exist, with a hint to run ``make data``.
    """
    chosen = explicit or os.environ.get(ENV_VAR) or DEFAULT
    root = Path(chosen).expanduser().resolve()
    if not root.is_dir():
        how = "--data-root" if explicit else (ENV_VAR if os.environ.get(ENV_VAR) else "the default ./data")
        raise DataRootError(
            f"data root {root} (from {how}) {'is not a directory' if root.exists() else 'does not exist'}; "
            "run `make data` or pass --data-root DIR"
        )
    return root


@cache
def pins() -> dict[str, dict[str, Any]]:
    """Pinned upstream releases: ``{release_dir: {repo, commit, files: {relpath: sha256 hex}, ...}}``.

    Optional keys: ``tag`` (the upstream tag of ``commit``) and ``not_upstream`` (pinned files that
    only a local copy holds: a README written for the copy, a file derived from upstream code).
    """
    return json.loads(PINS_FILE.read_text(encoding="utf-8"))


#: Digests of files hashed by this process, by (device, inode, size, modification and change
#: time in ns): a run hashes its data root when it starts and again when it writes its summary.
_DIGESTS: dict[tuple[int, int, int, int, int], str] = {}
_DIGESTS_KEPT = 100_000
#: A file changed less than this long ago (ns) is hashed every time: a write landing within the
#: file system's timestamp tick after the hash would keep the same times.
_SETTLED_NS = 2_000_000_000


def sha256_file(path: Path) -> str:
    """SHA-256 hex of a file's bytes. A file this process hashed before and has seen unchanged since
    (same device, inode, size, modification and change times, the last change over 2 s before
    the hash) is answered from memory. Raises OSError when it cannot be read."""
    with path.open("rb") as fh:
        info = os.fstat(fh.fileno())
        key = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
        known = _DIGESTS.get(key)
        if known is not None:
            return known
        h = hashlib.sha256()
        for chunk in iter(lambda: fh.read(1 << 16), b""):
            h.update(chunk)
    digest = h.hexdigest()
    settled = time.time_ns() - max(info.st_mtime_ns, info.st_ctime_ns) > _SETTLED_NS
    if settled and len(_DIGESTS) < _DIGESTS_KEPT:
        _DIGESTS[key] = digest
    return digest


def check_release(root: Path, release: str) -> list[str]:
    """Compare ``root/release`` with its pinned sums.

    Returns the relative paths that are missing or differ (empty when the copy is pristine).
    Raises KeyError for a release that is not pinned.
    """
    spec = pins()[release]
    bad: list[str] = []
    for rel, digest in sorted(spec["files"].items()):
        try:  # only a regular file inside the root is hashed (no FIFO, no link out of it)
            path = contained(root, f"{release}/{rel}")
            check_regular(path, MAX_DATA_BYTES)
        except OSError:
            bad.append(rel)
            continue
        if sha256_file(path) != digest:
            bad.append(rel)
    return bad


_warned: set[tuple[str, str]] = set()


def warn_if_modified(root: Path, release: str, warn: Callable[[str], None]) -> None:
    """Emit at most one warning line per (root, release) when files differ from the pins.

    A user's own edited data root is accepted, never refused; the warning says how many files differ.
    """
    key = (str(root), release)
    if key in _warned or release not in pins() or not (root / release).is_dir():
        return
    _warned.add(key)
    bad = check_release(root, release)
    if bad:
        warn(
            f"warning: {root / release} differs from the pinned upstream {release} in {len(bad)} "
            f"file(s) (first: {bad[0]}); results may not be comparable with published ones"
        )
