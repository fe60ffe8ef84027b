"""Field-by-field DB differences (DeepDiff) after the canonical normalisation of ``engine.dbhash``.

Lists under the domain's unordered keys are compared order-free; ``1.0 == 1`` and
``"none" == None`` hold because both sides are normalised first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from deepdiff import DeepDiff

from engine.dbhash import normalize_db
from engine.model import HashRules

DiffKind = Literal["changed", "added", "removed", "type_changed"]
_KINDS: dict[str, DiffKind] = {
    "values_changed": "changed",
    "type_changes": "type_changed",
    "dictionary_item_added": "added",
    "iterable_item_added": "added",
    "dictionary_item_removed": "removed",
    "iterable_item_removed": "removed",
}


@dataclass(frozen=True)
class DiffLine:
    """One difference: ``path`` like ``reservations.ZK3FFW.bookings[1].segments[0].seat``.

    ``kind`` is changed / added (only in actual) / removed (only in expected) / type_changed;
    ``expected`` / ``actual`` are the normalised values (None on the missing side).
    """

    path: str
    kind: DiffKind
    expected: Any
    actual: Any

    def __str__(self) -> str:
        if self.kind == "added":
            return f"{self.path}: not expected, got {self.actual!r}"
        if self.kind == "removed":
            return f"{self.path}: expected {self.expected!r}, missing"
        return f"{self.path}: expected {self.expected!r}, got {self.actual!r}"


def _path(parts: list[Any]) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "$"


def _drop_equal_records(expected: Any, actual: Any) -> None:
    """Remove, from two normalised DBs, the records (``table -> id -> record``) equal on both sides:
    DeepDiff reports nothing for them, and walking the thousands of equal records of a big shared
    DB (tau2) took seconds per scenario."""
    if not isinstance(expected, dict) or not isinstance(actual, dict):
        return
    for name in expected.keys() & actual.keys():
        x, y = expected[name], actual[name]
        if isinstance(x, dict) and isinstance(y, dict):
            for key in [k for k in x if k in y and x[k] == y[k]]:
                del x[key], y[key]


def db_diff(expected: Mapping[str, Any], actual: Mapping[str, Any], rules: HashRules) -> list[DiffLine]:
    """Differences between two DBs under ``rules``, sorted by path; ``[]`` when they hash equal."""
    unordered = frozenset(rules.unordered_lists)
    before, after = normalize_db(expected, rules), normalize_db(actual, rules)
    _drop_equal_records(before, after)

    def order_free(level: Any) -> bool:
        parts = level.path(output_format="list")
        return bool(parts) and isinstance(parts[-1], str) and parts[-1] in unordered

    diff = DeepDiff(
        before,
        after,
        ignore_order_func=order_free,
        view="tree",
        verbose_level=2,
        threshold_to_diff_deeper=0,  # a replaced record: one removed + one added
        # always pair the items of an order-free list by similarity, so a booking whose status
        # differs reads as that field, not as "bookings[0]" swapped for another booking
        cutoff_intersection_for_pairs=1,
    )
    lines: list[DiffLine] = []
    for report, kind in _KINDS.items():
        for level in diff.get(report, []):
            t1 = None if kind == "added" else level.t1
            t2 = None if kind == "removed" else level.t2
            lines.append(DiffLine(_path(level.path(output_format="list")), kind, t1, t2))
    lines.sort(key=lambda line: line.path)
    return lines
