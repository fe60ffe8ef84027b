"""Run many scenarios: built-in sides, bounded concurrency, scoring hand-off, progress, Ctrl-C.

``evalctl run`` calls :func:`run_cli`. One built-in side server per role serves every session of
the run (127.0.0.1, ephemeral port); an external side is given as ``ws://host:port``. Each
(scenario, trial) is one session with its own deep-copied DB; a failing session never stops the
others. After each session the runner calls ``engine.results.finish_session`` (scoring and
artifacts), and at the end, also after Ctrl-C, ``engine.results.finish_run`` (the summary).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import signal
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine import render, results
from engine.backends import BackendFactory, BackendSpec, parse_backend_spec
from engine.backends.factory import make_factory
from engine.errors import EvalctlError, UsageError
from engine.model import Scenario, SessionResult
from engine.options import RunOptions, ScoringOptions
from engine.progress import Progress
from engine.protocol import end_call_schema
from engine.records.metrics import MetricsRecord
from engine.records.summary import SummaryRecord
from engine.records.voice import VoiceSummary
from engine.rundir import check_run_dir, fresh_default_dir, open_run_dir, recorded_selection, select_scenarios
from engine.session import SessionLimits, SessionSetup, run_session
from engine.sides import builtin_side
from engine.specs import load_domain

if TYPE_CHECKING:
    from engine.voice.run import VoiceRun


@dataclass
class RunReport:
    """What a run did: ``outcomes`` pairs each finished session with its metrics (None when
    scoring failed, see ``scoring_errors``); ``skipped`` were already complete (``--resume``)."""

    run_dir: Path
    #: (repr=False: Python 3.11's asyncio.run formats the main task's result while restoring the
    #: SIGINT handler; a report holding every session's DB took seconds to show.)
    outcomes: list[tuple[SessionResult, MetricsRecord | None]] = field(default_factory=list, repr=False)
    scoring_errors: dict[str, str] = field(default_factory=dict)
    summary: SummaryRecord | None = None
    interrupted: bool = False
    skipped: int = 0
    wall_s: float = 0.0

    def overall_rate(self) -> float | None:
        """The composite success rate over the run directory (0..1), None when not applicable."""
        if self.summary is None:
            return None
        rate = self.summary.overall.rate
        return None if rate is None else float(rate)

    def exit_code(self, fail_under: float | None = None) -> int:
        """130 when interrupted; 1 when ``fail_under`` (0..1) is set and the overall rate is below
        it (or not applicable); else 0."""
        if self.interrupted:
            return 130
        if fail_under is not None:
            rate = self.overall_rate()
            if rate is None or rate < fail_under:
                return 1
        return 0

    def summary_text(self) -> str:
        """The run's ``all_summary.txt`` (empty when it was not written)."""
        path = self.run_dir / "all_summary.txt"
        return path.read_text(encoding="utf-8") if path.is_file() else ""


def _side(spec: BackendSpec, opts: RunOptions, scenarios: dict[str, Scenario]) -> BackendFactory | str:
    """An external side's URI, or the backend factory of a built-in side (raises UsageError for
    a missing API key before anything is written)."""
    if spec.kind == "external":
        return str(spec.uri)
    return make_factory(
        spec,
        scenarios=scenarios,
        base_url=opts.base_url,
        api_key_env=opts.api_key_env,
        request_timeout_s=opts.request_timeout_s,
        max_retries=opts.max_retries,
        replay_latency_s=opts.replay_latency_s,
    )


def _check_judge(scoring: ScoringOptions) -> None:
    """A configured judge needs its key variable set, like a model side: a UsageError before the
    run, not N/A verdicts after it (any non-empty value for a local server that needs none)."""
    if scoring.judge_model and not os.environ.get(scoring.judge_api_key_env):
        raise UsageError(
            f"environment variable {scoring.judge_api_key_env} is not set: it must hold the API key "
            f"for the judge {scoring.judge_model} (any non-empty value for a server that needs none)"
        )


def session_setup(scenario: Scenario) -> SessionSetup:
    """The prompts and tool schemas of ``scenario`` as the sides receive them."""
    return SessionSetup(
        agent_prompt=render.render_agent_prompt(scenario),
        user_prompt=render.render_user_prompt(scenario),
        agent_tools=render.tool_schemas(scenario),
        user_tools=[
            end_call_schema(),
            *(scenario.user_tools.openai_schemas() if scenario.user_tools else []),
        ],
    )


