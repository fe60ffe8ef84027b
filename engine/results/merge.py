"""``evalctl merge RUN... --output-dir OUT``: shard runs (``--shard I/N``, one per machine or
scheduler task) combined into one run folder with one summary.

The sources must be runs of the same specs (the same spec file hashes) on the same data (the same
data-root file hashes), with the same settings
(``engine.session.settings``: sides, models, limits, scoring rules, trials; the shard and the name of the
API key variable aside), and no scenario folder in two of them. Each source's scenario folders are
linked into OUT (hard links, copies across filesystems; the sources stay as they were); the summary
is then computed from OUT's folders as at the end of any run (``engine.results.scoring_stage.finish_run``),
so it
is what one process running the same jobs would have written, wall time aside: that is the sum of
every source invocation's. ``run.json`` keeps every source invocation and adds one ``merge``
invocation whose ``args`` name the sources and their shards. OUT is locked while it is written;
each source is locked while it is read (a source still running is refused).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engine.core.records.run import RunRecord
from engine.core.records.summary import SummaryRecord
from engine.results import scoring_stage as results
from engine.results.provenance import new_invocation_id, read_run_record, run_provenance
from engine.results.rundir import LOCK_FILE, holds_a_run, lock_run_dir
from engine.results.unreadable import note, reason_of, records_text, watching
from engine.session.settings import FLAGS, OVERRIDABLE
from engine.util.artifacts import write_json
from engine.util.errors import OutputError, UsageError

#: Settings that may differ between the runs merged: the slice, and where an API key is read from.
_FREE = frozenset({"shard", *OVERRIDABLE})


def _flat(settings: Mapping[str, Any]) -> dict[str, Any]:
    """``settings`` with ``scoring`` keys as ``scoring.<name>``, the free ones left out."""
    flat = {k: v for k, v in settings.items() if k != "scoring"}
    scoring = settings.get("scoring")
    if isinstance(scoring, Mapping):
        flat.update({f"scoring.{k}": v for k, v in scoring.items()})
    return {k: v for k, v in flat.items() if k not in _FREE}


def _record(source: Path) -> RunRecord:
    if not source.is_dir():
        raise UsageError(f"merge: no run directory at {source}")
    record = read_run_record(source)
    if record is None:
        raise UsageError(f"merge: {source} is not an evalctl run directory (no readable run.json)")
    return record


def check_sources(sources: Sequence[Path], records: Sequence[RunRecord]) -> None:
    """Refuse sources that cannot make one run (UsageError, one line): other specs, other data
    (the data-root file hashes of ``run.json``: a shard run on an edited data root), other settings
    or trials, or a scenario folder present in two of them."""
    first, base = sources[0], records[0]
    want = _flat(base.settings)
    for source, record in zip(sources[1:], records[1:], strict=True):
        if record.spec_files != base.spec_files:
            raise UsageError(
                f"merge: {source} was run from {record.spec_dir}, {first} from {base.spec_dir} "
                "(other spec files); only runs of the same specs merge"
            )
        if dict(record.data_root_files) != dict(base.data_root_files):
            changed = sorted(
                name
                for name in set(record.data_root_files) | set(base.data_root_files)
                if record.data_root_files.get(name) != base.data_root_files.get(name)
            )
            raise UsageError(
                f"merge: {source} was run on other data than {first} ({len(changed)} data-root "
                f"file(s) differ, first: {changed[0]}); only runs on the same data merge"
            )
        if record.trials != base.trials:
            raise UsageError(
                f"merge: {source} was run with --trials {record.trials}, {first} with --trials {base.trials}"
            )
        got = _flat(record.settings)
        for name in sorted(set(want) | set(got)):
            if want.get(name) != got.get(name):
                flag = FLAGS.get(name, name)
                raise UsageError(
                    f"merge: {source} was run with {_setting(flag, got.get(name))}, {first} with "
                    f"{_setting(flag, want.get(name))}; only runs with the same settings merge"
                )
    owner: dict[str, Path] = {}
    for source in sources:
        for name in _folders(source):
            if name in owner:
                raise UsageError(
                    f"merge: {owner[name]} and {source} both hold {name}/ (overlapping runs: "
                    "merge the shards of one selection, each once)"
                )
            owner[name] = source
    _check_shards(sources, records)


def _setting(flag: str, value: object) -> str:
    """``--max-turns 2``, or ``no --max-turns`` for a setting left unset."""
    return f"no {flag}" if value is None else f"{flag} {value}"


def _check_shards(sources: Sequence[Path], records: Sequence[RunRecord]) -> None:
    """Shard runs merge only as a whole set: every shard of one ``N``, each once (UsageError, one
    line, naming what is missing). A merge of some shards would read as a complete run, since a
    shard run records only its own slice of the selection."""
    shards = [record.settings.get("shard") for record in records]
    if not any(shards):
        return
    if not all(shards):
        plain = sources[shards.index(None)]
        sharded = next(s for s, shard in zip(sources, shards, strict=True) if shard)
        raise UsageError(f"merge: {sharded} is a shard run and {plain} is not; merge the shards of one run")
    counts = {str(shard).split("/")[1] for shard in shards}
    if len(counts) != 1:
        raise UsageError(f"merge: the runs are shards of different splits ({', '.join(map(str, shards))})")
    count = int(counts.pop())
    have = {int(str(shard).split("/")[0]) for shard in shards}
    missing = [f"{i}/{count}" for i in range(1, count + 1) if i not in have]
    if missing:
        raise UsageError(
            f"merge: shard {', '.join(missing)} is missing (given {', '.join(map(str, shards))}); "
            f"merge all {count} shards of the run"
        )


def _folders(run_dir: Path) -> list[str]:
    """The scenario folders of a run directory (every folder but hidden ones)."""
    return sorted(p.name for p in run_dir.iterdir() if p.is_dir() and not p.name.startswith("."))


def _link_tree(src: Path, dst: Path) -> None:
    """``src`` into ``dst`` by hard links (copies where links fail: another filesystem). What is
    not a regular file or a folder (symbolic links followed: a FIFO, a device, a symbolic link that
    leads nowhere or loops) is never read: the entry itself is hard-linked (the merged run's reader
    then notes the very file its source's reader noted: one warning), or left out and noted where
    that fails."""
    special: list[str] = []

    def link(a: str, b: str) -> None:
        try:
            os.link(a, b)
        except OSError:
            shutil.copy2(a, b)

    def left_out(folder: str, names: list[str]) -> set[str]:
        skipped = set()
        for name in names:
            path = os.path.join(folder, name)
            try:
                mode = os.stat(path).st_mode
            except OSError:
                mode = 0
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                skipped.add(name)
                special.append(os.path.relpath(path, src))
        return skipped

    shutil.copytree(src, dst, copy_function=link, ignore=left_out)
    for rel in special:
        try:
            os.link(src / rel, dst / rel, follow_symlinks=False)
        except OSError as err:
            note(src / rel, f"{reason_of(err)}: left out of the merged run")


def merge_runs(
    sources: Sequence[Path],
    out: Path,
    argv: Sequence[str] | None = None,
    planned: Sequence[str] | None = None,
    labels: Sequence[str] | None = None,
) -> SummaryRecord:
    """Merge the runs in ``sources`` into ``out`` (module docstring); returns its summary.
    ``planned``: the scenario names the merged run selected (default: the sources' selections;
    a scenario of it with no result is reported missing); ``labels``: how ``run.json`` names the
    sources (default: their paths).

    Raises UsageError (one line) for fewer than one source, a source that is not a run, mismatched
    sources, sources without a readable result, or an ``out`` that already holds a run, is a
    source, lies inside one or holds one; EvalctlError when ``out`` cannot be written. A source's
    record that does not read is noted (``engine.results.unreadable``) and left out of the merged
    summary, as a run leaves it."""
    sources = [Path(s) for s in sources]
    out = Path(out)
    if not sources:
        raise UsageError("merge: give the run directories to merge")
    if len({s.resolve() for s in sources}) != len(sources):
        raise UsageError("merge: a run directory is given twice")
    if out.resolve() in {s.resolve() for s in sources}:
        raise UsageError(f"merge: --output-dir {out} is one of the runs merged; give a new folder")
    records = [_record(s) for s in sources]
    check_sources(sources, records)
    for source in sources:  # OUT inside a source would become one of its scenario folders
        if out.resolve().is_relative_to(source.resolve()) or source.resolve().is_relative_to(out.resolve()):
            inside = (out, source) if out.resolve().is_relative_to(source.resolve()) else (source, out)
            raise UsageError(
                f"merge: {inside[0]} is inside {inside[1]}; give an --output-dir outside the runs merged"
            )
    with watching() as found:
        readable = sum(len(results.scored_dirs(s)) for s in sources)
    if not readable and len(found):
        raise UsageError(f"merge: no readable results ({records_text(len(found))}, warned above) in the runs")
    if out.exists() and holds_a_run(out):
        raise UsageError(f"merge: {out} already holds a run; give another --output-dir")
    t0 = time.perf_counter()
    started = datetime.now(UTC).isoformat(timespec="milliseconds")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise OutputError(f"cannot write the run directory {out}: {err.strerror or err}") from None
    with contextlib.ExitStack() as held:
        held.enter_context(lock_run_dir(out))
        for source in sources:
            held.enter_context(lock_run_dir(source))
        named = [str(s) for s in sources] if labels is None else list(labels)
        return _write(sources, records, out, (started, t0), argv, planned, named)


def _write(
    sources: Sequence[Path],
    records: Sequence[RunRecord],
    out: Path,
    when: tuple[str, float],
    argv: Sequence[str] | None,
    planned: Sequence[str] | None,
    labels: list[str],
) -> SummaryRecord:
    base = records[0]
    started, t0 = when
    scenarios: list[str] = list(planned or [])
    for record in records:
        scenarios.extend(n for n in record.scenarios if n not in scenarios)
    settings = {**base.settings, "shard": None}
    invocation = new_invocation_id()
    shards = [r.settings.get("shard") for r in records]
    info: dict[str, Any] = {
        "invocation": invocation,
        "command": "merge",
        "spec_dir": base.spec_dir,
        "data_root": base.data_root,
        "models": base.models,
        "settings": settings,
        "trials": base.trials,
        "scenarios": scenarios,
        "min_agent_turns": (base.settings.get("scoring") or {}).get("min_agent_turns"),
        "started_at": started,
        "argv": list(argv) if argv else None,
        "args": {"sources": labels, "shards": shards, "output_dir": str(out)},
    }
    try:
        for source in sources:
            for name in _folders(source):
                if name != LOCK_FILE:
                    _link_tree(source / name, out / name)
        first = run_provenance(out, {**info, "finished_at": None, "interrupted": True})
        earlier = tuple(inv for record in records for inv in record.invocations)
        write_json(out / "run.json", replace(first, invocations=(*earlier, *first.invocations)).to_json())
        info["wall_time_s"] = round(time.perf_counter() - t0, 3)
        return results.finish_run(out, info)
    except OSError as err:
        raise OutputError(f"cannot write the merged run in {out}: {err.strerror or err}") from None
