"""The command-line options that several verbs take, each defined once with one help text.

``cli.py`` applies them. A verb that starts a run from nothing (``run``, ``serve``) gives an option
its fresh default; a verb that works on a stored run (``rescore``) passes ``recorded=True``: the
option then defaults to None, "as the run recorded it", and its help says so. Every help text ends
with the default, after an example where the option takes a value: ``..., e.g. 0.9 (default: never).``

Only click and ``engine.util.errors`` (which ``cli.py`` imports anyway) are imported here, so
``evalctl --help`` stays fast.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import click

from engine.util.errors import UsageError

#: A click option decorator (or several applied as one).
Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]

#: The default of an option of a verb that works on a stored run.
RECORDED = "the run's"


class FiniteFloatRange(click.FloatRange):
    """``click.FloatRange`` that also refuses NaN and the infinities (a NaN passes every
    comparison click makes, so ``--target-width nan`` was accepted): bad input, exit 2."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if number is not None and not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number


def _default(recorded: bool, fresh: str) -> str:
    return f"(default: {RECORDED if recorded else fresh})"


def stack(*options: Decorator) -> Decorator:
    """``options`` as one decorator, listed in ``--help`` in the order given."""

    def apply(f: Callable[..., Any]) -> Callable[..., Any]:
        for option in reversed(options):
            f = option(f)
        return f

    return apply


def data_root() -> Decorator:
    """``--data-root DIR``: where the upstream data releases are."""
    return click.option(
        "--data-root",
        default=None,
        metavar="DIR",
        help="Folder with the upstream data releases (eva-0.1.3/, tau2-17e07b1/, nemo-1a83139/...; "
        "`make data` fills ./data), e.g. ~/eva-data (default: $EVAL_DATA_ROOT, else ./data).",
    )


def selection() -> Decorator:
    """``--scenarios`` and ``--domain``: :func:`scenario_selection` (``run``, ``load``)."""
    return scenario_selection()


def sides() -> Decorator:
    """``--agent SPEC`` and ``--user SPEC``: the backends of the agent under test and the caller."""
    return stack(
        click.option(
            "--agent",
            default="replay",
            metavar="SPEC",
            help=(
                "replay | noop (greets and hangs up: the floor) | openai:MODEL | ws://host:port"
                " | rtvi+ws://host:port (an RTVI bot) | python:FILE.py:FACTORY"
                " | pipecat:FILE.py:FACTORY | livekit:FILE.py:FACTORY"
                " (in-process agents: docs/agents.md), e.g. openai:gpt-4.1 (default: replay)."
            ),
        ),
        click.option(
            "--user",
            default="replay",
            metavar="SPEC",
            help="replay | openai:MODEL | ws://host:port | python:FILE.py:FACTORY (a caller of your own "
            "code: docs/agents.md), e.g. openai:gpt-4.1-mini (default: replay).",
        ),
    )


def output_dir(required: bool = False) -> Decorator:
    """``--output-dir DIR``: the run folder a verb writes (``required``: a new one, no default)."""
    return click.option(
        "--output-dir",
        required=required,
        default=None,
        type=click.Path(file_okay=False),
        metavar="DIR",
        help="The run folder to write, e.g. runs/part1 "
        + ("(required: a folder that holds no run yet)." if required else "(default: runs/<UTC timestamp>)."),
    )


def fail_under() -> Decorator:
    """``--fail-under RATE``: exit 1 below that strict success rate (errors count as failures)."""
    return click.option(
        "--fail-under",
        default=None,
        type=FiniteFloatRange(0, 1),
        metavar="RATE",
        help="Exit 1 when the strict success rate (errors count as failures; with --allow-errors the "
        "overall rate, errors left out) is below RATE (0..1), e.g. 0.9 (default: never).",
    )


def allow_errors() -> Decorator:
    """``--allow-errors``: exit 0 although some result has the verdict error."""
    return click.option(
        "--allow-errors",
        is_flag=True,
        help="Exit 0 (or by --fail-under, judged on the overall rate with errors left out) even when "
        "results have the verdict error (default: exit 3).",
    )


def exit_options() -> Decorator:
    """``--fail-under`` and ``--allow-errors``: the exit code of a verb that writes a run summary."""
    return stack(fail_under(), allow_errors())


def concurrency(recorded: bool = False) -> Decorator:
    """``--concurrency N``: sessions at once in a run; judge requests at once in a rescore."""
    return click.option(
        "--concurrency",
        default=None if recorded else 8,
        type=click.IntRange(min=1),
        metavar="N",
        help=f"Sessions (in a rescore: judge requests) at once, e.g. 4 {_default(recorded, '8')}.",
    )


