"""``evalctl rescore RUN_DIR``: score a run's stored sessions again, without running a conversation.

Every signal, the composite, ``metrics.json`` and the run's summaries are recomputed from the
artifacts each session stored when it ended (``engine.results.session_files``) and the scenarios of the
run's spec folder, with the run's recorded scoring settings changed by the options given (another
judge model or threshold, a judge added or dropped, ``--min-agent-turns``, ``--strict-match``).
``only_errors`` rescores only the results whose verdict is ``error`` (e.g. after the judge failed).
The rescore is recorded in ``run.json`` as an invocation (``command: rescore``) and its scoring
settings become the run's, so a later ``--resume`` scores the same way.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engine.core.options import ScoringOptions
from engine.core.plugin import Plugins
from engine.core.records.metrics import MetricsRecord
from engine.core.records.run import RunRecord
from engine.results import scoring_stage as results
from engine.results.provenance import hash_tree, new_invocation_id, read_run_record
from engine.results.run_report import RunReport
from engine.results.rundir import lock_run_dir
from engine.results.scorer import Scorer, off_loop
from engine.results.session_files import load_session, rescored_spent, scenario_dir, slot
from engine.results.unreadable import records_text, watching
from engine.session.backends.probe import PROBE_TIMEOUT_S, Endpoint, check_endpoints
from engine.session.settings import check_judge_key, scoring_from, scoring_settings
from engine.spec.loader import load_domain
from engine.util.errors import OutputError, UsageError


@dataclass(frozen=True)
class RescoreOptions:
    """What ``evalctl rescore`` takes: ``changes`` the scoring settings to replace (ScoringOptions
    field -> value; ``judge_model`` None drops the judge); ``only_errors`` rescores only results
    with the verdict ``error``; ``concurrency`` judge requests at once (None: the run's);
    ``data_root`` None: the run's."""

    run_dir: Path
    plugins: Plugins = field(default_factory=dict)
    changes: Mapping[str, Any] = field(default_factory=dict)
    only_errors: bool = False
    concurrency: int | None = None
    data_root: Path | None = None
    argv: tuple[str, ...] | None = None


@dataclass
class RescoreReport:
    """What a rescore did: the run report (``outcomes``, ``summary``...), the results rescored,
    those left as they were, and ``notes`` worth a line each (spec files changed since the run,
    results stored by an evalctl without session records)."""

    report: RunReport
    rescored: int = 0
    kept: int = 0
    notes: list[str] = field(default_factory=list)
    #: Record files found unreadable (warned of): a result whose session reads was scored again.
    unreadable: int = 0


def _recorded(run_dir: Path) -> RunRecord:
    if not run_dir.is_dir():
        raise UsageError(f"{run_dir}: no such run directory")
    record = read_run_record(run_dir)
    if record is None or not record.spec_dir:
        raise UsageError(f"{run_dir}: not an evalctl run directory (no readable run.json)")
    return record


def new_scoring(record: RunRecord, changes: Mapping[str, Any]) -> ScoringOptions:
    """The run's recorded scoring settings with ``changes``; a judge named anew without a URL
    uses the run's recorded ``--judge-base-url``, else its ``--base-url``."""
    recorded = record.settings.get("scoring")
    scoring = scoring_from(recorded if isinstance(recorded, dict) else {}, ScoringOptions())
    scoring = dataclasses.replace(scoring, **dict(changes))
    if scoring.judge_model and not scoring.judge_base_url:
        base_url = record.settings.get("base_url")
        scoring = dataclasses.replace(scoring, judge_base_url=base_url if isinstance(base_url, str) else None)
    return scoring


async def rescore_run(opts: RescoreOptions) -> RescoreReport:
    """Rescore the run in ``opts.run_dir`` (see the module doc); returns what it did. Raises
    UsageError for a folder that is not a run or is in use, or whose results all fail to read
    (nothing rewritten), SpecError / DataRootError when the run's specs no longer load,
    InfrastructureError when the judge endpoint fails its check. A ``metrics.json`` that does
    not read is noted (``engine.results.unreadable``) and its stored session scored again."""
    run_dir = Path(opts.run_dir)
    record = _recorded(run_dir)
    with lock_run_dir(run_dir, choice=""):
        record = _recorded(run_dir)  # as it is now that no other process writes it
        scoring = new_scoring(record, opts.changes)
        check_judge_key(scoring)
        if scoring.judge_model:
            label = f"judge endpoint ({scoring.judge_model})"
            endpoint = Endpoint(
                label, scoring.judge_base_url, scoring.judge_api_key_env, url_option="--judge-base-url"
            )
            await check_endpoints([endpoint], min(PROBE_TIMEOUT_S, scoring.judge_timeout_s))
        data_root = opts.data_root or (Path(record.data_root) if record.data_root else None)
        language = record.settings.get("language") if isinstance(record.settings, dict) else None
        loaded = load_domain(
            Path(record.spec_dir or "."),
            data_root,
            plugins=opts.plugins,
            language=language if isinstance(language, str) else None,
        )
        trials = record.trials or 1
        recorded = record.args.get("concurrency")
        concurrency = opts.concurrency or (recorded if isinstance(recorded, int) and recorded > 0 else 8)
        out = RescoreReport(RunReport(run_dir, trials=trials))
        changed = _changed_specs(record, Path(record.spec_dir or "."))
        if changed:
            out.notes.append(
                f"spec files changed since the run ({', '.join(changed[:5])}"
                f"{', ...' if len(changed) > 5 else ''}): the scenarios are scored as they are now"
            )
        started = datetime.now(UTC).isoformat(timespec="milliseconds")
        invocation = new_invocation_id()
        t0 = asyncio.get_running_loop().time()
        scorer = Scorer(run_dir, trials, scoring, concurrency, invocation)
        try:
            with watching() as found:
                await _rescore_all(loaded, record, trials, opts.only_errors, scorer, out)
        finally:
            await scorer.aclose()
        out.unreadable = len(found)
        if len(found) and not (out.rescored or out.kept or out.report.scoring_errors):
            raise UsageError(f"{run_dir}: no readable results ({records_text(len(found))}, warned above)")
        out.report.wall_s = asyncio.get_running_loop().time() - t0
        settings = {**record.settings, "scoring": scoring_settings(scoring)}
        models = {**(record.models or {}), "judge": scoring.judge_model}
        if scoring.judge_model is None:  # no judge this time: none named (not "judge": null)
            models.pop("judge")
        info = {
            "invocation": invocation,
            "command": "rescore",
            "started_at": started,
            "wall_time_s": round(out.report.wall_s, 3),
            "interrupted": False,
            "spec_dir": record.spec_dir,
            "data_root": str(loaded.domain.data_root),
            "trials": trials,
            "scenarios": list(record.scenarios),
            "min_agent_turns": scoring.min_agent_turns,
            "models": models,
            "settings": settings,
            "argv": list(opts.argv) if opts.argv else None,
            "args": {
                "scoring": scoring_settings(scoring),
                "only_errors": opts.only_errors,
                "concurrency": concurrency,
                "data_root": str(data_root) if data_root else None,
            },
        }
        try:
            out.report.summary = results.finish_run(run_dir, info, out.report.totals, trials)
        except OSError as err:
            raise OutputError(f"cannot write the run summary in {run_dir}: {err.strerror or err}") from None
        return out


def _changed_specs(record: RunRecord, spec_dir: Path) -> list[str]:
    now = hash_tree(spec_dir)
    return sorted(k for k in set(now) | set(record.spec_files) if now.get(k) != record.spec_files.get(k))


async def _rescore_all(
    loaded: Any, record: RunRecord, trials: int, only_errors: bool, scorer: Scorer, out: RescoreReport
) -> None:
    by_name = {s.name: s for s in loaded.scenarios}
    unknown = [n for n in record.scenarios if n not in by_name]
    if unknown:
        raise UsageError(
            f"{record.spec_dir} no longer has the run's scenario {unknown[0]!r}: nothing was rescored"
        )
    jobs = []
    unstored = damaged = 0
    for name in record.scenarios:
        for trial in range(1, trials + 1):
            found = slot(scorer.run_dir, name, trial, trials)
            if only_errors and not (found.metrics is not None and found.metrics.is_error):
                out.kept += found.state == "scored"
                continue
            if found.session is None:
                sdir = scenario_dir(scorer.run_dir, name, trial, trials)
                if (sdir / "session.json").exists():
                    damaged += found.state == "scored"
                else:
                    unstored += found.state == "scored"
                out.kept += found.state == "scored"
                continue
            jobs.append((by_name[name], trial, rescored_spent(found)))
    if unstored:
        out.notes.append(
            f"{unstored} result(s) have no session.json (written by an older evalctl): kept as they were"
        )
    if damaged:
        out.notes.append(
            f"{damaged} result(s) have a session.json that does not read (warned above): kept as they were"
        )

    async def one(scenario: Any, trial: int, superseded: Any) -> None:
        key = f"{scenario.name}#{trial}"
        try:
            sdir = scenario_dir(scorer.run_dir, scenario.name, trial, trials)
            _, result = await off_loop(load_session, sdir)
            metrics: MetricsRecord | None = await scorer.score(scenario, result, superseded)
        except (OSError, ValueError, RecursionError) as err:
            out.report.scoring_errors[key] = f"{type(err).__name__}: {err}"
            return
        out.rescored += 1
        out.report.add(result, metrics)

    await asyncio.gather(*(one(s, k, sup) for s, k, sup in jobs))
