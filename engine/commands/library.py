"""The verbs as functions that return their typed records instead of printing: the work of
``evalctl list/validate/run/rescore/diff/compare/report`` with every registered domain plugin.
The CLI's verbs (this package's other modules) call these, then print; the public Python API
(the top-level ``evalctl`` package) re-exports them. Nothing here prints except what the runner
itself shows (per-scenario lines on stderr, or the live display when ``progress`` is True).

Errors are the CLI's: SpecError, DataRootError, UsageError (bad input, exit 2 on the command
line), InfrastructureError (an endpoint failed its check, exit 3), OSError for unwritable output.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.domains.registry import plugins

if TYPE_CHECKING:  # imported where used: `evalctl list` must not pay for the runner
    from engine.core.options import RunOptions, TaskSelection
    from engine.core.records.summary import SummaryRecord
    from engine.results.compare import Comparison
    from engine.results.diff import ScenarioDiff
    from engine.results.rescoring import RescoreOptions, RescoreReport
    from engine.results.run_report import RunReport
    from engine.spec.loader import LoadedDomain
    from engine.spec.validate import ValidationReport

PathLike = str | Path


def _opt_path(value: PathLike | None) -> Path | None:
    return None if value is None else Path(value)


def load(spec_dir: PathLike, data_root: PathLike | None = None, *, gold: bool = True) -> LoadedDomain:
    """The spec folder ``spec_dir`` loaded and checked: its scenarios (``.scenarios``, each with
    ``name``, ``record_id``, ``description``...), tools and templates. ``data_root`` None: the
    default (``./data``, or ``$EVAL_DATA_ROOT``); ``gold`` False skips replaying the gold traces
    (what ``evalctl list`` needs). Raises SpecError (every problem found) or DataRootError."""
    from engine.spec.loader import load_domain

    return load_domain(Path(spec_dir), _opt_path(data_root), plugins=plugins(), gold=gold)


def validate(
    spec_dir: PathLike,
    data_root: PathLike | None = None,
    *,
    replay: bool = True,
    tasks: TaskSelection | None = None,
    scenarios: Sequence[str] = (),
    domain_prefix: str | None = None,
    language: str | None = None,
) -> ValidationReport:
    """Every check of ``evalctl validate``: ``.ok`` True when there is no problem, ``.problems``
    one :class:`engine.util.errors.Problem` each (file, line, JSON path, message); ``replay``
    False skips the gold-trace replay; ``scenarios`` (names or record ids), ``domain_prefix`` and
    ``tasks`` narrow the scenarios checked; ``language`` checks the domain in one of its
    languages (``evalctl run --language``). Raises DataRootError for a missing data root,
    UsageError for a bad task selection or language."""
    from engine.spec.validate import validate_specs

    return validate_specs(
        Path(spec_dir),
        _opt_path(data_root),
        replay=replay,
        plugins=plugins(),
        tasks=tasks,
        scenarios=tuple(scenarios),
        domain_prefix=domain_prefix,
        language=language,
    )


def run_options(opts: RunOptions) -> RunReport:
    """Run what ``opts`` selects with every registered domain plugin (``opts.plugins`` replaced);
    the report of ``engine.run.runner.run_cli``."""
    from engine.run.runner import run_cli

    return run_cli(replace(opts, plugins=plugins()))


def run(
    spec_dir: PathLike,
    *,
    agent: str = "replay",
    user: str = "replay",
    scenarios: Sequence[str] = (),
    domain: str | None = None,
    trials: int = 1,
    output_dir: PathLike | None = None,
    data_root: PathLike | None = None,
    base_url: str | None = None,
    api_key_env: str = "OPENAI_API_KEY",
    judge_model: str | None = None,
    concurrency: int = 8,
    progress: bool = False,
    **settings: Any,
) -> RunReport:
    """Run and score the scenarios of ``spec_dir`` as ``evalctl run`` does, in this process.

    ``agent`` / ``user``: a side spec string (``replay``, ``noop``, ``openai:MODEL``,
    ``ws://host:port``; a Python callable is turned into one by the caller, see ``evalctl.run``);
    ``scenarios``: names (default all), ``domain`` a name prefix; ``output_dir`` None: a new
    ``runs/<UTC stamp>`` folder; ``settings``: any other :class:`engine.core.options.RunOptions`
    field (``max_turns``, ``turn_timeout_s``, ``workers``...). Returns the run's
    :class:`RunReport`: ``composite_rate`` / ``strict_success_rate`` (0..1, NaN when not
    applicable), ``summary`` (:class:`SummaryRecord`), ``run_dir``, ``exit_code()``."""
    from engine.core.options import RunOptions, ScoringOptions

    scoring = ScoringOptions(judge_model=judge_model, judge_base_url=base_url, judge_api_key_env=api_key_env)
    opts = RunOptions(
        spec_dir=Path(spec_dir),
        data_root=_opt_path(data_root),
        scenarios=tuple(scenarios),
        domain_prefix=domain,
        agent=agent,
        user=user,
        base_url=base_url,
        api_key_env=api_key_env,
        concurrency=concurrency,
        output_dir=_opt_path(output_dir),
        trials=trials,
        progress=progress,
        scoring=scoring,
        **settings,
    )
    return run_options(opts)


def rescore_options(opts: RescoreOptions) -> RescoreReport:
    """Rescore as ``opts`` says, with every registered domain plugin (``opts.plugins`` replaced)."""
    import asyncio

    from engine.results.rescoring import rescore_run

    return asyncio.run(rescore_run(replace(opts, plugins=plugins())))


def rescore(
    run_dir: PathLike,
    *,
    changes: Mapping[str, Any] | None = None,
    only_errors: bool = False,
    data_root: PathLike | None = None,
) -> RescoreReport:
    """Score the stored sessions of ``run_dir`` again (``evalctl rescore``), with the scoring
    settings in ``changes`` replaced (:class:`ScoringOptions` field -> value, e.g.
    ``{"judge_model": "gpt-4.1"}``; ``judge_model`` None drops the judge). The run folder is
    rewritten; returns what was rescored and the new ``.report`` (a :class:`RunReport`)."""
    from engine.results.rescoring import RescoreOptions

    opts = RescoreOptions(
        run_dir=Path(run_dir),
        changes=dict(changes or {}),
        only_errors=only_errors,
        data_root=_opt_path(data_root),
    )
    return rescore_options(opts)


def diff(run_dir: PathLike, scenario: str | None = None) -> list[ScenarioDiff]:
    """Why each failed (scenario, trial) of ``run_dir`` failed (``evalctl diff``), or every trial
    of ``scenario``: failing signals, DB fields that differ, records added or removed, actions."""
    from engine.results.diff import diff_run

    return diff_run(Path(run_dir), scenario)


def compare(run_a: PathLike, run_b: PathLike) -> Comparison:
    """How run B differs from run A (``evalctl compare``): flipped verdicts, rate changes with
    their intervals and paired tests, whether the runs are comparable."""
    from engine.results.compare import compare_runs

    return compare_runs(Path(run_a), Path(run_b))


def report(run_dir: PathLike) -> SummaryRecord:
    """The summary of a finished run (``summary.json``, what ``evalctl report`` shows): headline
    tallies (``overall``, ``strict_tally``, ``task``), per-signal rates, the failed results."""
    from engine.results.scoring_stage import load_summary

    return load_summary(Path(run_dir))