def model_options() -> Decorator:
    """``--base-url``, ``--api-key-env``, ``--request-timeout``: how the built-in openai sides connect."""
    return stack(
        click.option(
            "--base-url",
            default=None,
            metavar="URL",
            help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1 (default: $OPENAI_BASE_URL).",
        ),
        api_key_env(),
        click.option(
            "--request-timeout",
            default=60.0,
            type=FiniteFloatRange(min=0, min_open=True),
            metavar="SECONDS",
            help="Seconds per model request, e.g. 120 (default: 60).",
        ),
    )


def api_key_env(recorded: bool = False) -> Decorator:
    """``--api-key-env VAR``: the variable holding the API key of the sides' and the judge's endpoints."""
    return click.option(
        "--api-key-env",
        default=None if recorded else "OPENAI_API_KEY",
        metavar="VAR",
        help=f"Environment variable with the model endpoints' API key, e.g. MY_API_KEY "
        f"{_default(recorded, 'OPENAI_API_KEY')}.",
    )


def scoring_options(recorded: bool = False) -> Decorator:
    """The scoring settings: ``--min-agent-turns``, ``--strict-match``, ``--judge-model``,
    ``--judge-base-url``, ``--judge-threshold`` (``engine.core.options.ScoringOptions``)."""
    return stack(
        click.option(
            "--min-agent-turns",
            default=None if recorded else 3,
            type=click.IntRange(min=0),
            metavar="N",
            help="Stalled rule: a scenario whose agent spoke fewer turns (or fewer than its gold "
            "conversation, if that is shorter) fails and is left out of the per-signal rates, e.g. 1 "
            + _default(recorded, "3")
            + ".",
        ),
        click.option(
            "--strict-match/--no-strict-match",
            default=None if recorded else False,
            help="Action match: list lengths must agree at every level, e.g. --strict-match "
            + _default(recorded, "off")
            + ".",
        ),
        click.option(
            "--judge-model",
            default=None,
            metavar="MODEL",
            help=f"LLM judge model, e.g. gpt-4.1 {_default(recorded, 'judge off')}.",
        ),
        click.option(
            "--judge-base-url",
            default=None,
            metavar="URL",
            help="OpenAI-compatible judge endpoint, e.g. http://127.0.0.1:8000/v1 "
            + (
                "(default: the run's judge URL, else its --base-url)."
                if recorded
                else "(default: --base-url)."
            ),
        ),
        click.option(
            "--judge-threshold",
            default=None if recorded else 0.9,
            type=FiniteFloatRange(0, 1),
            metavar="SCORE",
            help=f"judge_passed = judge score >= SCORE (0..1), e.g. 0.8 {_default(recorded, '0.9')}.",
        ),
    )


def prices() -> Decorator:
    """``--prices FILE``: a price table for the cost columns."""
    return click.option(
        "--prices",
        default=None,
        metavar="FILE",
        type=click.Path(dir_okay=False),
        help="YAML price file (model -> {input, output} per million tokens): adds the cost per role "
        "and per scenario, e.g. prices.yaml (default: no costs).",
    )


def html(default_name: str) -> Decorator:
    """``--html [OUT.html]``: an option whose value may be left out (then ``""``)."""
    return click.option(
        "--html",
        "html",
        is_flag=False,
        flag_value="",
        default=None,
        metavar="[OUT.html]",
        help=f"Write a self-contained HTML page instead, e.g. --html /tmp/run.html "
        f"(default file: {default_name}).",
    )


def role_model_options() -> Decorator:
    """Per-role endpoints and request fields of ``evalctl run``: ``--user-base-url``,
    ``--user-api-key-env``, ``--judge-api-key-env``, ``--agent-args`` / ``--user-args`` /
    ``--judge-args`` (JSON, ``engine.core.model_args``), ``--cache`` and ``--max-endpoint-failures``."""
    return stack(
        click.option(
            "--user-base-url",
            default=None,
            metavar="URL",
            help="The user simulator's OpenAI-compatible endpoint, e.g. http://127.0.0.1:8001/v1 "
            "(default: --base-url).",
        ),
        click.option(
            "--user-api-key-env",
            default=None,
            metavar="VAR",
            help="Environment variable with the user simulator endpoint's key, e.g. USER_KEY "
            "(default: --api-key-env).",
        ),
        judge_api_key_env(),
        _args_option("agent"),
        _args_option("user"),
        judge_args(),
        cache_option(),
        click.option(
            "--max-endpoint-failures",
            default=3,
            type=click.IntRange(min=0),
            metavar="N",
            help="Stop the run after N sessions in a row end on the same model-endpoint failure; the "
            "sessions not run are errors (infrastructure), e.g. 10; 0 never stops (default: 3).",
        ),
    )


