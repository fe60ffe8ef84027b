"""Option records shared by the run verb and the library that carries it out.

``RunOptions`` is what ``evalctl run`` takes; ``ScoringOptions`` the part of it that scoring reads.
They sit below their users (``engine.run.runner``, ``engine.results.scoring_stage``,
``engine.scoring.judge`` and
``engine.commands``), so no library module needs the command layer to know its options.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.core.plugin import Plugins


@dataclass(frozen=True)
class ScoringOptions:
    """Run-level scoring settings (the run verb fills them from CLI flags).

    ``min_agent_turns``: stalled rule, ``--min-agent-turns`` (default 3, spoken agent turns);
    ``strict_match``: ``--strict-match`` (no extra list items at any level in ``is_action_match``);
    ``judge_model``: ``--judge-model`` (None = judge off); ``judge_base_url``: ``--judge-base-url``
    (OpenAI-compatible, e.g. ``http://127.0.0.1:8000/v1``); ``judge_api_key_env``: environment
    variable holding the key (a placeholder is sent when unset); ``judge_threshold``:
    ``--judge-threshold`` (``judge_passed`` = score >= it, default 0.9); ``judge_retries``: extra
    attempts after a failed judge call; ``judge_retry_delay_s`` / ``judge_timeout_s``: seconds.
    """

    min_agent_turns: int = 3
    strict_match: bool = False
    judge_model: str | None = None
    judge_base_url: str | None = None
    judge_api_key_env: str = "OPENAI_API_KEY"
    judge_threshold: float = 0.9
    judge_retries: int = 2
    judge_retry_delay_s: float = 0.5
    judge_timeout_s: float = 60.0
    extra: dict[str, Any] = field(default_factory=dict)
    #: ``--judge-args``: the judge's request fields (``engine.core.model_args``; they override its
    #: default ``temperature: 0`` and ``response_format``).
    judge_args: dict[str, Any] = field(default_factory=dict)
    #: ``--cache DIR``: the model-call cache folder (``engine.util.callcache``); None: no cache.
    cache_dir: str | None = None


@dataclass(frozen=True)
class TaskSelection:
    """The tau2-style task selection (``--task-ids``, ``--task-split``, ``--num-tasks``), applied in
    that order after ``--scenarios`` / ``--domain`` (``engine.spec.selection.select_tasks``).

    ``task_ids``: record ids (tau2 task ids, eva record ids) in the order to run them; ``task_split``:
    a split named in the domain's id file (tau2's ``split_tasks.json``: ``train``, ``test``,
    ``base``); ``num_tasks``: keep the first N of what is left. All empty: no narrowing."""

    task_ids: tuple[str, ...] = ()
    task_split: str | None = None
    num_tasks: int | None = None

    def __bool__(self) -> bool:
        return bool(self.task_ids) or self.task_split is not None or self.num_tasks is not None


@dataclass(frozen=True)
class RunOptions:
    """Everything ``evalctl run`` takes. Times in seconds; ``agent`` / ``user`` are backend specs
        (``replay``, ``openai:MODEL``, ``ws://host:port``); ``output_dir`` None = ``runs/<UTC stamp>``;
        ``resume`` reuses that run directory and its settings (``engine.session.settings``) and runs only what
        has no verdict there (``keep_errors``: not the results whose verdict is ``error``);
        ``replay_latency_s`` is a benchmark knob (sleep per replay model step); ``progress`` None =
        live display on a terminal, else one line per session (False) / live (True); ``quiet`` = none;
        ``voice`` = audio sessions with the agent (``--voice``; their settings, the TTS engine and the
        recogniser, are an ``engine.session.voice.run.VoiceRun`` given to ``engine.run.runner.run``);
        ``shard``
    ``"I/N"`` runs one slice of the selection (``engine.run.shard``); ``workers`` the processes that run
    the sessions (``engine.run.workers``; the CLI's default is the machine's cores, this record's is 1).

        The field order is the key order of ``args`` in ``run.json`` (see ``engine.run.runner``)."""

    spec_dir: Path
    data_root: Path | None = None
    plugins: Plugins = field(default_factory=dict)
    scenarios: tuple[str, ...] = ()
    domain_prefix: str | None = None
    agent: str = "replay"
    user: str = "replay"
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    concurrency: int = 8
    output_dir: Path | None = None
    max_turns: int | None = None
    trials: int = 1
    resume: Path | None = None
    turn_timeout_s: float = 300.0
    max_tool_rounds: int = 10
    max_tool_calls_per_turn: int = 50
    request_timeout_s: float = 60.0
    max_retries: int = 4
    replay_latency_s: float = 0.0
    progress: bool | None = None
    quiet: bool = False
    scoring: ScoringOptions = field(default_factory=ScoringOptions)
    #: Settings given on the command line (``agent``, ``scoring.judge_model``... see
    #: ``engine.session.settings``): a resume refuses those that differ from the run's.
    explicit: frozenset[str] = frozenset()
    #: Results whose verdict is ``error`` are run again by a resume unless this is set.
    keep_errors: bool = False
    voice: bool = False
    #: ``--shard I/N``: run only that slice of the selection (``engine.run.shard``); a setting, so a
    #: resume of a shard run keeps it.
    shard: str | None = None
    #: Worker processes sharing the run (``--workers``; ``engine.run.workers``): 1 runs in this process
    #: (but see ``isolate_agent_code``).
    workers: int = 1
    #: An agent running the user's own code in evalctl's process (``python:``, ``pipecat:``,
    #: ``livekit:``) runs in a supervised worker process even when the run has one (Linux, forked:
    #: milliseconds), so that its crash or a blocked event loop fails its own sessions instead of
    #: taking the run (``engine.run.workers``). False (the CLI's ``--workers 1``): in this process,
    #: where a debugger's breakpoint in the agent works.
    isolate_agent_code: bool = True
    #: ``--trials auto[:MAX]``: the width (0–1) of the overall rate's 95 % interval at which an
    #: adaptive run stops spending trials (``engine.run.adaptive``; ``trials`` is then MAX); None:
    #: every scenario runs ``trials`` times.
    adaptive_target_width: float | None = None
    #: ``--user-base-url`` / ``--user-api-key-env``: the user simulator's endpoint and key variable
    #: (None: the agent's, ``base_url`` / ``api_key_env``).
    user_base_url: str | None = None
    user_api_key_env: str | None = None
    #: ``--agent-args`` / ``--user-args``: each role's request fields (``engine.core.model_args``).
    agent_args: dict[str, Any] = field(default_factory=dict)
    user_args: dict[str, Any] = field(default_factory=dict)
    #: ``--cache DIR`` / ``$EVALCTL_CACHE``: the model-call cache folder (``engine.util.callcache``).
    cache_dir: str | None = None
    #: ``--max-endpoint-failures N``: after N sessions in a row end on the same model-endpoint
    #: failure the run stops; the sessions not run are ``error`` results (0: never stop).
    max_endpoint_failures: int = 3
    #: ``--regenerate N``: a session whose caller broke its instructions (``caller fidelity``,
    #: ``engine.scoring.fidelity``) is run again with a new caller seed, at most N times; 0 never.
    regenerate: int = 2
    #: ``--task-ids`` / ``--task-split`` / ``--num-tasks`` (narrow the selection, as tau2 does).
    tasks: TaskSelection = field(default_factory=TaskSelection)
    #: ``--language CODE``: run the domain in that language (its ``languages:`` block in domain.yaml:
    #: e.g. eva_airline's ``fr`` / ``fr-CA``, eva 2.1.0's cultures); None: the spec's own ``language``.
    language: str | None = None
    #: ``--allow-gold-mismatch``: run a spec whose gold replay fails (``engine.spec.gold_check``)
    #: instead of refusing it (exit 2); the run records it in ``run.json``.
    allow_gold_mismatch: bool = False
    #: ``--caller-voice``: the caller's espeak-ng voices in a voice run, dealt across the scenarios
    #: (``engine.core.caller.dealt_voice``); empty: the language's voice.
    caller_voices: tuple[str, ...] = ()
    #: ``--perturb``: the line's perturbation in a voice run, in its canonical text
    #: (``engine.core.caller.Perturbation.spec``); None: clean.
    perturb: str | None = None
