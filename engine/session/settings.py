"""A run's settings: the options that decide what its results mean (which agent and user sides,
which models and endpoints, the session limits, the scoring rules).

``run.json`` records them as ``settings`` when a run starts. ``--resume`` reuses them, so a
resumed run finishes with the sides, models and rules it started with, and refuses one given on
its command line with another value (one line naming the option); ``evalctl rescore`` replaces
the scoring part. Where the API keys are read from (``--api-key-env``) is reused too, but may be
given anew: it names a variable, not a model. :func:`run_info` is what a run records of itself
(``run.json``: its settings and every option).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from engine.core.model import Scenario
from engine.core.options import RunOptions, ScoringOptions
from engine.session.backends import BackendSpec
from engine.util.errors import UsageError

#: RunOptions fields that are settings (``trials`` also decides the run directory's layout).
SESSION_SETTINGS = (
    "agent",
    "user",
    "base_url",
    "api_key_env",
    "trials",
    "max_turns",
    "turn_timeout_s",
    "max_tool_rounds",
    "max_tool_calls_per_turn",
    "request_timeout_s",
    "max_retries",
    "voice",
    "shard",
    "adaptive_target_width",
    "user_base_url",
    "user_api_key_env",
    "agent_args",
    "user_args",
    "language",
    "allow_gold_mismatch",
    "caller_voices",
    "perturb",
)
#: ScoringOptions fields that are settings (under ``scoring`` in the record).
SCORING_SETTINGS = (
    "min_agent_turns",
    "strict_match",
    "judge_model",
    "judge_base_url",
    "judge_api_key_env",
    "judge_threshold",
    "judge_retries",
    "judge_retry_delay_s",
    "judge_timeout_s",
    "judge_args",
)
#: Settings a resume may give with another value: where a key is read from, and the infrastructure
#: settings (how long and how often a model request is tried, how long a side may stay silent),
#: not what answers nor how it is asked or scored. Concurrency, workers and the cache are not
#: settings at all: a resume may always change them.
OVERRIDABLE = frozenset(
    {
        "api_key_env",
        "user_api_key_env",
        "scoring.judge_api_key_env",
        "request_timeout_s",
        "max_retries",
        "turn_timeout_s",
        "scoring.judge_retries",
        "scoring.judge_retry_delay_s",
        "scoring.judge_timeout_s",
        "allow_gold_mismatch",
    }
)

#: The command-line spelling of each setting, for messages (``scoring.`` ones by their own name).
FLAGS: dict[str, str] = {
    "agent": "--agent",
    "user": "--user",
    "base_url": "--base-url",
    "api_key_env": "--api-key-env",
    "trials": "--trials",
    "max_turns": "--max-turns",
    "turn_timeout_s": "--turn-timeout",
    "max_tool_rounds": "--max-tool-rounds",
    "max_tool_calls_per_turn": "--max-tool-calls",
    "request_timeout_s": "--request-timeout",
    "max_retries": "model request retries",
    "voice": "--voice",
    "shard": "--shard",
    "adaptive_target_width": "--target-width",
    "user_base_url": "--user-base-url",
    "user_api_key_env": "--user-api-key-env",
    "agent_args": "--agent-args",
    "user_args": "--user-args",
    "language": "--language",
    "allow_gold_mismatch": "--allow-gold-mismatch",
    "caller_voices": "--caller-voice",
    "perturb": "--perturb",
    "scoring.judge_args": "--judge-args",
    "scoring.min_agent_turns": "--min-agent-turns",
    "scoring.strict_match": "--strict-match",
    "scoring.judge_model": "--judge-model",
    "scoring.judge_base_url": "--judge-base-url",
    "scoring.judge_api_key_env": "--judge-api-key-env",
    "scoring.judge_threshold": "--judge-threshold",
    "scoring.judge_retries": "judge retries",
    "scoring.judge_retry_delay_s": "judge retry delay",
    "scoring.judge_timeout_s": "judge timeout",
}


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def with_resolved_base_url(opts: RunOptions) -> RunOptions:
    """``opts`` with ``base_url`` (and a judge URL that defaulted to it) taken from
    ``$OPENAI_BASE_URL`` when not given, so the endpoint recorded is the one used."""
    if opts.base_url or not os.environ.get("OPENAI_BASE_URL"):
        return opts
    url = os.environ["OPENAI_BASE_URL"]
    scoring = opts.scoring
    if scoring.judge_model and not scoring.judge_base_url:
        scoring = dataclasses.replace(scoring, judge_base_url=url)
    return dataclasses.replace(opts, base_url=url, scoring=scoring)


def settings_of(opts: RunOptions) -> dict[str, Any]:
    """The settings record of ``opts`` (JSON values): the session settings, then ``scoring``."""
    body: dict[str, Any] = {name: getattr(opts, name) for name in SESSION_SETTINGS}
    body["scoring"] = scoring_settings(opts.scoring)
    return _plain(body)


def scoring_settings(scoring: ScoringOptions) -> dict[str, Any]:
    """The ``scoring`` part of a settings record."""
    return _plain({name: getattr(scoring, name) for name in SCORING_SETTINGS})


def scoring_from(recorded: Mapping[str, Any], base: ScoringOptions) -> ScoringOptions:
    """``base`` with the recorded scoring settings (keys this version does not know are ignored)."""
    known = {k: v for k, v in recorded.items() if k in SCORING_SETTINGS}
    return dataclasses.replace(base, **known)


def _shown(value: Any) -> str:
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value)) or "(none)"
    return "(none)" if value is None else str(value)


def resumed_options(opts: RunOptions, recorded: Mapping[str, Any], run_dir: Path) -> RunOptions:
    """``opts`` for a resume of the run in ``run_dir`` whose settings are ``recorded``: every
    setting is the recorded one. Raises UsageError (one line) for the first setting ``opts``
    names explicitly (``opts.explicit``) with another value, except the key variables
    (:data:`OVERRIDABLE`), which may be given anew."""
    given = settings_of(opts)
    session = {k: v for k, v in recorded.items() if k in SESSION_SETTINGS}
    scoring_field = recorded.get("scoring")
    scoring_rec: dict[str, Any] = scoring_field if isinstance(scoring_field, dict) else {}
    pairs = [(k, session[k], given[k]) for k in session] + [
        (f"scoring.{k}", scoring_rec[k], given["scoring"][k]) for k in scoring_rec if k in SCORING_SETTINGS
    ]
    keep: dict[str, Any] = {}
    for name, was, now in pairs:
        if name in opts.explicit and now != was:
            if name in OVERRIDABLE:
                keep[name] = now
                continue
            flag = FLAGS.get(name, name)
            raise UsageError(
                f"--resume: the run in {run_dir} was made with {flag} {_shown(was)}; this resume says "
                f"{flag} {_shown(now)} (a resumed run keeps its settings: leave the option out, or "
                "start a new run)"
            )
    session = {k: keep.get(k, v) for k, v in session.items()}
    if isinstance(session.get("caller_voices"), list):  # a JSON list in run.json
        session["caller_voices"] = tuple(session["caller_voices"])
    scoring = {k: keep.get(f"scoring.{k}", v) for k, v in scoring_rec.items() if k in SCORING_SETTINGS}
    return dataclasses.replace(opts, **session, scoring=scoring_from(scoring, opts.scoring))


def check_judge_key(scoring: ScoringOptions) -> None:
    """A configured judge needs its key variable set, like a model side: a UsageError before the
    run, not error verdicts after it (any non-empty value for a local server that needs none)."""
    if scoring.judge_model and not os.environ.get(scoring.judge_api_key_env):
        raise UsageError(
            f"environment variable {scoring.judge_api_key_env} is not set: it must hold the API key "
            f"for the judge {scoring.judge_model} (any non-empty value for a server that needs none)"
        )


def run_info(
    opts: RunOptions, loaded: Any, chosen: list[Scenario], agent: BackendSpec, user: BackendSpec
) -> dict[str, Any]:
    """What ``run.json`` and the summary need of a run (``engine.results.scoring_stage`` ``run_info``): the
    spec
    dir, domain, sides, selection, data root, settings and every option (:func:`options_record`)."""
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
        "settings": settings_of(opts),
        "args": options_record(opts),
    }


def options_record(opts: RunOptions) -> dict[str, Any]:
    """Every run option as JSON values (paths as strings), scoring options nested; no secrets
    (the API key is named by its environment variable only). Left out: ``progress`` (display only),
    ``plugins`` (the registry's records, not an option given to the run) and ``explicit``."""
    skip = ("progress", "plugins", "explicit")
    record = {f.name: getattr(opts, f.name) for f in dataclasses.fields(opts) if f.name not in skip}
    record["scoring"] = dataclasses.asdict(opts.scoring)
    record["tasks"] = dataclasses.asdict(opts.tasks)
    return json.loads(json.dumps(record, default=str))