def _args_option(role: str) -> Decorator:
    return click.option(
        f"--{role}-args",
        default=None,
        metavar="JSON",
        help=f"The {role} model's request fields (temperature, top_p, seed, max_tokens, reasoning_effort, "
        "tool_choice; other keys go in the body as given), e.g. "
        '\'{"temperature": 0, "seed": 7, "top_k": 40}\' (default: none: the server\'s defaults).',
    )


def judge_api_key_env(recorded: bool = False) -> Decorator:
    """``--judge-api-key-env VAR``: the variable holding the judge endpoint's key."""
    return click.option(
        "--judge-api-key-env",
        default=None,
        metavar="VAR",
        help="Environment variable with the judge endpoint's key, e.g. JUDGE_KEY "
        + _default(recorded, "--api-key-env")
        + ".",
    )


def judge_args(recorded: bool = False) -> Decorator:
    """``--judge-args JSON``: the judge's request fields (``engine.core.model_args``)."""
    return click.option(
        "--judge-args",
        default=None,
        metavar="JSON",
        help='The judge\'s request fields, e.g. \'{"seed": 1, "max_tokens": 800}\' '
        + _default(recorded, "none: temperature 0 and a JSON-schema response_format only")
        + ".",
    )


def cache_option() -> Decorator:
    """``--cache DIR`` (``$EVALCTL_CACHE``): the model-call cache folder (``engine.util.callcache``)."""
    return click.option(
        "--cache",
        "cache",
        default=None,
        envvar="EVALCTL_CACHE",
        metavar="DIR",
        type=click.Path(file_okay=False),
        help="Model-call cache folder: a request already answered (same endpoint, model, messages, "
        "tools and settings) is not sent again, e.g. ~/.cache/evalctl (default: $EVALCTL_CACHE, "
        "else no cache).",
    )


def junit() -> Decorator:
    """``--junit FILE``: also write the run's JUnit XML (``engine.results.junit``)."""
    return click.option(
        "--junit",
        default=None,
        metavar="FILE",
        type=click.Path(dir_okay=False),
        help="Also write JUnit XML there, e.g. junit.xml: one test case per scenario and trial (failures "
        "with the first cause `evalctl diff` gives, error verdicts as errors, missing or N/A as skipped) "
        "(default: none).",
    )


#: A click option callback: the option's values (``multiple=True``) -> what the verb gets.
Callback = Callable[[click.Context, click.Parameter, tuple[str, ...]], str | None]


