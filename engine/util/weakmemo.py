"""Values kept per object while that object lives (keyed by identity, dropped with it): for caches
of what a scenario derives (its expected DB's hash, ...) that must not keep a scenario alive once
the run lets it go (``engine.spec.index``: scenarios are prepared for their sessions, then
released)."""

from __future__ import annotations

import threading
import weakref
from typing import Any


class PerObject:
    """``get(obj)`` / ``put(obj, value)``: the value kept for this very object (a weak reference:
    the entry goes when the object is collected). Thread-safe. Objects must support weak
    references (dataclasses without ``__slots__`` do)."""

    def __init__(self) -> None:
        self._items: dict[int, tuple[weakref.ref[Any], Any]] = {}
        self._lock = threading.Lock()

    def get(self, obj: Any) -> tuple[Any] | None:
        """``(value,)`` when one was kept for ``obj``, else None."""
        with self._lock:
            hit = self._items.get(id(obj))
        if hit is None or hit[0]() is not obj:
            return None
        return (hit[1],)

    def put(self, obj: Any, value: Any) -> None:
        key = id(obj)
        with self._lock:
            fresh = key not in self._items or self._items[key][0]() is not obj
            self._items[key] = (weakref.ref(obj), value)
        if fresh:
            weakref.finalize(obj, self._drop, key)

    def _drop(self, key: int) -> None:
        with self._lock:
            hit = self._items.get(key)
            if hit is not None and hit[0]() is None:
                del self._items[key]

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)