async def run(opts: RunOptions, voice: VoiceRun | None = None) -> RunReport:
    """Run the selected scenarios; returns the report. Ctrl-C (task cancellation) stops the
    sessions in flight, keeps the finished ones and still writes the summary (``interrupted``).
    ``voice``: the audio settings of an ``opts.voice`` run (default ``VoiceRun.create()``: the
    local TTS engine and ``$EVALCTL_ASR``'s recogniser); given for a text run, a ValueError.

    Raises SpecError / UsageError / DataRootError before anything runs when the input is bad
    (UsageError also for a voice run without a TTS engine).
    """
    if opts.concurrency < 1:
        raise UsageError("--concurrency must be at least 1")
    if opts.trials < 1:
        raise UsageError("--trials must be at least 1")
    agent_spec, user_spec = parse_backend_spec(opts.agent), parse_backend_spec(opts.user)
    loaded = load_domain(opts.spec_dir, opts.data_root, plugins=opts.plugins)
    chosen = select_scenarios(loaded.scenarios, opts.scenarios, opts.domain_prefix)
    if opts.resume is not None and not opts.resume.is_dir():
        raise UsageError(f"--resume: no run directory at {opts.resume}")
    by_name = {s.name: s for s in loaded.scenarios}
    _check_judge(opts.scoring)
    voice = _voice(opts, voice)
    sides = {role: _side(spec, opts, by_name) for role, spec in (("agent", agent_spec), ("user", user_spec))}
    run_dir = opts.resume or opts.output_dir or fresh_default_dir()
    selected = check_run_dir(run_dir, opts.resume is not None, opts.trials)
    planned = chosen
    if selected:  # resuming: the run keeps its own selection; --scenarios / --domain may narrow it
        planned = recorded_selection(loaded, selected, run_dir)
        if opts.scenarios or opts.domain_prefix:
            outside = [s.name for s in chosen if s.name not in selected]
            if outside:
                raise UsageError(
                    f"--resume: {outside[0]} is not part of the run in {run_dir} "
                    f"({len(outside)} such scenario(s)); a resumed run keeps its own selection"
                )
        else:
            chosen = planned
    setups = {s.name: session_setup(s) for s in chosen}
    started = datetime.now(UTC).isoformat(timespec="seconds")
    open_run_dir(
        run_dir,
        opts.resume is not None,
        {**_run_info(opts, loaded, planned, agent_spec, user_spec), "started_at": started},
    )
    report = RunReport(run_dir)
    jobs = [
        (s, k)
        for s in chosen
        for k in range(1, opts.trials + 1)
        if not (opts.resume and results.is_complete(run_dir, s.name, k, opts.trials))
    ]
    report.skipped = len(chosen) * opts.trials - len(jobs)
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    progress = Progress(len(jobs), enabled=opts.progress, quiet=opts.quiet, trials=opts.trials)
    try:
        async with contextlib.AsyncExitStack() as stack:
            uris = {}
            for role, side in sides.items():
                if isinstance(side, str):
                    uris[role] = side
                    continue
                if hasattr(side, "aclose"):
                    stack.push_async_callback(side.aclose)
                if role == "agent" and voice is not None:
                    uris[role] = await stack.enter_async_context(voice.agent_side(agent_spec, side))
                    continue
                uris[role] = await stack.enter_async_context(builtin_side(side, role))
            stack.enter_context(progress)
            await _run_jobs(jobs, setups, uris, opts, run_dir, report, progress, voice)
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
        report.interrupted = True
    report.wall_s = loop.time() - t0
    info = {
        **_run_info(opts, loaded, planned, agent_spec, user_spec),
        "started_at": started,
        "wall_time_s": round(report.wall_s, 3),
        "interrupted": report.interrupted,
    }
    try:
        report.summary = results.finish_run(run_dir, info)
    except OSError as err:
        unwritten = f"; {len(report.scoring_errors)} session(s) not written" if report.scoring_errors else ""
        raise EvalctlError(
            f"cannot write the run summary in {run_dir}: {err.strerror or err}{unwritten}; "
            f"results written so far are kept (`evalctl run ... --resume {run_dir}` completes the run)"
        ) from None
    return report


def _voice(opts: RunOptions, given: VoiceRun | None) -> VoiceRun | None:
    """The run's audio settings (None: a text run)."""
    if not opts.voice:
        if given is not None:
            raise ValueError("audio settings for a text run (set RunOptions.voice)")
        return None
    if given is not None:
        return given
    from engine.voice.run import VoiceRun  # the audio modules load for voice runs only

    return VoiceRun.create()


