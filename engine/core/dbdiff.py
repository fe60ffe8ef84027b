"""Field-by-field DB differences (DeepDiff) after the canonical normalisation of ``engine.core.dbhash``.

Lists under the domain's unordered keys are compared order-free; ``1.0 == 1`` and
``"none" == None`` hold because both sides are normalised first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from engine.core.dbhash import canonical_json, normalize_db
from engine.core.model import HashRules

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
    """One difference: ``path`` like ``reservations.ZK3FFW.bookings[1].segments[0].seat``, with
    list positions as they are in expected_db.json (final_db.json's for an added entry);
    ``final_path`` is the path in final_db.json when an order-free list holds the entry at another
    position there (else None).

    ``kind`` is changed / added (only in actual) / removed (only in expected) / type_changed;
    ``expected`` / ``actual`` are the normalised values (None on the missing side).
    """

    path: str
    kind: DiffKind
    expected: Any
    actual: Any
    final_path: str | None = None

    def __str__(self) -> str:
        if self.kind == "added":
            return f"{self.path}: not expected, got {self.actual!r}"
        if self.kind == "removed":
            return f"{self.path}: expected {self.expected!r}, missing"
        where = f" (final_db.json: {self.final_path})" if self.final_path else ""
        return f"{self.path}{where}: expected {self.expected!r}, got {self.actual!r}"


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
    if canonical_json(expected, rules) == canonical_json(actual, rules):
        return []  # equal under the hash's normalisation: nothing to diff (and ~20x faster)
    unordered = frozenset(rules.unordered_lists)
    before = normalize_db(expected, rules, sort_lists=False)
    after = normalize_db(actual, rules, sort_lists=False)
    _drop_equal_records(before, after)

    def order_free(level: Any) -> bool:
        parts = level.path(output_format="list")
        return bool(parts) and isinstance(parts[-1], str) and parts[-1] in unordered

    from deepdiff import DeepDiff  # imported on the first diff only: it costs ~80 ms (pydantic)

    diff = DeepDiff(  # lists keep their file order: a path's index is the one in the file
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
            in_expected = _path(level.path(output_format="list"))
            in_final = _path(level.path(output_format="list", use_t2=True))
            if kind == "added":
                lines.append(DiffLine(in_final, kind, t1, t2))
            else:  # an order-free list may hold the entry at another position in final_db.json
                moved = in_final if kind != "removed" and in_final != in_expected else None
                lines.append(DiffLine(in_expected, kind, t1, t2, moved))
    lines.sort(key=lambda line: line.path)
    return lines
