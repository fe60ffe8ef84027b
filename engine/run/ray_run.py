"""``evalctl run ... --ray ADDRESS``: the run's shards as Ray tasks on an existing Ray cluster,
merged into one run folder (optional extra: ``pip install 'evalctl[ray]'``).

This process (the driver) checks the input and the selection, connects to the cluster
(``ray.init(address=ADDRESS)``; ``local`` starts a one-machine cluster for this run) and cuts the
selection into shards (``engine.run.shard``): ``--workers`` of them when given, else one per CPU of
the cluster, at most one per scenario. Each shard is one Ray task (one CPU): on its node it runs
``--shard I/N`` in one process into a temporary folder and returns the folder as a gzipped tar;
the driver unpacks each into a temporary folder as it comes and, when all are back, merges them
into the run folder (``engine.results.merge``; ``run.json`` names each source ``ray:ADDRESS shard I/N``).

Every node needs the same evalctl (with the Ray extra), the spec folder and the data root at the
paths the driver gives (absolute; a shared filesystem, or the same checkout everywhere); sides
given as ``ws://`` must be reachable from the nodes. A shard whose task fails leaves its
scenarios missing in the merged summary (its error is reported); Ctrl-C cancels the tasks and
writes nothing. Nothing outside this module imports Ray.
"""

from __future__ import annotations

import io
import shutil
import socket
import sys
import tarfile
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from engine.core.options import RunOptions
from engine.core.records.summary import SummaryRecord
from engine.results.merge import merge_runs
from engine.results.rundir import fresh_default_dir, holds_a_run, select_scenarios
from engine.run.runner import run_cli
from engine.session.backends.probe import PROBE_TIMEOUT_S
from engine.spec.index import index_domain
from engine.spec.selection import select_tasks
from engine.util.errors import InfrastructureError, UsageError
from engine.util.untrusted import one_line


@dataclass
class RayOutcome:
    """What a Ray run did: the merged ``summary`` in ``run_dir``; ``failed`` shard -> error."""

    run_dir: Path
    summary: SummaryRecord | None = None
    failed: dict[str, str] = field(default_factory=dict)
    shards: int = 0


def run_shard(opts: RunOptions, shard: str) -> bytes:
    """The Ray task: run ``shard`` of ``opts`` in this process into a temporary folder; returns the
    folder (``run/``) as a gzipped tar."""
    with tempfile.TemporaryDirectory(prefix="evalctl-shard-") as tmp:
        out = Path(tmp) / "run"
        run_cli(replace(opts, shard=shard, output_dir=out, workers=1, progress=False, quiet=True))
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            tar.add(out, arcname="run", filter=lambda info: None if info.name.endswith(".lock") else info)
        return buf.getvalue()


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise UsageError("--ray needs Ray, which is not installed: pip install 'evalctl[ray]'") from None
    return ray


def _checked(opts: RunOptions) -> tuple[RunOptions, list[str], Path]:
    """The options the tasks get (absolute paths), the selected names, the run folder."""
    if opts.resume is not None:
        raise UsageError("--ray starts a new run: resume a Ray run's shards with --shard, or run it again")
    if opts.shard is not None:
        raise UsageError("--ray cuts the run into shards itself: leave --shard out")
    loaded = index_domain(opts.spec_dir, opts.data_root, plugins=opts.plugins, language=opts.language)
    chosen = select_scenarios(loaded.scenarios, opts.scenarios, opts.domain_prefix)
    if opts.tasks:
        chosen = select_tasks(chosen, loaded, opts.tasks, loaded.scenarios)
    out = opts.output_dir
    if out is not None and out.exists() and holds_a_run(out):
        raise UsageError(f"{out} already holds a run; give another --output-dir")
    absolute = replace(
        opts,
        spec_dir=Path(opts.spec_dir).resolve(),
        data_root=Path(loaded.domain.data_root).resolve(),
        scenarios=tuple(s.name for s in chosen),
        domain_prefix=None,
        output_dir=None,
    )
    return absolute, [s.name for s in chosen], out or fresh_default_dir()


def _check_reachable(address: str, timeout_s: float = PROBE_TIMEOUT_S) -> None:
    """Raise InfrastructureError (one line) when nothing accepts a TCP connection at the
    ``host:port`` of ``address`` (also ``ray://host:port``) within ``timeout_s``: ``ray.init`` keeps
    retrying such an address for minutes. ``local``, ``auto`` and addresses without a port are
    left to Ray."""
    target = address.split("://", 1)[-1].rstrip("/")
    host, sep, port = target.rpartition(":")
    if not sep or not host or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except (OSError, ValueError, OverflowError) as err:
        why = getattr(err, "strerror", None) or err
        raise InfrastructureError(
            f"--ray {address}: cannot connect to the Ray cluster: nothing answers at {host}:{port} ({why})"
        ) from None


