"""evalctl command line: a thin click layer that parses the arguments and dispatches each verb to
its function in ``engine.commands`` (imported per verb, so ``--help`` stays fast).

User errors (``engine.util.errors.EvalctlError``) print one line per problem and exit non-zero;
they never show a traceback.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Literal

import click

from engine import __version__
from engine.commands import cli_options as opt
from engine.core.options import RunOptions, ScoringOptions, TaskSelection
from engine.util.errors import BROKEN_PIPE_EXIT, INTERRUPTED_EXIT, EvalctlError, UsageError
from engine.util.untrusted import one_line


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="evalctl")
def group() -> None:
    """evalctl: declarative scenario engine for evaluating conversational customer-service agents.

    \b
    Typical use:
      evalctl list specs/eva_airline
      evalctl validate specs/eva_airline
      evalctl run specs/eva_airline
      evalctl diff runs/<run>
    """


@group.command("list")
@click.argument("spec_dir", type=click.Path(file_okay=False))
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print a JSON list of {name, id (eva_id in eva specs), description}.",
)
@opt.data_root()
@opt.selectors()
def list_cmd(
    spec_dir: str,
    as_json: bool,
    data_root: str | None,
    scenarios: str | None,
    domain_prefix: str | None,
    task_ids: str | None,
    task_split: str | None,
    num_tasks: int | None,
) -> int:
    """List the scenarios of SPEC_DIR: one line each, name first, then record id and description.

    The specs are fully loaded and checked first, so a broken spec fails here too.

    \b
    Example:
      evalctl list specs/eva_airline
      evalctl list specs/eva_airline --json
    """
    from engine.commands.list import list_scenarios

    tasks = _tasks(task_ids, task_split, num_tasks)
    return list_scenarios(
        Path(spec_dir),
        _path(data_root),
        as_json=as_json,
        tasks=tasks,
        scenarios=_csv(scenarios),
        domain_prefix=domain_prefix,
    )


@group.command("validate")
@click.argument("spec_dir", type=click.Path(file_okay=False))
@click.option("--no-replay", is_flag=True, help="Skip replaying the gold traces (default: replay them).")
@opt.language()
@opt.data_root()
@opt.selectors()
def validate_cmd(
    spec_dir: str,
    no_replay: bool,
    language: str | None,
    data_root: str | None,
    scenarios: str | None,
    domain_prefix: str | None,
    task_ids: str | None,
    task_split: str | None,
    num_tasks: int | None,
) -> int:
    """Check SPEC_DIR: schemas, cross-checks, both prompts of every scenario, gold replay.

    Prints every problem as `file:LINE: $.json.path: message [scenario]` and exits 1 when there is
    any; exits 0 only if everything holds.

    \b
    Example:
      evalctl validate specs/eva_airline
      evalctl validate specs/eva_airline --no-replay --data-root ~/eva-data
      evalctl validate specs/eva_airline --language fr
    """
    from engine.commands.validate import validate

    tasks = _tasks(task_ids, task_split, num_tasks)
    return validate(
        Path(spec_dir),
        _path(data_root),
        replay=not no_replay,
        tasks=tasks,
        scenarios=_csv(scenarios),
        domain_prefix=domain_prefix,
        language=language,
    )


@group.command("render")
@click.argument("spec_dir", type=click.Path(file_okay=False))
@click.option(
    "--scenario",
    "-s",
    "scenario_name",
    required=True,
    metavar="NAME",
    help="Scenario name (see `evalctl list`).",
)
@click.option(
    "--side",
    type=click.Choice(["agent", "user", "tools"]),
    default="agent",
    show_default=True,
    help="agent: the agent system prompt; user: the user-simulator prompt; tools: the tool JSON schemas.",
)
@opt.data_root()
def render_cmd(
    spec_dir: str, scenario_name: str, side: Literal["agent", "user", "tools"], data_root: str | None
) -> int:
    """Print exactly what a model sees for one scenario: a prompt or the tool schemas.

    \b
    Example:
      evalctl render specs/eva_airline --scenario eva_airline__voluntary_date_change
      evalctl render specs/eva_airline -s eva_airline__3_1_5 --side tools
    """
    from engine.commands.render import render

    return render(Path(spec_dir), scenario_name, side, _path(data_root))


def _path(value: str | None) -> Path | None:
    return Path(value) if value else None


def _csv(value: str | None) -> tuple[str, ...]:
    return tuple(v.strip() for v in (value or "").split(",") if v.strip())


#: ``evalctl run`` parameters that set a run setting (engine.session.settings): parameter -> setting(s).
RUN_SETTINGS: dict[str, tuple[str, ...]] = {
    "agent": ("agent",),
    "user": ("user",),
    "base_url": ("base_url",),
    "api_key_env": ("api_key_env", "scoring.judge_api_key_env"),
    "trials": ("trials", "adaptive_target_width"),
    "target_width": ("adaptive_target_width",),
    "max_turns": ("max_turns",),
    "regenerate": ("regenerate",),
    "turn_timeout": ("turn_timeout_s",),
    "max_tool_rounds": ("max_tool_rounds",),
    "max_tool_calls": ("max_tool_calls_per_turn",),
    "request_timeout": ("request_timeout_s",),
    "voice": ("voice",),
    "language": ("language",),
    "caller_voice": ("caller_voices",),
    "perturb": ("perturb",),
    "allow_gold_mismatch": ("allow_gold_mismatch",),
    "min_agent_turns": ("scoring.min_agent_turns",),
    "strict_match": ("scoring.strict_match",),
    "judge_model": ("scoring.judge_model",),
    "judge_base_url": ("scoring.judge_base_url",),
    "judge_threshold": ("scoring.judge_threshold",),
    "shard": ("shard",),
    "workers": ("workers",),
    "user_base_url": ("user_base_url",),
    "user_api_key_env": ("user_api_key_env",),
    "judge_api_key_env": ("scoring.judge_api_key_env",),
    "agent_args": ("agent_args",),
    "user_args": ("user_args",),
    "judge_args": ("scoring.judge_args",),
}


def _given(table: dict[str, tuple[str, ...]]) -> frozenset[str]:
    """The settings the command line gives explicitly (not by default)."""
    ctx = click.get_current_context()
    sources = (click.core.ParameterSource.COMMANDLINE, click.core.ParameterSource.ENVIRONMENT)
    return frozenset(
        s for param, names in table.items() if ctx.get_parameter_source(param) in sources for s in names
    )


def _tasks(task_ids: str | None, task_split: str | None, num_tasks: int | None) -> TaskSelection:
    """The task selection options as one record (an empty --task-ids value or id was refused by
    its callback, ``engine.commands.cli_options._joined``)."""
    return TaskSelection(_csv(task_ids), task_split, num_tasks)


def _prices(value: str | None) -> Any:
    if value is None:
        return None
    from engine.results.costs import load_prices

    return load_prices(value)


@group.command("run")
@click.argument("spec_dir", type=click.Path(file_okay=False))
@opt.selection()
@opt.sides()
@opt.model_options()
@opt.role_model_options()
@opt.concurrency()
@opt.output_dir()
@opt.data_root()
@click.option(
    "--regenerate",
    default=2,
    show_default=True,
    type=click.IntRange(min=0),
    metavar="N",
    help="Run a session again, with a new caller seed, when its caller broke its instructions "
    "(verdict error, source user_simulator; docs/trust.md), at most N times; every attempt is kept "
    "under RUN_DIR/.regenerated/. 0: never.",
)
@opt.max_turns()
@click.option(
    "--trials",
    default="1",
    show_default=True,
    metavar="K|auto[:MAX]",
    help="Sessions per scenario; auto (at most 8) or auto:MAX runs each scenario twice, then more "
    "trials only on the scenarios whose verdicts disagree, until the overall rate's 95% interval is "
    "--target-width wide or MAX is reached.",
)
@click.option(
    "--target-width",
    default=None,
    type=opt.FiniteFloatRange(0, 1, min_open=True),
    metavar="WIDTH",
    help="With --trials auto: stop when the overall rate's 95% interval is this wide (0-1; default "
    "0.10, i.e. 10 points).",
)
@click.option(
    "--resume",
    default=None,
    type=click.Path(file_okay=False),
    metavar="RUN_DIR",
    help="Complete the run in RUN_DIR with its own settings: run what is missing, and again what "
    "has the verdict error (--keep-errors leaves those).",
)
@opt.scoring_options()
@opt.fail_under()
@opt.turn_timeout()
@click.option(
    "--max-tool-rounds",
    default=10,
    show_default=True,
    type=click.IntRange(min=1),
    help="Model steps with tool calls per turn (openai sides drop later calls; in-process agents FAIL).",
)
@click.option(
    "--max-tool-calls",
    default=50,
    show_default=True,
    type=click.IntRange(min=1),
    help="Tool calls one side may make in one turn, enforced by the engine on every side; "
    "one more ends the session (stop reason timeout).",
)
@click.option(
    "--progress/--no-progress", default=None, help="Live display (default: when stderr is a terminal)."
)
@click.option(
    "--keep-errors",
    is_flag=True,
    help="With --resume: leave results whose verdict is error as they are (default: run them again).",
)
@opt.allow_errors()
@click.option(
    "--voice",
    is_flag=True,
    help="Audio sessions with the agent (protocol v2): the caller is spoken by the local TTS engine "
    "(espeak-ng and sox); WAVs, voice.json and voice metrics per scenario.",
)
@opt.caller_options()
@opt.conditions()
@opt.language()
@click.option(
    "--allow-gold-mismatch",
    is_flag=True,
    help="Run even when the spec's gold replay fails (`evalctl validate` lists why; recorded in "
    "run.json). Default: such a run is refused (exit 2).",
)
@click.option(
    "--workers",
    default=None,
    type=click.IntRange(min=1),
    metavar="N",
    help="Processes that run the sessions (one run folder, one summary). Default: the machine's cores; "
    "small runs stay in one process, except that an agent running your own code (python:, pipecat:, "
    "livekit:) runs in a supervised worker so its crash fails its sessions, not the run. --workers 1: "
    "everything in this process (breakpoints in your agent work).",
)
@click.option(
    "--shard",
    default=None,
    metavar="I/N",
    help="Run only shard I of N (numbered from 1) of the selected scenarios; combine the shard runs "
    "with `evalctl merge`.",
)
@click.option(
    "--ray",
    "ray_address",
    default=None,
    metavar="ADDRESS",
    help="Run the shards as tasks on the Ray cluster at ADDRESS (host:port, auto, or local for a "
    "one-machine cluster) and merge them; --workers N = N shards (default: one per cluster CPU). "
    "Needs `pip install 'evalctl[ray]'`.",
)
@click.option("--replay-latency", default=0.0, type=opt.FiniteFloatRange(min=0), hidden=True)
@opt.prices()
@opt.junit()
@click.option(
    "--otel",
    is_flag=True,
    help="Export one trace per session over OTLP/HTTP to the endpoint of the standard "
    "OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT variables. Needs `pip install 'evalctl[otel]'`.",
)
@click.option(
    "--trace-file",
    default=None,
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="Append one trace per session to FILE as OTLP JSON lines. Needs `pip install 'evalctl[otel]'`.",
)
@opt.task_selection()
def run_cmd(
    spec_dir: str,
    scenarios: str | None,
    domain_prefix: str | None,
    agent: str,
    user: str,
    base_url: str | None,
    api_key_env: str,
    user_base_url: str | None,
    user_api_key_env: str | None,
    judge_api_key_env: str | None,
    agent_args: str | None,
    user_args: str | None,
    judge_args: str | None,
    cache: str | None,
    max_endpoint_failures: int,
    concurrency: int,
    output_dir: str | None,
    data_root: str | None,
    regenerate: int,
    max_turns: int | None,
    trials: str,
    target_width: float | None,
    resume: str | None,
    min_agent_turns: int,
    strict_match: bool,
    fail_under: float | None,
    judge_model: str | None,
    judge_base_url: str | None,
    judge_threshold: float,
    turn_timeout: float,
    request_timeout: float,
    max_tool_rounds: int,
    max_tool_calls: int,
    progress: bool | None,
    keep_errors: bool,
    allow_errors: bool,
    voice: bool,
    caller_voice: str | None,
    perturb: str | None,
    conditions: str | None,
    language: str | None,
    allow_gold_mismatch: bool,
    workers: int | None,
    shard: str | None,
    ray_address: str | None,
    replay_latency: float,
    prices: str | None,
    junit: str | None,
    otel: bool,
    trace_file: str | None,
    task_ids: str | None,
    task_split: str | None,
    num_tasks: int | None,
) -> int:
    """Run the scenarios of SPEC_DIR: a simulated user talks to the agent, the engine runs the
    agent's tool calls on each scenario's own DB, and every session is scored.

    Built-in sides (replay, openai:MODEL) are started on loopback by the run itself; give an
    external side as ws://host:port (protocol: docs/protocol.md). Ctrl-C stops cleanly and keeps
    the finished results; --resume RUN_DIR completes the rest with the run's own settings.

    Exit codes: 0 done; 1 below --fail-under (the strict rate: errors count as failures); 2 bad
    input; 3 some result has the verdict error (infrastructure failed: no verdict; see
    --allow-errors), or a model endpoint failed its check; 130 interrupted.

    \b
    Example:
      evalctl run specs/eva_airline
      evalctl run specs/eva_airline --scenarios eva_airline__3_1_5 --concurrency 1
      evalctl run specs/eva_airline --agent openai:gpt-4.1 --user openai:gpt-4.1 --base-url URL
      evalctl run specs/eva_airline --shard 2/4 --output-dir runs/part2
    """
    from engine.commands.run import run
    from engine.core.model_args import parse_model_args
    from engine.run.adaptive import DEFAULT_TARGET_WIDTH, parse_trials
    from engine.run.shard import parse_shard
    from engine.run.workers import cpu_count

    trial_count, adaptive = parse_trials(trials)
    if target_width is not None and not adaptive:
        raise UsageError("--target-width goes with --trials auto (or auto:MAX)")
    if adaptive and (shard is not None or ray_address is not None):
        raise UsageError(
            "--trials auto decides each round from the whole run: not with --shard or --ray "
            "(give a number of trials)"
        )
    if shard is not None:
        shard = str(parse_shard(shard))
    if keep_errors and resume is None:
        raise UsageError("--keep-errors goes with --resume RUN_DIR")
    if (caller_voice is not None or perturb is not None) and not voice and resume is None:
        raise UsageError("--caller-voice and --perturb shape the caller's speech: they go with --voice")
    if caller_voice is not None and not _csv(caller_voice):
        raise UsageError(f"--caller-voice {caller_voice!r} names no voice (leave it out for the default)")
    elsewhere = output_dir is not None and os.path.realpath(output_dir) != os.path.realpath(resume or "")
    if resume is not None and elsewhere:
        raise UsageError(
            f"--resume {resume} writes into {resume}; --output-dir {output_dir} is another folder "
            "(leave --output-dir out)"
        )
    opts = RunOptions(
        spec_dir=Path(spec_dir),
        data_root=_path(data_root),
        scenarios=_csv(scenarios),
        domain_prefix=domain_prefix,
        tasks=_tasks(task_ids, task_split, num_tasks),
        agent=agent,
        user=user,
        base_url=base_url,
        api_key_env=api_key_env,
        concurrency=concurrency,
        output_dir=_path(output_dir),
        max_turns=max_turns,
        regenerate=regenerate,
        trials=trial_count,
        adaptive_target_width=(target_width or DEFAULT_TARGET_WIDTH) if adaptive else None,
        resume=_path(resume),
        turn_timeout_s=turn_timeout,
        max_tool_rounds=max_tool_rounds,
        max_tool_calls_per_turn=max_tool_calls,
        request_timeout_s=request_timeout,
        replay_latency_s=replay_latency,
        progress=progress,
        voice=voice,
        caller_voices=_csv(caller_voice) if caller_voice is not None else (),
        perturb=perturb,
        language=language,
        allow_gold_mismatch=allow_gold_mismatch,
        scoring=ScoringOptions(
            min_agent_turns=min_agent_turns,
            strict_match=strict_match,
            judge_model=judge_model,
            judge_base_url=judge_base_url or base_url,
            judge_threshold=judge_threshold,
            judge_api_key_env=judge_api_key_env or api_key_env,
            judge_args=parse_model_args(judge_args, "--judge-args"),
            cache_dir=cache or None,
        ),
        user_base_url=user_base_url,
        user_api_key_env=user_api_key_env,
        agent_args=parse_model_args(agent_args, "--agent-args"),
        user_args=parse_model_args(user_args, "--user-args"),
        cache_dir=cache or None,
        max_endpoint_failures=max_endpoint_failures,
        explicit=_given(RUN_SETTINGS),
        keep_errors=keep_errors,
        shard=shard,
        workers=workers or cpu_count(),
        isolate_agent_code=workers != 1,  # --workers 1: all in this process (a debugger works)
    )
    if conditions is not None:
        from engine.commands.conditions import parse_conditions, run_conditions

        if ray_address is not None or junit is not None or otel or trace_file is not None:
            raise UsageError(
                "--conditions runs one sub-run per condition: give --ray, --junit or traces to one"
            )
        table = _prices(prices)
        return run_conditions(
            opts,
            parse_conditions(conditions),
            lambda o, first: run(o, fail_under, table, allow_errors, note=first),
        )
    return run(
        opts,
        fail_under,
        _prices(prices),
        allow_errors,
        ray=ray_address,
        junit=_path(junit),
        otel=otel,
        trace_file=_path(trace_file),
    )


@group.command("load")
@click.argument("spec_dir", type=click.Path(file_okay=False))
@click.option("--ramp", required=True, metavar="N,N,...", help="Callers at once per step, e.g. 10,50,100.")
@click.option(
    "--step-duration",
    default=None,
    type=opt.FiniteFloatRange(min=0, min_open=True),
    metavar="SECONDS",
    help="Run each step about this long: its callers times the rounds that fill it at the previous "
    "step's mean session time (the first step: one round), e.g. 60.",
)
@click.option(
    "--sessions-per-step",
    default=None,
    type=click.IntRange(min=1),
    metavar="N",
    help="Sessions per step, the scenarios cycled in whole rounds (every selected scenario runs as often "
    "once there are as many sessions as scenarios: up to scenarios - 1 more, e.g. 4 callers over 3 "
    "scenarios run 6 sessions), e.g. 200 (default: one per caller, rounded so).",
)
@click.option(
    "--fail-above",
    default=None,
    type=opt.FiniteFloatRange(min=0, max=1),
    metavar="SHARE",
    help="Stop after the first step whose failures and errors exceed this share of its sessions, "
    "e.g. 0.2 (default: run every step).",
)
@opt.selection()
@opt.sides()
@opt.model_options()
@opt.turn_timeout()
@opt.max_turns()
@opt.output_dir()
@opt.data_root()
@click.option("--replay-latency", default=0.0, type=opt.FiniteFloatRange(min=0), hidden=True)
def load_cmd(
    spec_dir: str,
    ramp: str,
    step_duration: float | None,
    sessions_per_step: int | None,
    fail_above: float | None,
    scenarios: str | None,
    domain_prefix: str | None,
    agent: str,
    user: str,
    base_url: str | None,
    api_key_env: str,
    request_timeout: float,
    turn_timeout: float,
    max_turns: int | None,
    output_dir: str | None,
    data_root: str | None,
    replay_latency: float,
) -> int:
    """Load-test an agent: a ramp of concurrent simulated callers, each running real scenarios
    of SPEC_DIR (cycled), scored as in `evalctl run`; one run folder per step.

    A step runs one session per caller unless --sessions-per-step or --step-duration says
    otherwise, the scenarios cycled in whole rounds: once a step has at least as many sessions as
    selected scenarios, every one of them runs equally often, so 4 callers over 3 scenarios run
    6 sessions (the table's sessions column is what ran). A step with fewer sessions than
    scenarios runs the first ones and says which it left out (its stderr line, a line under the
    table and load.json's left_out).

    Per step it reports the success rate over the sessions with a verdict (errors left out, never
    failures) with its 95 % interval (scenarios as the unit, their count shown), the agent's reply
    time percentiles (p50/p90/p95/p99, from the engine's transcript timestamps), the errors and
    failures by cause, and evalctl's own CPU as a share of wall; then writes OUT/load.json and
    OUT/load.html.

    The overhead column is evalctl's CPU time over the step's wall time (an in-process agent's
    CPU included): how much of a core the engine itself spent driving the callers.

    Exit codes: 0 done; 1 a step exceeded --fail-above (the ramp stopped after it); 2 bad input;
    3 a model endpoint failed its check, or the agent could no longer be reached for a later step
    (the steps measured are kept); 130 interrupted.

    \b
    Example:
      evalctl load specs/eva_airline --ramp 10,50,100 --fail-above 0.2
      evalctl load specs/eva_airline --agent ws://127.0.0.1:9000 --ramp 10,100 --sessions-per-step 200
    """
    from engine.commands.load import load
    from engine.run.load import LoadPlan

    try:
        callers = tuple(int(n) for n in _csv(ramp))
    except ValueError:
        raise UsageError(f"--ramp {ramp!r}: give caller counts separated by commas, e.g. 10,50,100") from None
    plan = LoadPlan(callers, _path(output_dir), sessions_per_step, step_duration, fail_above)
    plan.check()
    opts = RunOptions(
        spec_dir=Path(spec_dir),
        data_root=_path(data_root),
        scenarios=_csv(scenarios),
        domain_prefix=domain_prefix,
        agent=agent,
        user=user,
        base_url=base_url,
        api_key_env=api_key_env,
        request_timeout_s=request_timeout,
        turn_timeout_s=turn_timeout,
        max_turns=max_turns,
        replay_latency_s=replay_latency,
    )
    return load(opts, plan)


@group.command("serve")
@click.argument("role", type=click.Choice(["agent", "user", "model"]))
@click.option(
    "--port",
    default=8765,
    type=click.IntRange(0, 65535),
    help="0 = any free port (default: 8765 for agent and user, 8000 for model).",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option(
    "--backend", default="replay", show_default=True, metavar="SPEC", help="replay | noop | openai:MODEL"
)
@click.option(
    "--spec-dir", default=None, type=click.Path(file_okay=False), help="Needed by replay (gold traces)."
)
@click.option(
    "--heard",
    is_flag=True,
    help="model: match the caller's lines as a speech recogniser heard them (a voice bot's).",
)
@opt.data_root()
@opt.model_options()
def serve_cmd(
    role: Literal["agent", "user", "model"],
    heard: bool,
    port: int,
    host: str,
    backend: str,
    spec_dir: str | None,
    data_root: str | None,
    base_url: str | None,
    api_key_env: str,
    request_timeout: float,
) -> int:
    """Serve a built-in ROLE side (agent or user) as its own process, until Ctrl-C; or, with ROLE
    model, the gold model of --spec-dir's scenarios.

    Point a run at a side with --agent / --user ws://HOST:PORT.

    The gold model is an OpenAI-compatible chat-completions endpoint that answers each scenario's
    caller lines with its gold agent turns (words and tool calls), as a perfect model would. Point
    your own agent's LLM client at it (OPENAI_BASE_URL=http://HOST:PORT/v1, any key) and run the
    scenarios: an agent whose wiring is right (its tools registered, their arguments passed on,
    their results handed back, the call ended) passes them all, with no key and no cost. Its
    port defaults to 8000 (--port 8765 is the sides').

    \b
    Example:
      evalctl serve agent --port 8765 --backend replay --spec-dir specs/eva_airline
      evalctl run specs/eva_airline --agent ws://127.0.0.1:8765
      evalctl serve model --spec-dir specs/eva_airline --port 8000
      OPENAI_BASE_URL=http://127.0.0.1:8000/v1 OPENAI_API_KEY=local \\
        evalctl run specs/eva_airline --agent python:examples/python_agent.py:make_agent
    """
    from engine.commands.serve import serve, serve_model

    if role == "model":
        if spec_dir is None:
            raise UsageError("serve model plays the gold conversations of a spec: give --spec-dir DIR")
        if backend != "replay" or base_url is not None:
            raise UsageError("serve model plays the gold: --backend and --base-url do not apply")
        chosen = port if "port" in _given({"port": ("port",)}) else 8000
        return serve_model(Path(spec_dir), _path(data_root), host=host, port=chosen, heard=heard)
    if heard:
        raise UsageError("--heard goes with serve model")

    return serve(
        role,
        backend,
        host=host,
        port=port,
        spec_dir=_path(spec_dir),
        data_root=_path(data_root),
        base_url=base_url,
        api_key_env=api_key_env,
        request_timeout_s=request_timeout,
    )


@group.command("rescore")
@click.argument("run_dir", type=click.Path(file_okay=False))
@opt.scoring_options(recorded=True)
@click.option("--no-judge", is_flag=True, help="Score without a judge: its signals are not applicable.")
@opt.api_key_env(recorded=True)
@opt.judge_api_key_env(recorded=True)
@opt.judge_args(recorded=True)
@opt.cache_option()
@click.option("--only-errors", is_flag=True, help="Rescore only the results whose verdict is error.")
@opt.concurrency(recorded=True)
@opt.data_root()
@opt.exit_options()
def rescore_cmd(
    run_dir: str,
    judge_model: str | None,
    no_judge: bool,
    judge_base_url: str | None,
    judge_threshold: float | None,
    api_key_env: str | None,
    judge_api_key_env: str | None,
    judge_args: str | None,
    cache: str | None,
    min_agent_turns: int | None,
    strict_match: bool | None,
    only_errors: bool,
    concurrency: int | None,
    data_root: str | None,
    fail_under: float | None,
    allow_errors: bool,
) -> int:
    """Score the stored sessions of RUN_DIR again, without running any conversation: every
    signal, the composite, metrics.json and the summaries, with the run's scoring settings changed
    by the options given. Recorded in run.json; the new scoring settings become the run's.

    Exit codes as `evalctl run`.

    \b
    Example:
      evalctl rescore runs/20260101-120000 --judge-model gpt-4.1
      evalctl rescore runs/20260101-120000 --only-errors
    """
    from engine.commands.rescore import rescore
    from engine.core.model_args import parse_model_args
    from engine.results.rescoring import RescoreOptions

    if no_judge and (judge_model or judge_base_url):
        raise UsageError("--no-judge goes without --judge-model / --judge-base-url")
    changes: dict[str, Any] = {}
    if no_judge:
        changes["judge_model"] = None
    given = {
        "judge_model": judge_model,
        "judge_base_url": judge_base_url,
        "judge_threshold": judge_threshold,
        "judge_api_key_env": judge_api_key_env or api_key_env,
        "judge_args": parse_model_args(judge_args, "--judge-args") if judge_args is not None else None,
        "cache_dir": cache or None,
        "min_agent_turns": min_agent_turns,
        "strict_match": strict_match,
    }
    changes.update({k: v for k, v in given.items() if v is not None})
    opts = RescoreOptions(
        run_dir=Path(run_dir),
        changes=changes,
        only_errors=only_errors,
        concurrency=concurrency,
        data_root=_path(data_root),
        argv=tuple(sys.argv[1:]),
    )
    return rescore(opts, fail_under, allow_errors)


@group.command("merge")
@click.argument("runs", nargs=-1, required=True, type=click.Path(file_okay=False))
@opt.output_dir(required=True)
@opt.exit_options()
def merge_cmd(runs: tuple[str, ...], output_dir: str, fail_under: float | None, allow_errors: bool) -> int:
    """Combine shard runs (`evalctl run ... --shard I/N`) of the same specs and settings into one
    run folder with one summary, as one run of all their scenarios would have written. The runs
    are left as they were; runs with other specs or settings, or holding the same scenario, are
    refused.

    Exit codes as `evalctl run`.

    \b
    Example:
      evalctl run specs/eva_airline --shard 1/2 --output-dir runs/part1
      evalctl run specs/eva_airline --shard 2/2 --output-dir runs/part2
      evalctl merge runs/part1 runs/part2 --output-dir runs/all
    """
    from engine.commands.merge import merge

    return merge([Path(r) for r in runs], Path(output_dir), tuple(sys.argv[1:]), fail_under, allow_errors)


@group.command("diff")
@click.argument("run_dir", type=click.Path(file_okay=False))
@click.argument("scenario", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list, one object per scenario.")
def diff_cmd(run_dir: str, scenario: str | None, as_json: bool) -> int:
    """Explain why each failed scenario of RUN_DIR failed (or SCENARIO, failed or not; its name or
    its record id, as `run --scenarios` takes them): the failing signals, the DB difference field
    by field (DeepDiff after the hash's normalisation), records
    added or removed, and the actions the agent took.

    \b
    Example:
      evalctl diff runs/20260101-120000
      evalctl diff runs/20260101-120000 eva_airline__3_1_5 --json
      evalctl diff runs/20260101-120000 3.1.5
    """
    from engine.commands.diff import diff

    return diff(Path(run_dir), scenario, as_json=as_json)


@group.command("play")
@click.argument("spec_dir", type=click.Path(file_okay=False))
@click.argument("scenario")
@click.option(
    "--as",
    "role",
    type=click.Choice(["agent", "user"]),
    required=True,
    help="The side you play: agent (you answer the caller, calling tools) or user (you are the caller).",
)
@click.option(
    "--other",
    default="replay",
    metavar="SPEC",
    help="The other side: replay (the gold conversation), noop or openai:MODEL, e.g. openai:gpt-4.1 "
    "(default: replay).",
)
@opt.output_dir()
@opt.data_root()
@opt.model_options()
def play_cmd(
    spec_dir: str,
    scenario: str,
    role: Literal["agent", "user"],
    other: str,
    output_dir: str | None,
    data_root: str | None,
    base_url: str | None,
    api_key_env: str,
    request_timeout: float,
) -> int:
    """Play one side of SCENARIO yourself in the terminal, against replay or a model; the session
    is then scored and explained like any run's.

    Type what you say; `/tool NAME {json}` calls a tool (its result is shown), `/tools` lists the
    tools, `/end` hangs up.

    \b
    Example:
      evalctl play specs/tau2_retail tau2_retail__0 --as agent
      evalctl play specs/eva_airline eva_airline__3_1_5 --as user --other openai:gpt-4.1 --base-url URL
    """
    from engine.commands.play import play

    return play(
        Path(spec_dir),
        scenario,
        role,
        other,
        data_root=_path(data_root),
        output_dir=_path(output_dir),
        base_url=base_url,
        api_key_env=api_key_env,
        request_timeout_s=request_timeout,
    )


@group.command("report")
@click.argument("run_dir", type=click.Path(file_okay=False))
@opt.html("RUN_DIR/report.html")
@opt.prices()
@opt.junit()
@click.option(
    "--markdown",
    is_flag=True,
    help="Print a short Markdown summary for a pull-request comment instead of the table.",
)
@click.option(
    "--baseline",
    default=None,
    type=click.Path(file_okay=False),
    metavar="RUN_DIR",
    help="With --markdown: list the verdicts that flipped since this run.",
)
@click.option(
    "--failed-every-trial",
    is_flag=True,
    help="List (and in --html show) only the scenarios that failed in every trial with a verdict "
    "(pass^k 0 for every k; error trials left out, as pass^k leaves them) (default: every result).",
)
def report_cmd(
    run_dir: str,
    html: str | None,
    prices: str | None,
    junit: str | None,
    markdown: bool,
    baseline: str | None,
    failed_every_trial: bool,
) -> int:
    """Print the summary of RUN_DIR as a table, with the unsuccessful scenarios by name; with
    --html write one self-contained HTML report (charts, filterable scenario table, each
    conversation with its tool calls, DB differences, judge verdicts, links to the raw files);
    with --markdown a short summary for a pull-request comment (rates with their intervals,
    flips against --baseline, top failure causes); --junit FILE also writes JUnit XML.

    \b
    Example:
      evalctl report runs/20260101-120000
      evalctl report runs/20260101-120000 --prices prices.yaml
      evalctl report runs/20260101-120000 --html
      evalctl report runs/20260101-120000 --html /tmp/run.html
      evalctl report runs/B --markdown --baseline runs/A --junit junit.xml
      evalctl report runs/20260101-120000 --failed-every-trial
    """
    from engine.commands.report import report

    if markdown and html is not None:
        raise UsageError("--markdown and --html: choose one")
    if baseline is not None and not markdown:
        raise UsageError("--baseline goes with --markdown")
    out = None if html is None else Path(html) if html else Path(run_dir) / "report.html"
    return report(
        Path(run_dir),
        prices=_prices(prices),
        html=out,
        junit=_path(junit),
        markdown=markdown,
        baseline=_path(baseline),
        failed_every_trial=failed_every_trial,
    )


@group.command("compare")
@click.argument("run_a", type=click.Path(file_okay=False))
@click.argument("run_b", type=click.Path(file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@opt.html("RUN_B/compare-NAME.html, NAME being RUN_A's folder name")
@opt.prices()
def compare_cmd(run_a: str, run_b: str, as_json: bool, html: str | None, prices: str | None) -> int:
    """Compare RUN_B with RUN_A: scenarios that flipped pass -> fail and fail -> pass, per-signal
    rate changes, and whether the runs are comparable (same spec, template and data hashes; the
    files that differ are listed).

    \b
    Example:
      evalctl compare runs/20260101-120000 runs/20260102-090000
      evalctl compare runs/A runs/B --json
      evalctl compare runs/A runs/B --html             # writes runs/B/compare-A.html
      evalctl compare runs/A runs/B --html /tmp/ab.html
    """
    from engine.commands.compare import compare, compare_page_path

    if as_json and html is not None:
        raise UsageError("--json and --html: choose one")
    out = None if html is None else Path(html) if html else compare_page_path(Path(run_a), Path(run_b))
    return compare(Path(run_a), Path(run_b), as_json=as_json, html=out, prices=_prices(prices))


@group.command("cache")
@click.argument("action", type=click.Choice(["stats", "clear"]))
@click.argument("directory", required=False, default=None, metavar="[DIR]")
@click.option("--json", "as_json", is_flag=True, help="stats: print one JSON object.")
@click.option("--voice", is_flag=True, help="The voice cache (synthesis and recognition of --voice runs).")
def cache_cmd(action: str, directory: str | None, as_json: bool, voice: bool) -> int:
    """Show what the model-call cache in DIR holds (entries per endpoint and model), or empty it.

    DIR defaults to $EVALCTL_CACHE (the folder `evalctl run --cache DIR` fills). With --voice,
    or with neither DIR nor $EVALCTL_CACHE, the voice cache instead: what --voice runs synthesised
    and recognised ($EVALCTL_VOICE_CACHE, else ~/.cache/evalctl/voice).

    \b
    Example:
      evalctl cache stats ~/.cache/evalctl
      evalctl cache clear ~/.cache/evalctl
      evalctl cache clear --voice
    """
    from engine.commands.cache import cache_command

    return cache_command(action, directory, as_json=as_json, voice=voice)


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the CLI and map user errors to one clear line and an exit code."""
    try:
        rv = group.main(args=argv, prog_name="evalctl", standalone_mode=False)
    except EvalctlError as err:
        text = f"evalctl: {err}" if "\n" not in str(err) else str(err)
        # names from specs and sides: each line printed whole, no control or bidi character raw
        click.echo("\n".join(one_line(line, None) for line in text.splitlines()), err=True)
        return err.exit_code
    except click.exceptions.Abort:
        click.echo("evalctl: interrupted", err=True)
        return INTERRUPTED_EXIT
    except click.ClickException as err:
        err.show()
        return err.exit_code
    except click.exceptions.Exit as err:
        return err.exit_code
    except SystemExit:
        if type(sys.stdout).__name__.endswith("PacifyFlushWrapper"):  # click's sign of a closed pipe
            return BROKEN_PIPE_EXIT  # not click's 1, which `run` documents as below --fail-under
        raise
    return rv if isinstance(rv, int) else 0


def entry() -> None:
    """The ``evalctl`` program: :func:`main`, then evalctl's own helper threads are stopped
    (``engine.run.process_end``) and the process ends with its code even when a thread of the
    agent's own code never ends (``engine.util.aio.exit_process``)."""
    from engine.run.process_end import release_process
    from engine.util.aio import exit_process

    code = main()
    release_process()
    exit_process(code)


if __name__ == "__main__":
    entry()
