"""Run many scenarios: built-in sides, bounded concurrency, the scoring stage, progress, Ctrl-C.

``evalctl run`` calls :func:`run_cli`. Before anything is written the run checks its input, the
open-file limit against its concurrency (``engine.util.oslimits``) and each ``openai:`` endpoint
(``engine.session.backends.probe``); then it locks its directory for its whole life
(``engine.results.rundir.lock_run_dir``). One built-in side server per role serves every session of the
run (127.0.0.1, ephemeral port); an external side is given as ``ws://host:port``. Each (scenario,
trial) is one session with its own DB; a failing session never stops the others. As soon as a
session ends its artifacts are stored, then the scoring stage (``engine.results.scorer.Scorer``, the judge
included, with the run's concurrency) gives its verdict; at the end, also after Ctrl-C,
``engine.results.scoring_stage.finish_run`` writes the summary. A resume reuses the run's settings
(``engine.session.settings``) and does only what has no verdict. ``--shard I/N`` runs one slice of the
selection (``engine.run.shard``); ``--workers N`` runs the sessions in N processes sharing the run
folder (``engine.run.workers``; small runs stay in this process).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import signal
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.core.model import Scenario, SessionResult
from engine.core.options import RunOptions
from engine.core.records.common import spent
from engine.core.records.metrics import MetricsRecord
from engine.results import scoring_stage as results
from engine.results.provenance import new_invocation_id, resume_command
from engine.results.regenerate import attempts_kept, broken_caller, keep_attempt, keep_broken
from engine.results.resume import Job, plan_jobs, resumed, set_aside_unreported
from engine.results.run_report import RunReport
from engine.results.rundir import (
    check_run_dir,
    fresh_default_dir,
    holds_a_run,
    lock_run_dir,
    open_run_dir,
    recorded_selection,
    select_scenarios,
)
from engine.results.scorer import Scorer, WrittenStop, off_loop
from engine.results.session_files import REGENERATED, load_session, scenario_dir
from engine.run import workers
from engine.run.adaptive import FIRST_TRIALS, AdaptiveRounds
from engine.run.breaker import EndpointBreaker
from engine.run.interrupt import CtrlC
from engine.run.prepared import Prepared
from engine.run.progress import Progress, Sink
from engine.run.shard import parse_shard, shard_scenarios
from engine.scoring import stats
from engine.session.backends import BackendFactory, BackendSpec
from engine.session.backends.probe import PROBE_TIMEOUT_S, check_endpoints
from engine.session.backends.registry import evalctl_own, parse_backend_spec, scheme_of
from engine.session.conversation import SessionLimits, SessionSetup, run_session
from engine.session.settings import check_judge_key, run_info, with_resolved_base_url
from engine.session.setup import (
    check_counts,
    close_sides,
    endpoints,
    ignored_args,
    session_setup,  # noqa: F401 (tests import it from here)
    side_for,
)
from engine.session.sides import builtin_side
from engine.spec.gold_check import refuse_mismatches
from engine.spec.index import ScenarioIndex, index_domain
from engine.spec.selection import listed, select_tasks
from engine.util import end_wait, heap
from engine.util.aio import run_to_end
from engine.util.errors import OutputError, SpecError, StrayExit, UsageError
from engine.util.oslimits import check_open_files, files_needed
from engine.util.untrusted import one_line

if TYPE_CHECKING:
    from engine.session.voice.run import VoiceRun


async def run(
    opts: RunOptions, voice: VoiceRun | None = None, on_report: Callable[[RunReport], None] | None = None
) -> RunReport:
    """Run the selected scenarios; returns the report. Ctrl-C (task cancellation) stops the
    sessions in flight, keeps the finished ones and still writes the summary (``interrupted``).
    ``voice``: the audio settings of an ``opts.voice`` run (default ``VoiceRun.create()``: the
    local TTS engine and ``$EVALCTL_ASR``'s recogniser); given for a text run, a ValueError.
    ``on_report``: called with the run's report as soon as it exists (before the sessions run;
    ``run_cli``'s Ctrl-C handler reads it).

    Raises SpecError / UsageError / DataRootError before anything runs when the input is bad
    (UsageError also for a voice run without a TTS engine), and InfrastructureError when a model
    endpoint fails its check.
    """
    check_counts(opts)
    with contextlib.ExitStack() as held:
        if opts.resume is not None:
            if not opts.resume.is_dir():
                raise UsageError(f"--resume: no run directory at {opts.resume}")
            if not holds_a_run(opts.resume):  # before the lock file is written into it
                raise UsageError(
                    f"--resume: {opts.resume} is not an evalctl run directory (no run.json, no results)"
                )
            held.enter_context(lock_run_dir(opts.resume, choice=""))
            opts = resumed(opts, opts.resume)
        opts = with_resolved_base_url(opts)
        if opts.cache_dir and not opts.scoring.cache_dir:  # the judge's calls are cached too
            opts = dataclasses.replace(
                opts, scoring=dataclasses.replace(opts.scoring, cache_dir=opts.cache_dir)
            )
        agent_spec, user_spec = parse_backend_spec(opts.agent), parse_backend_spec(opts.user)
        if opts.voice and scheme_of(agent_spec).voice_refusal:
            raise UsageError(f"--voice with --agent {agent_spec}: {scheme_of(agent_spec).voice_refusal}")
        for line in ignored_args(opts, agent_spec, user_spec):
            print(f"evalctl: {line}", file=sys.stderr)
        limits = [
            n for n in (scheme_of(agent_spec).sessions_at_once, scheme_of(user_spec).sessions_at_once) if n
        ]
        if limits and opts.concurrency > min(limits):  # a side that serves one client at a time
            opts = dataclasses.replace(opts, concurrency=min(limits))
        # the scenarios indexed (each checked, then let go); prepared when their sessions start
        loaded = index_domain(opts.spec_dir, opts.data_root, plugins=opts.plugins, language=opts.language)
        held.enter_context(heap.settled())
        chosen = select_scenarios(loaded.scenarios, opts.scenarios, opts.domain_prefix)
        if opts.tasks:
            chosen = select_tasks(chosen, loaded, opts.tasks, loaded.scenarios)
        if not opts.allow_gold_mismatch:
            refuse_mismatches(loaded.gold_mismatches([s.name for s in chosen]))
        if opts.shard is not None:
            shard = parse_shard(opts.shard)
            if opts.resume is None:  # a resumed shard run keeps the slice its run.json records
                chosen = shard_scenarios(chosen, shard)
        specs = {"agent": agent_spec, "user": user_spec}
        for role, spec in specs.items():  # code that ends its process as it loads: one line, exit 2
            load = functools.partial(side_for, spec, opts, loaded.live, role)
            workers.probe_user_code(opts, role, str(spec), load)
        sides: dict[str, BackendFactory | str] = {}
        for role, spec in specs.items():  # what the user's code prints as it loads: on stderr
            with workers.loading_user_code(str(spec)):
                sides[role] = side_for(spec, opts, loaded.live, role)
        check_judge_key(opts.scoring)
        voice = _voice(opts, voice, loaded.domain.language)
        if voice is not None:
            voice.check_callers(chosen)  # a scenario's caller voice espeak-ng lacks: exit 2 now
        kinds = {role: spec.kind for role, spec in specs.items()}
        at_once = min(opts.concurrency, len(chosen) * opts.trials)
        needed = files_needed(at_once, kinds, bool(opts.scoring.judge_model))
        check_open_files(needed, opts.concurrency, at_once)
        if opts.resume is None and opts.output_dir is not None:  # a usage error before any probe
            check_run_dir(opts.output_dir, False, opts.trials)
        await check_endpoints(
            endpoints(opts, agent_spec, user_spec), min(PROBE_TIMEOUT_S, opts.request_timeout_s)
        )
        run_dir = opts.resume
        if run_dir is None:
            run_dir = opts.output_dir or fresh_default_dir()
            try:
                run_dir.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                why = err.strerror or err
                raise OutputError(f"cannot write the run directory {run_dir}: {why}") from None
            held.enter_context(lock_run_dir(run_dir))
        report = await _run_locked(
            opts, run_dir, loaded, chosen, sides, (agent_spec, user_spec), voice, on_report
        )
        cache = voice.cache if voice is not None else None
        if cache is not None and any(sum(c) for c in cache.counts.values()):
            report.voice_cache = cache.line()  # this process's lookups; --workers' are not gathered
        return report


async def _run_locked(
    opts: RunOptions,
    run_dir: Path,
    loaded: ScenarioIndex,
    chosen: list[Scenario],
    sides: dict[str, BackendFactory | str],
    specs: tuple[BackendSpec, BackendSpec],
    voice: VoiceRun | None = None,
    on_report: Callable[[RunReport], None] | None = None,
) -> RunReport:
    """The run once its directory is locked: check it, plan, run the jobs, write the summary."""
    agent_spec, user_spec = specs
    selected = check_run_dir(run_dir, opts.resume is not None, opts.trials)
    planned = chosen
    if selected:  # resuming: the run keeps its own selection; --scenarios / --domain may narrow it
        planned = recorded_selection(loaded, selected, run_dir)
        if opts.scenarios or opts.domain_prefix or opts.tasks:
            outside = [s.name for s in chosen if s.name not in selected]
            if outside:
                which = (
                    f"{outside[0]} is not part of the run in {run_dir}"
                    if len(outside) == 1
                    else f"{len(outside)} scenarios are not part of the run in {run_dir}: "
                    f"{listed(outside, str)}"
                )
                raise UsageError(f"--resume: {which}; a resumed run keeps its own selection")
        else:
            chosen = planned
    started = datetime.now(UTC).isoformat(timespec="milliseconds")
    invocation = new_invocation_id()
    base_info = {
        **run_info(opts, loaded, planned, agent_spec, user_spec),
        "started_at": started,
        "invocation": invocation,
        "command": "resume" if opts.resume is not None else "run",
        "caller_note": loaded.caller_note(opts.user, [s.name for s in planned]),
    }
    open_run_dir(run_dir, opts.resume is not None, base_info)
    report = RunReport(run_dir, trials=opts.trials)
    if on_report is not None:
        on_report(report)
    rounds = None
    if opts.adaptive_target_width is not None:  # --trials auto: more trials only where verdicts disagree
        rounds = AdaptiveRounds(opts, run_dir, chosen, report, base_info)
        jobs = loaded.longest_first(rounds.first())
        report.skipped = max(0, len(chosen) * min(FIRST_TRIALS, opts.trials) - rounds.first_planned)
    else:
        jobs = loaded.longest_first(plan_jobs(chosen, opts, run_dir))
        report.skipped = len(chosen) * opts.trials - len(jobs)
    more = None
    handed = [(j.scenario.name, j.trial) for j in jobs]  # this invocation's sessions
    if rounds is not None:
        next_round = rounds.next_round

        def more() -> list[Job]:
            batch = loaded.longest_first(next_round())
            handed.extend((j.scenario.name, j.trial) for j in batch)
            return batch

    loop = asyncio.get_running_loop()
    t0 = loop.time()
    progress = Progress(len(jobs), enabled=opts.progress, quiet=opts.quiet, trials=opts.trials)
    try:
        with progress:
            count = workers.worker_count(opts, len(jobs), voice)
            if count > 1 or workers.isolated(opts):  # isolated: the agent's own code in one worker
                try:
                    # a stop once all are reported cuts only the workers' end wait (no next round)
                    report.planned = len(jobs) if more is None else None
                    batch = jobs
                    while batch:
                        stopped = await workers.run_in_workers(
                            batch, count, opts, run_dir, invocation, voice, progress, report, loaded
                        )
                        batch = more() if more is not None else []
                        if stopped and batch:  # stopped once this batch was complete: the next is cut
                            raise asyncio.CancelledError
                        progress.grow(len(batch))
                finally:
                    report.planned = None  # a stop in the wind-down below still interrupts the run
                    await close_sides(sides)
            else:
                stats.preload()  # the summary's statistics load while the sessions run (no fork here)
                await run_here(
                    jobs, opts, run_dir, invocation, sides, agent_spec, voice, progress, report, more, loaded
                )
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
        report.interrupted = True
    report.wall_s = loop.time() - t0
    info = {**base_info, "wall_time_s": round(report.wall_s, 3), "interrupted": report.interrupted}
    reported = [(o.scenario_name, o.trial) for o in report.outcomes]
    aside = set_aside_unreported(run_dir, handed, reported, opts.trials)
    if aside:  # never counted: what the run did not see finish is missing, for --resume to run
        shown = ", ".join(aside[:5]) + (f" and {len(aside) - 5} more" if len(aside) > 5 else "")
        print(
            f"evalctl: {len(aside)} result folder(s) of sessions this run did not see finish held a "
            f"metrics.json it did not take (written outside the run's process?): not counted, "
            f"--resume runs them again: {one_line(shown, 400)}",
            file=sys.stderr,
        )
    try:
        report.summary = results.finish_run(run_dir, info, report.totals, opts.trials)
        report.statistics_unavailable = stats.unavailable()
    except OSError as err:
        unwritten = f"; {len(report.scoring_errors)} session(s) not written" if report.scoring_errors else ""
        raise OutputError(
            f"cannot write the run summary in {run_dir}: {err.strerror or err}{unwritten}; "
            f"results written so far are kept (`{resume_command(run_dir)}` completes the run)"
        ) from None
    return report


async def run_here(
    jobs: list[Job],
    opts: RunOptions,
    run_dir: Path,
    invocation: str,
    sides: dict[str, BackendFactory | str],
    agent_spec: BackendSpec,
    voice: VoiceRun | None,
    progress: Sink,
    report: RunReport,
    more: Callable[[], list[Job]] | None = None,
    index: ScenarioIndex | None = None,
) -> None:
    """Run ``jobs`` in this process: serve the built-in ``sides`` on loopback (closed at the end),
    then each session, stored and scored in ``run_dir`` (as invocation ``invocation``); each
    finished one goes to ``progress``. ``more``: called when every job is done, the next jobs
    (adaptive trials' rounds; none ends the run). ``index``: the scenario index the jobs' shells
    come from (``engine.spec.index``; each scenario is prepared for its sessions and let go after
    them); None when the jobs carry whole scenarios. Cancellation stops the sessions in flight."""
    prepared = Prepared(jobs, index)
    scorer = Scorer(run_dir, opts.trials, opts.scoring, opts.concurrency, invocation)
    # the roles evalctl's own code answers for: served here with a built-in scheme's backend (an
    # installed scheme's backend is third-party code, blamed like an external side)
    own = {"agent": evalctl_own(agent_spec), "user": evalctl_own(parse_backend_spec(opts.user))}
    builtin = frozenset(role for role, side in sides.items() if not isinstance(side, str) and own[role])
    async with contextlib.AsyncExitStack() as stack:
        stack.push_async_callback(scorer.aclose)
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
            uris[role] = await stack.enter_async_context(builtin_side(side, role, in_process=True))
        batch = jobs
        while batch:
            await _run_jobs(batch, prepared, uris, builtin, opts, scorer, report, progress, voice)
            batch = more() if more is not None else []
            prepared.add(batch)
            if isinstance(progress, Progress):
                progress.grow(len(batch))


def _voice(opts: RunOptions, given: VoiceRun | None, language: str = "en") -> VoiceRun | None:
    """The run's audio settings (None: a text run), speaking ``language`` (the domain's); says in
    one line when that language goes without speech recognition."""
    if not opts.voice:
        if given is not None:
            raise ValueError("audio settings for a text run (set RunOptions.voice)")
        return None
    if given is not None:
        return given
    from engine.session.voice.asr import recognition_note
    from engine.session.voice.run import VoiceRun  # the audio modules load for voice runs only

    note = recognition_note(language)
    if note and not opts.quiet:
        print(f"evalctl: {note}", file=sys.stderr)
    return VoiceRun.create(language=language, voices=tuple(opts.caller_voices), perturb=opts.perturb)


async def _run_jobs(
    jobs: list[Job],
    prepared: Prepared,
    uris: dict[str, str],
    builtin: frozenset[str],
    opts: RunOptions,
    scorer: Scorer,
    report: RunReport,
    progress: Sink,
    voice: VoiceRun | None,
) -> None:
    """Run every job: at most ``opts.concurrency`` sessions at once; each session's artifacts are
    stored as soon as it ends, after its slot is freed, then it is scored (the scorer has its own
    bound). At most twice ``opts.concurrency`` sessions are held at once (running, or waiting for
    their folder to be written or judged), and only their scenarios are prepared (``prepared``):
    memory does not grow with the number of jobs or of scenarios."""
    gate = asyncio.Semaphore(opts.concurrency)
    held = asyncio.Semaphore(2 * opts.concurrency)
    breaker = EndpointBreaker(opts.max_endpoint_failures)
    # a fresh run's folder holds no run (``check_run_dir``): no result of a broken caller to keep
    # and no replaced attempts to count, so its sessions skip those two probes (two trips each to
    # the writer thread)
    earlier = opts.resume is not None or (scorer.run_dir / REGENERATED).exists()

    async def one(job: Job) -> None:
        key = f"{job.scenario.name}#{job.trial}"
        try:
            async with held:
                try:
                    scenario, setup = prepared.acquire(job)
                except SpecError as err:  # its files changed since the run checked them
                    prepared.done(job)
                    report.scoring_errors[key] = f"the scenario no longer loads: {err.problems[0].message}"
                    return
                try:
                    result, metrics, failure = await attempts(job, scenario, setup)
                except WrittenStop as stop:  # stopped once its folder was complete: it is done
                    result, metrics, failure = stop.value
                finally:
                    prepared.done(job)
        except (OSError, ValueError) as err:  # the folder cannot be written (or read back)
            report.scoring_errors[key] = f"{type(err).__name__}: {err}"
            return
        if failure is not None:  # scoring trouble is recorded, the run goes on
            report.scoring_errors[key] = failure
        report.add(result, metrics)
        progress.done(result, metrics)

    async def attempts(
        job: Job, scenario: Scenario, setup: SessionSetup
    ) -> tuple[SessionResult, MetricsRecord | None, str | None]:
        """The job's session (its regenerations of a broken caller included), stored and scored."""
        trial = job.trial
        if job.action == "score":
            sdir = scenario_dir(scorer.run_dir, scenario.name, trial, opts.trials)
            _, result = await off_loop(load_session, sdir)
            try:
                metrics, failure = await scorer.finish(scenario, result, job.superseded, stored=True)
            except WrittenStop as stop:
                raise WrittenStop((result, *stop.value)) from None
            return result, metrics, failure
        run_dir, trials = scorer.run_dir, opts.trials
        first = attempt = 0
        if earlier:  # a resume's rerun: keep a broken caller's result, number the attempts on
            await off_loop(keep_broken, run_dir, scenario.name, trial, trials)
            first = attempt = await off_loop(attempts_kept, run_dir, scenario.name, trial, trials)
        superseded = job.superseded
        while True:
            call = voice.call(scenario) if voice is not None else None
            async with gate:
                wrap = call.wrap if call is not None else None
                if breaker.tripped:  # the endpoint is down: not tried once more per session
                    result = breaker.not_run(scenario, trial)
                else:
                    progress.started(scenario.name, trial)  # a supervised worker's crash names it
                    result = await _session(scenario, trial, setup, uris, builtin, opts, wrap, attempt)
                    progress.talked(scenario, result)
                    breaker.record(result)
            audio = voice.artifacts(call) if voice is not None and call is not None else None
            try:
                metrics, failure = await scorer.finish(scenario, result, superseded, audio)
            except WrittenStop as stop:  # the stop waited for its folder: reported as done
                raise WrittenStop((result, *stop.value)) from None
            if metrics is None or attempt - first >= opts.regenerate or not broken_caller(metrics):
                return result, metrics, failure
            await off_loop(keep_attempt, run_dir, scenario.name, trial, trials)
            superseded = spent(metrics.superseded_usage, *metrics.usage.items())  # still paid
            attempt += 1

    tasks = [asyncio.create_task(one(job)) for job in jobs]
    try:
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _session(
    scenario: Scenario,
    trial: int,
    setup: SessionSetup,
    uris: dict[str, str],
    builtin: frozenset[str],
    opts: RunOptions,
    wrap_agent: Any = None,
    attempt: int = 0,
) -> SessionResult:
    """One conversation; an engine bug becomes that session's ``error`` (source ``engine``).
    ``wrap_agent``: an audio session's link (``engine.session.voice.link.VoiceCall.wrap``);
    ``attempt``: k for the k-th regeneration of a broken caller's session (a new caller seed)."""
    limits = SessionLimits(
        max_duration_s=scenario.max_duration,
        turn_timeout_s=opts.turn_timeout_s,
        max_turns=opts.max_turns,
        max_tool_rounds=opts.max_tool_rounds,
        max_tool_calls_per_turn=opts.max_tool_calls_per_turn,
        attempt=attempt,
    )
    try:
        return await run_session(
            scenario,
            setup,
            uris["agent"],
            uris["user"],
            limits,
            trial,
            wrap_agent=wrap_agent,
            builtin=builtin,
        )
    except Exception as err:  # an engine bug in one session must not stop the others
        return SessionResult(
            scenario.name, trial, "error", error=f"engine error: {err!r}", error_source="engine"
        )


def run_cli(opts: RunOptions, voice: VoiceRun | None = None) -> RunReport:
    """Run from a synchronous caller (the CLI); Ctrl-C or SIGTERM (a CI timeout, ``kill``) yields
    an ``interrupted`` report with the summary written; before the sessions start it raises
    KeyboardInterrupt. Repeated Ctrl-C: :class:`CtrlC`."""

    async def main() -> RunReport:
        loop, task = asyncio.get_running_loop(), asyncio.current_task()
        assert task is not None
        ctrl_c = CtrlC(task)
        previous: Any = None
        installed = False
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):  # not the main thread
            loop.add_signal_handler(signal.SIGTERM, ctrl_c.terminate)  # as a first Ctrl-C, said alike
            previous = signal.signal(signal.SIGINT, ctrl_c.on_signal(loop))
            installed = True
        try:
            report = await run(opts, voice, on_report=ctrl_c.watch)
            report.ctrl_c_presses = ctrl_c.presses
            return report
        finally:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(signal.SIGTERM)
                if installed:
                    signal.signal(
                        signal.SIGINT, previous if previous is not None else signal.default_int_handler
                    )

    end_wait.reset()  # an earlier run's stop in this process does not shorten this one's end
    try:
        return run_to_end(main(), on_stray_exit=StrayExit.of)
    except asyncio.CancelledError:
        raise KeyboardInterrupt from None