def _joined(noun: str, part: str, parts: str, example: str) -> Callback:
    """The callback of a comma-separated list option (``--scenarios``, ``--task-ids``): the option
    given again as one comma-separated list (before: the last one alone was kept, silently); None
    when not given.

    Raises UsageError (exit 2), naming the option, for a value that names no ``noun`` (``''``,
    ``' , '``) or holds an empty ``part`` (``A,,B``, ``A,``), saying to give ``parts`` as in
    ``example``: before, ``--scenarios A --scenarios ''`` ran A alone, ``list --scenarios ''``
    listed every scenario and ``--task-ids 0,,3`` took 0 and 3, silently."""

    def joined(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> str | None:
        option = param.opts[0]
        for value in values:
            pieces = [piece.strip() for piece in value.split(",")]
            if not any(pieces):
                raise UsageError(f"{option} {value!r} names no {noun} (leave it out to run all)")
            if not all(pieces):
                raise UsageError(
                    f"{option} {value!r} has an empty {part}: give {parts} separated by "
                    f"single commas, e.g. {example}"
                )
        return ",".join(values) if values else None

    return joined


def turn_timeout() -> Decorator:
    """``--turn-timeout SECONDS`` (``turn_timeout``): taken by ``run`` and ``load``."""
    return click.option(
        "--turn-timeout",
        default=300.0,
        type=FiniteFloatRange(min=0, min_open=True),
        help="Seconds a side may stay silent, e.g. 30 (default: 300).",
    )


def max_turns() -> Decorator:
    """``--max-turns N`` (``max_turns``): taken by ``run`` and ``load``."""
    return click.option(
        "--max-turns",
        default=None,
        type=click.IntRange(min=1),
        help="Agent turns before a timeout stop, e.g. 20 (default: no limit; max_duration still applies).",
    )


def _one(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> str | None:
    """An option that takes one value refused when given twice (before: the last one was kept,
    silently); None when not given."""
    if len(set(values)) > 1:
        raise click.BadParameter(
            f"given {len(values)} times ({', '.join(values)}): give one (--scenarios A,B names several)"
        )
    if values and not values[0].strip():  # before: '' selected everything, ' ' nothing
        flag = max(getattr(param, "opts", None) or [f"--{param.name}"], key=len)
        raise UsageError(f"{flag} {values[0]!r} names no prefix (leave it out to run all)")
    return values[0] if values else None


def scenario_selection() -> Decorator:
    """``--scenarios A,B`` (names or record ids) and ``--domain PREFIX``
    (``engine.spec.selection.select_scenarios``; an empty value or name is refused, :func:`_joined`):
    taken by ``run``, ``load``, ``validate`` and ``list``."""
    return stack(
        click.option(
            "--scenarios",
            metavar="A,B",
            multiple=True,
            callback=_joined("scenario", "name", "names or record ids", "A,B"),
            help="Only these scenarios, comma-separated names or record ids, e.g. "
            "eva_airline__3_1_5,1.1.2; given again, the lists add up (default: all).",
        ),
        click.option(
            "--domain",
            "domain_prefix",
            metavar="PREFIX",
            multiple=True,
            callback=_one,
            help="Only the scenarios whose name starts so, e.g. eva_airline__3 (default: all).",
        ),
    )


def selectors() -> Decorator:
    """Every scenario selector: :func:`scenario_selection` and :func:`task_selection` (the one
    option set of ``run``, ``validate`` and ``list``)."""
    return stack(scenario_selection(), task_selection())


def task_selection() -> Decorator:
    """``--task-ids``, ``--task-split``, ``--num-tasks``: tau2's task selection
    (``engine.core.options.TaskSelection``; an empty value or id is refused, :func:`_joined`)."""
    return stack(
        click.option(
            "--task-ids",
            metavar="ID,...",
            multiple=True,
            callback=_joined("task", "id", "task ids", "0,3"),
            help="Only the tasks with these record ids (tau2 task ids, eva record ids), in this order, "
            "e.g. 0,3,7; given again, the lists add up (default: all).",
        ),
        click.option(
            "--task-split",
            default=None,
            metavar="SPLIT",
            help="Only the tasks of this split of the data (tau2: train, test, base), e.g. test "
            "(default: no split).",
        ),
        click.option(
            "--num-tasks",
            default=None,
            type=click.IntRange(min=1),
            metavar="N",
            help="Only the first N tasks of the selection, e.g. 5 (default: all).",
        ),
    )


def language() -> Decorator:
    """``--language CODE``: the domain in another language (``engine.spec.languages``)."""
    return click.option(
        "--language",
        default=None,
        metavar="CODE",
        help="The domain in that language (its domain.yaml `languages:`; eva_airline: fr, fr-CA, eva "
        "2.1.0's cultures: names, starting utterance, the caller's espeak-ng voice), e.g. fr "
        "(default: the spec's own).",
    )


class PerturbationType(click.ParamType[str]):
    """``--perturb``'s grammar (``engine.core.caller.parse_perturbation``): the canonical text
    (``telephone,snr=10``) on success, click's one-line error (exit 2) otherwise."""

    name = "PERTURBATION"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from engine.core.caller import parse_perturbation  # only when the option is given

        try:
            return parse_perturbation(str(value)).spec
        except ValueError as err:
            self.fail(str(err), param, ctx)


#: The help of the caller options (``run``; the same words in docs/cli.md).
CALLER_VOICE_HELP = (
    "With --voice: the caller's espeak-ng voice, or a comma-separated list dealt across the "
    "scenarios (each scenario always gets the same one, by its name); a scenario's `caller: voice:` "
    "overrides it, e.g. en-us+f3,en-gb (default: the language's voice)."
)
PERTURB_HELP = (
    "With --voice: perturb the line, e.g. snr=10,telephone,speed=1.2,volume=-6 (items: telephone, "
    "snr=DB, speed=F, volume=DB, or clean). All of it changes the caller's speech (what the agent "
    "hears); telephone and snr also change the agent's speech as the caller and the recogniser hear "
    "it; a scenario's `caller: perturb:` overrides it (default: clean)."
)


def caller_options() -> Decorator:
    """``--caller-voice VOICES`` and ``--perturb SPEC``: how the caller of a voice run sounds
    (``engine.core.caller``)."""

    def apply(func: Callable[..., Any]) -> Callable[..., Any]:
        func = click.option(
            "--perturb", default=None, type=PerturbationType(), metavar="SPEC", help=PERTURB_HELP
        )(func)
        return click.option(
            "--caller-voice", default=None, metavar="VOICE[,VOICE...]", help=CALLER_VOICE_HELP
        )(func)

    return apply


CONDITIONS_HELP = (
    "With --voice: run the scenarios once per caller condition (each a --perturb; separate them by "
    "; when one has several items), e.g. clean,snr=5,telephone, each in RUN_DIR/<label>/, then "
    "print and write (RUN_DIR/conditions.json) each condition's rates and voice figures and its "
    "paired difference against the first (default: one run, one condition)."
)


def conditions() -> Decorator:
    """``--conditions C1,C2[,...]``: one run per caller condition, compared
    (``engine.commands.conditions``)."""
    return click.option("--conditions", default=None, metavar="C1,C2[,...]", help=CONDITIONS_HELP)
