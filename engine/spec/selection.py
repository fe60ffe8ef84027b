"""Scenario selection over a loaded domain: ``--scenarios`` / ``--domain`` (:func:`select_scenarios`)
and tau2-style tasks: ``--task-ids``, ``--task-split``, ``--num-tasks`` (:func:`select_tasks`).

The splits are the data's own: a domain whose scenario ids come from a list in a data-root file
(``scenarios.ids``, e.g. tau2's ``split_tasks.json`` at ``/base``) offers every other list at the
top of that file as a split (tau2 17e07b1: ``train``, ``test``, ``base``; telecom also ``small``
and ``full``). Domains without such a file have no splits.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from engine.core.model import Scenario
from engine.core.options import TaskSelection
from engine.util.errors import UsageError
from engine.util.untrusted import one_line

#: The most unknown names (or names of an empty selection) one error lists; the rest are counted.
LISTED = 5


def select_scenarios(
    scenarios: tuple[Scenario, ...], names: tuple[str, ...], prefix: str | None
) -> list[Scenario]:
    """Scenarios by exact ``names`` or record ids (eva: ``1.1.2``), in the given order, or by name
    ``prefix``; all when neither.

    Raises UsageError for unknown names (all of them in one error, the first :data:`LISTED` shown,
    each with a suggestion among names and record ids: the scenario a record id names is shown
    with it) or an empty selection (naming both filters when ``names`` and ``prefix`` leave none).
    """
    by_name = {s.name: s for s in scenarios}
    by_id = {s.record_id: s for s in scenarios}
    if names:
        unknown = list(dict.fromkeys(n for n in names if n not in by_name and n not in by_id))
        if unknown:
            raise UsageError(_unknown_names(unknown, scenarios))
        chosen = list({id(s): s for s in (by_name.get(n) or by_id[n] for n in names)}.values())
    else:
        chosen = list(scenarios)
    if prefix:
        chosen = [s for s in chosen if s.name.startswith(prefix)]
    if not chosen and prefix and names:
        raise UsageError(f"no scenario matches both --scenarios {_given(names)} and --domain {prefix!r}")
    if not chosen:
        raise UsageError(f"no scenario matches --domain {prefix!r}" if prefix else "no scenarios to run")
    return chosen


def _unknown_names(unknown: list[str], scenarios: tuple[Scenario, ...]) -> str:
    """The error for ``unknown`` (distinct, at least one): ``no scenario named 'x' (did you mean
    ...?)`` for one; for several ``3 names match no scenario: 'x' (did you mean ...?), 'y', 'z'``,
    past :data:`LISTED` names ``... and N more``."""
    keys = _suggestion_keys(scenarios)
    if len(unknown) == 1:
        return f"no scenario named {unknown[0]!r}{_suggestion(unknown[0], keys)}"
    shown = listed(unknown, lambda n: f"{n!r}{_suggestion(n, keys)}")
    return f"{len(unknown)} names match no scenario: {shown}"


def listed(items: Sequence[str], show: Callable[[str], str] = repr) -> str:
    """The first :data:`LISTED` of ``items`` each as ``show`` gives it, comma-separated, then
    `` and N more`` for the rest: ``'a', 'b', 'c', 'd', 'e' and 7 more``."""
    more = f" and {len(items) - LISTED} more" if len(items) > LISTED else ""
    return ", ".join(show(item) for item in items[:LISTED]) + more


def _given(names: tuple[str, ...]) -> str:
    """``names`` as given on the command line: ``'a,b'``; past :data:`LISTED` names
    ``'a,b,c,d,e,...' (12 names)``."""
    listed = ",".join(names[:LISTED])
    return repr(listed) if len(names) <= LISTED else f"{listed + ',...'!r} ({len(names)} names)"


def _suggestion_keys(scenarios: tuple[Scenario, ...]) -> dict[str, Scenario]:
    """What a did-you-mean compares with: names, record ids, and each record id spelled as a
    name (``eva_airline__1_1_2`` is closest to the id ``1.1.2`` spelled so)."""
    keys: dict[str, Scenario] = {}
    for s in scenarios:
        keys[s.name] = s
        keys[s.record_id] = s
        keys[f"{s.domain.name}__{s.record_id}".replace(".", "_").replace("-", "_")] = s
    return keys


def _suggestion(word: str, keys: dict[str, Scenario]) -> str:
    """`` (did you mean 'NAME', record 'ID'?)`` for the key of ``keys`` (:func:`_suggestion_keys`)
    closest to ``word``; empty when none is close."""
    close = difflib.get_close_matches(word, list(keys), n=1, cutoff=0.6)
    if not close:
        return ""
    s = keys[close[0]]
    return f" (did you mean {s.name!r}, record {s.record_id!r}?)"


def task_splits(loaded: Any) -> dict[str, tuple[str, ...]]:
    """The splits of ``loaded`` (an ``engine.spec.loader.LoadedDomain``): split name -> record ids
    in the file's order; ``{}`` when its ids come from no split file or that file does not read."""
    spec = loaded.domain.extra.get("spec") if isinstance(loaded.domain.extra, Mapping) else None
    ids = spec.get("scenarios", {}).get("ids") if isinstance(spec, Mapping) else None
    if not isinstance(ids, Mapping) or loaded.data is None:
        return {}
    pointer = str(ids.get("pointer", ""))
    if pointer.count("/") != 1:  # only a top-level list has sibling splits
        return {}
    try:
        content = loaded.data.file(str(ids["file"]))
    except (OSError, ValueError):
        return {}
    if not isinstance(content, dict):
        return {}
    return {str(k): tuple(str(i) for i in v) for k, v in content.items() if isinstance(v, list)}