def run_on_ray(opts: RunOptions, address: str, argv: Sequence[str] | None = None) -> RayOutcome:
    """Run ``opts`` as shards on the Ray cluster at ``address`` and merge them (module
    docstring). Raises UsageError (one line) when Ray is missing or the input is bad,
    InfrastructureError (exit 3) when the cluster cannot be reached or every shard failed."""
    ray = _import_ray()
    task_opts, names, out = _checked(opts)
    started_here = not ray.is_initialized()
    # a one-machine cluster started for this run keeps its session files (logs, sockets) in a
    # folder of its own, removed with it: Ray's default, /tmp/ray, keeps every session's
    scratch = _scratch_folder() if started_here and address == "local" else None
    try:
        if started_here:
            extra = {"_temp_dir": scratch} if scratch else {}
            _check_reachable(address)
            try:
                ray.init(
                    address=address,
                    include_dashboard=False,
                    log_to_driver=False,
                    logging_level="ERROR",
                    **extra,
                )
            except Exception as err:
                why = one_line(str(err))
                raise InfrastructureError(
                    f"--ray {address}: cannot connect to the Ray cluster: {why}"
                ) from None
        try:
            count = opts.workers if "workers" in opts.explicit else int(ray.cluster_resources().get("CPU", 1))
            count = max(1, min(count, len(names)))
            return _run_tasks(ray, task_opts, address, count, names, out, argv)
        finally:
            if started_here:
                ray.shutdown()
    finally:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)


#: Longest folder a local cluster's session files may go in: Ray puts Unix sockets 62 characters
#: further down (``session_<date>_<time>_<pid>/sockets/plasma_store``), and a socket path has at
#: most 107 bytes.
_SCRATCH_MAX = 44


def _scratch_folder() -> str | None:
    """A new folder for a local cluster's session files, in the temporary folder, else in /tmp
    when that one's path is too long for Ray's sockets; None (Ray's own default) when neither
    fits or can be made."""
    for where in (None, "/tmp"):
        try:
            folder = tempfile.mkdtemp(prefix="evalctl-ray-", dir=where)
        except OSError:
            continue
        if len(folder) <= _SCRATCH_MAX:
            return folder
        shutil.rmtree(folder, ignore_errors=True)
    return None


def _run_tasks(
    ray: Any, opts: RunOptions, address: str, count: int, names: list[str], out: Path, argv: Any
) -> RayOutcome:
    remote = ray.remote(num_cpus=1, max_retries=0)(run_shard)
    t0 = time.perf_counter()
    pending = {remote.remote(opts, f"{i}/{count}"): f"{i}/{count}" for i in range(1, count + 1)}
    outcome = RayOutcome(out, shards=count)
    with tempfile.TemporaryDirectory(prefix="evalctl-ray-") as tmp:
        sources: list[Path] = []
        labels: list[str] = []
        try:
            while pending:
                [ready], _ = ray.wait(list(pending), num_returns=1)
                shard = pending.pop(ready)
                try:
                    data = ray.get(ready)
                except Exception as err:
                    lines = str(err).strip().splitlines() or [repr(err)]
                    outcome.failed[shard] = one_line(lines[-1])
                    _say(opts, f"[ray] shard {shard} failed: {outcome.failed[shard]}")
                    continue
                target = Path(tmp) / f"shard-{shard.replace('/', '-of-')}"
                with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
                    tar.extractall(target, filter="data")
                sources.append(target / "run")
                labels.append(f"ray:{address} shard {shard}")
                _say(opts, f"[ray] shard {shard} done ({time.perf_counter() - t0:.1f}s)")
        except BaseException:
            for ref in pending:
                ray.cancel(ref, force=True)
            raise
        if not sources:
            first = next(iter(outcome.failed.values()), "no shard ran")
            raise InfrastructureError(f"--ray: every shard failed; first: {first}")
        order = sorted(range(len(sources)), key=lambda k: int(labels[k].rsplit(" ", 1)[1].split("/")[0]))
        outcome.summary = merge_runs(
            [sources[k] for k in order], out, argv, planned=names, labels=[labels[k] for k in order]
        )
    return outcome


def _say(opts: RunOptions, line: str) -> None:
    if not opts.quiet:
        print(line, file=sys.stderr, flush=True)
