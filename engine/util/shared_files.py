"""Files whose bytes equal a sibling folder's same file, hard-linked instead of written anew.

The trials of one scenario write result folders side by side (``<scenario>/trial_N/``), and most
of their files hold the same bytes in every trial: ``expected_db.json`` and ``scenario_config/``
always, and in a replayed (or otherwise deterministic) session the DB, the actions, the tool
calls and the hash file too. Creating a file costs far more than linking one (on the ext4 of our
machines a new inode is 200-300 us of system CPU, a hard link about 20 us), so
:class:`SharedFiles` remembers, per group of sibling folders and file name, the last file written
and its bytes, and makes the next file with the same name and the same bytes a hard link to it.

The bytes on disk are exactly those a write would have made; a reader cannot tell the
difference but by the link count. Safety rests on three rules:

- a link is made only when the bytes are equal (compared in full, never by a hash) and the
  source is still the very file written (same device, inode, size and modification time, a
  regular file: ``lstat``), so a source changed or replaced since is never linked to;
- only into a folder being written from scratch (``FolderWrite(incomplete=True)``): a folder
  about to be rewritten has every file unlinked first (``engine.results.session_files._clear``),
  so a file is never written in place through a link, as with ``evalctl merge``'s links;
- any failure to link (another filesystem, too many links, the source removed) falls back to
  writing the file, which then becomes the source for the next siblings.
"""

from __future__ import annotations

import os
import stat
import threading
from collections import OrderedDict
from pathlib import Path

#: (device, inode, size, modification time in ns) of a file, as ``os.lstat`` gives them.
Signature = tuple[int, int, int, int]


def _signature(st: os.stat_result) -> Signature:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class SharedFiles:
    """The last file written per ``(group, name)`` with its bytes; :meth:`link` links to it.

    ``max_file``: larger files are written, never remembered (bytes); ``max_bytes``: the bytes
    remembered in all, the least recently used groups dropped first. Thread-safe."""

    def __init__(self, max_file: int = 1 << 20, max_bytes: int = 32 << 20) -> None:
        self.max_file = max_file
        self.max_bytes = max_bytes
        self._groups: OrderedDict[str, dict[str, tuple[Path, bytes, Signature]]] = OrderedDict()
        self._kept = 0
        self._lock = threading.Lock()
        self.linked = 0
        self.written = 0

    def link(self, group: str, name: str, path: Path, data: bytes) -> bool:
        """Make ``path`` (which must not exist) a hard link to the last file :meth:`remember`-ed
        under ``(group, name)`` when that file is still the very one and holds exactly ``data``.
        Returns False (nothing done) otherwise or when linking fails: write the file then."""
        with self._lock:
            hit = self._groups.get(group, {}).get(name)
            if hit is not None:
                self._groups.move_to_end(group)
        if hit is not None and hit[1] == data and self._link(hit[0], hit[2], path):
            self.linked += 1
            return True
        return False

    def remember(self, group: str, name: str, path: Path, data: bytes) -> None:
        """``path`` was just written with ``data``: the source of the next :meth:`link` under
        ``(group, name)`` (unless larger than ``max_file``, or it cannot be stat'ed)."""
        self.written += 1
        if len(data) > self.max_file:
            return
        try:
            sig = _signature(os.lstat(path))
        except OSError:
            return
        self._remember(group, name, (path, data, sig))

    @staticmethod
    def _link(source: Path, sig: Signature, path: Path) -> bool:
        try:
            st = os.lstat(source)
            if not stat.S_ISREG(st.st_mode) or _signature(st) != sig:
                return False
            os.link(source, path, follow_symlinks=False)
        except OSError:
            return False
        return True

    def _remember(self, group: str, name: str, entry: tuple[Path, bytes, Signature]) -> None:
        with self._lock:
            files = self._groups.setdefault(group, {})
            old = files.get(name)
            self._kept += len(entry[1]) - (len(old[1]) if old is not None else 0)
            files[name] = entry
            self._groups.move_to_end(group)
            while self._kept > self.max_bytes and len(self._groups) > 1:
                _, dropped = self._groups.popitem(last=False)
                self._kept -= sum(len(e[1]) for e in dropped.values())