def _run_info(
    opts: RunOptions, loaded: Any, chosen: list[Scenario], agent: BackendSpec, user: BackendSpec
) -> dict[str, Any]:
    return {
        "spec_dir": str(opts.spec_dir),
        "domain": loaded.domain.name,
        "agent": str(agent),
        "user": str(user),
        "concurrency": opts.concurrency,
        "trials": opts.trials,
        "max_turns": opts.max_turns,
        "scenarios": [s.name for s in chosen],
        "data_root": str(loaded.domain.data_root),
        "min_agent_turns": opts.scoring.min_agent_turns,
        "args": _options_record(opts),
    }


def _options_record(opts: RunOptions) -> dict[str, Any]:
    """Every run option as JSON values (paths as strings), scoring options nested; no secrets
    (the API key is named by its environment variable only). Left out: ``progress`` (display only)
    and ``plugins`` (the registry's records, not an option given to the run)."""
    skip = ("progress", "plugins")
    record = {f.name: getattr(opts, f.name) for f in dataclasses.fields(opts) if f.name not in skip}
    record["scoring"] = dataclasses.asdict(opts.scoring)
    return json.loads(json.dumps(record, default=str))


async def _run_jobs(
    jobs: list[tuple[Scenario, int]],
    setups: dict[str, SessionSetup],
    uris: dict[str, str],
    opts: RunOptions,
    run_dir: Path,
    report: RunReport,
    progress: Progress,
    voice: VoiceRun | None,
) -> None:
    gate = asyncio.Semaphore(opts.concurrency)

    async def one(scenario: Scenario, trial: int) -> None:
        async with gate:
            limits = SessionLimits(
                max_duration_s=scenario.max_duration,
                turn_timeout_s=opts.turn_timeout_s,
                max_turns=opts.max_turns,
                max_tool_rounds=opts.max_tool_rounds,
                max_tool_calls_per_turn=opts.max_tool_calls_per_turn,
            )
            call = voice.call(scenario) if voice is not None else None
            try:
                result = await run_session(
                    scenario,
                    setups[scenario.name],
                    uris["agent"],
                    uris["user"],
                    limits,
                    trial,
                    wrap_agent=call.wrap if call is not None else None,
                )
            except Exception as err:  # an engine bug in one session must not stop the others
                result = SessionResult(scenario.name, trial, "error", error=f"engine error: {err!r}")
            metrics: MetricsRecord | None
            try:
                audio = voice.artifacts(call) if voice is not None and call is not None else None
                metrics = await _finish(run_dir, scenario, result, opts, audio)
            except Exception as err:  # scoring trouble is recorded, the run goes on
                metrics = None
                report.scoring_errors[f"{scenario.name}#{trial}"] = f"{type(err).__name__}: {err}"
            report.outcomes.append((result, metrics))
            progress.done(result, metrics)

    tasks = [asyncio.create_task(one(s, k)) for s, k in jobs]
    try:
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


#: Two workers for scoring and artifact writes: they overlap the sessions (fsync releases the GIL)
#: without many threads competing with the event loop for the GIL.
_FINISHER = ThreadPoolExecutor(max_workers=2, thread_name_prefix="evalctl-finish")


async def _finish(
    run_dir: Path,
    scenario: Scenario,
    result: SessionResult,
    opts: RunOptions,
    voice: Callable[[Path], VoiceSummary | None] | None = None,
) -> MetricsRecord:
    """Score and write one session off the event loop: artifact writes block (fsync), and the
    sessions still running must not wait for them. Its own loop in a worker thread; if the run is
    interrupted meanwhile, the writes still finish (so a result is never half written)."""

    def work() -> MetricsRecord:
        finish = results.finish_session(run_dir, scenario, result, opts.trials, opts.scoring, voice)
        return asyncio.run(finish)

    future = asyncio.get_running_loop().run_in_executor(_FINISHER, work)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        while not future.done():  # cancellation may come more than once: still wait for the writes
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait([future])
        raise


def run_cli(opts: RunOptions, voice: VoiceRun | None = None) -> RunReport:
    """Run from a synchronous caller (the CLI); Ctrl-C or SIGTERM (a CI timeout, ``kill``) yields
    an ``interrupted`` report with the summary written; before the sessions start it raises
    KeyboardInterrupt."""

    async def main() -> RunReport:
        loop, task = asyncio.get_running_loop(), asyncio.current_task()
        with contextlib.suppress(NotImplementedError, RuntimeError, AttributeError):
            loop.add_signal_handler(signal.SIGTERM, task.cancel)  # type: ignore[union-attr]
        try:
            return await run(opts, voice)
        finally:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(signal.SIGTERM)

    try:
        return asyncio.run(main())
    except asyncio.CancelledError:
        raise KeyboardInterrupt from None
