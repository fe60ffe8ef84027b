"""Slicing a run: ``--shard I/N`` (one machine's share of a run) and the split of a run's jobs
among its worker processes (``--workers``).

The shard rule: the selected scenarios are sorted by name; the scenario at 0-based position ``p``
of that list belongs to shard ``p mod N + 1``. Shards are numbered from 1 (``1/4`` .. ``4/4``);
every trial of a scenario goes to the same shard, so a shard run's folders never overlap another
shard's and its summary lists only its own missing results. The N shards of one selection are
disjoint and together hold every scenario; the rule depends only on the names selected, so every
machine computes the same slices. Scheduler indexes that start at 0 (Kubernetes'
``JOB_COMPLETION_INDEX``) add 1.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from engine.core.model import Scenario
from engine.util.errors import UsageError

T = TypeVar("T")

_SHAPE = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` (1 <= index <= count)."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    """``"I/N"`` as a :class:`Shard`; UsageError (one line) for anything else (0-based indexes,
    I > N, N < 1, not two integers)."""
    found = _SHAPE.fullmatch(text or "")
    if found is not None:
        index, count = int(found.group(1)), int(found.group(2))
        if 1 <= index <= count:
            return Shard(index, count)
    raise UsageError(
        f"--shard {text!r}: expected I/N with 1 <= I <= N (shards are numbered from 1), e.g. --shard 1/4"
    )


def shard_scenarios(chosen: Sequence[Scenario], shard: Shard) -> list[Scenario]:
    """The scenarios of ``chosen`` that belong to ``shard`` (module rule), sorted by name. Raises
    UsageError when there are more shards than scenarios (:func:`shard_names`)."""
    by_name = {s.name: s for s in chosen}
    return [by_name[n] for n in shard_names(list(by_name), shard)]


def shard_names(names: Sequence[str], shard: Shard) -> list[str]:
    """The scenario names of ``names`` that belong to ``shard`` (module rule), sorted. Raises
    UsageError when there are more shards than scenarios, whichever shard this is: the empty ones
    are refused, and the others could then never be merged (a merge takes every shard)."""
    ordered = sorted(names)
    if shard.count > len(ordered):
        why = f"shard {shard.index} of {shard.count} is empty"
        if shard.index <= len(ordered):
            empty = f"{len(ordered) + 1}..{shard.count}"
            why = f"shards {empty} of {shard.count} are empty and this one could never be merged"
        raise UsageError(
            f"--shard {shard}: the selection has {len(ordered)} scenario(s), so {why} "
            f"(use at most {len(ordered)} shards)"
        )
    return [n for p, n in enumerate(ordered) if p % shard.count == shard.index - 1]


def split(items: Sequence[T], parts: int) -> list[list[T]]:
    """``items`` dealt round-robin into ``parts`` lists (item ``p`` to list ``p mod parts``): the
    split of a run's jobs among its worker processes; empty lists left out."""
    dealt: list[list[T]] = [[] for _ in range(max(1, parts))]
    for p, item in enumerate(items):
        dealt[p % len(dealt)].append(item)
    return [d for d in dealt if d]