def select_tasks(
    chosen: Sequence[Scenario], loaded: Any, tasks: TaskSelection, every: Sequence[Scenario] = ()
) -> list[Scenario]:
    """``chosen`` narrowed by ``tasks``: the scenarios whose record ids are ``tasks.task_ids`` (in
    that order), then those in split ``tasks.task_split`` (in the split's order), then the first
    ``tasks.num_tasks``. ``every``: all the spec's scenarios, when ``chosen`` is a part of them
    (``--scenarios`` / ``--domain``), so that an id of a scenario left out there is named as such.

    Raises UsageError (exit 2) for ids that name no scenario (all of them in one error, the first
    :data:`LISTED` shown, each with the nearest id), ids of scenarios ``--scenarios`` / ``--domain``
    left out (each with its name), a split the data does not have (naming those it has), ids none
    of which is in the split (naming the first :data:`LISTED`), or an empty result."""
    out = list(chosen)
    if tasks.task_ids:
        by_id = {s.record_id: s for s in out}
        unknown = list(dict.fromkeys(rid for rid in tasks.task_ids if rid not in by_id))
        left_out = {s.record_id: s for s in every if s.record_id in unknown}
        if left_out:
            shown = listed(list(left_out), lambda rid: f"{one_line(rid)!r} ({left_out[rid].name})")
            count = len(out)
            raise UsageError(
                f"--task-ids: {shown} {'is' if len(left_out) == 1 else 'are'} not among the {count} "
                f"scenario{'' if count == 1 else 's'} chosen by --scenarios / --domain"
                f"{_also_unknown([rid for rid in unknown if rid not in left_out])}"
            )
        if len(unknown) == 1:
            rid = unknown[0]
            raise UsageError(f"--task-ids: no task {one_line(rid)!r} in the selection{_nearest(rid, by_id)}")
        if unknown:
            shown = listed(unknown, lambda rid: f"{one_line(rid)!r}{_nearest(rid, by_id)}")
            raise UsageError(f"--task-ids: {len(unknown)} ids match no task in the selection: {shown}")
        out = list({rid: by_id[rid] for rid in tasks.task_ids}.values())
    if tasks.task_split is not None:
        splits = task_splits(loaded)
        if tasks.task_split not in splits:
            have = ", ".join(sorted(splits)) if splits else "none (its scenario ids come from no split file)"
            raise UsageError(
                f"--task-split: {loaded.domain.name} has no split "
                f"{one_line(tasks.task_split)!r}; splits: {have}"
            )
        order = {rid: n for n, rid in enumerate(splits[tasks.task_split])}
        out = sorted((s for s in out if s.record_id in order), key=lambda s: order[s.record_id])
        if not out and tasks.task_ids:
            absent = listed(list(dict.fromkeys(tasks.task_ids)), lambda rid: one_line(rid, 40))
            raise UsageError(
                f"--task-ids: no task of {absent} is in split {one_line(tasks.task_split)!r} of "
                f"{loaded.domain.name} (`evalctl list SPEC --task-split {one_line(tasks.task_split)}` "
                "lists its tasks)"
            )
        if not out:
            raise UsageError(
                f"--task-split: split {one_line(tasks.task_split)!r} of {loaded.domain.name} names none "
                "of the selected scenarios (its ids are not this spec's tasks)"
            )
    if tasks.num_tasks is not None:
        out = out[: tasks.num_tasks]
    if not out:
        raise UsageError("the task selection (--task-ids / --task-split / --num-tasks) leaves no scenario")
    return out


def _also_unknown(unknown: list[str]) -> str:
    """``; no task ...`` for the ids that name no scenario at all, beside those left out."""
    if not unknown:
        return ""
    return f"; and no task {listed(unknown, lambda rid: repr(one_line(rid)))} in the spec"


def _nearest(word: str, ids: Mapping[str, Scenario]) -> str:
    close = difflib.get_close_matches(word, list(ids), n=1, cutoff=0.5)
    return f" (nearest: {close[0]!r}, scenario {ids[close[0]].name})" if close else ""
