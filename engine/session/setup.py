"""What a run sets up before its sessions: each side (a backend factory, or an external side's
URI), each scenario's session setup (prompts and tool schemas), the model endpoints to check.
Used by the runner and by each worker process of a ``--workers`` run (``engine.run.worker_child``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine.core import render
from engine.core.model import Scenario
from engine.core.options import RunOptions
from engine.core.protocol import end_call_schema
from engine.session.backends import BackendFactory, BackendSpec
from engine.session.backends.budget import fit_to_turn
from engine.session.backends.factory import make_factory
from engine.session.backends.probe import Endpoint
from engine.session.backends.registry import scheme_of
from engine.session.conversation import SessionSetup
from engine.util.errors import UsageError


@dataclass(frozen=True)
class RoleEndpoint:
    """How one role's built-in ``openai:`` side connects: ``base_url`` (None: ``$OPENAI_BASE_URL``),
    the variable holding its key, its request fields (``engine.core.model_args``) and the option
    that sets its URL (named in messages)."""

    base_url: str | None
    api_key_env: str
    args: dict[str, Any]
    url_option: str


def role_endpoint(opts: RunOptions, role: str) -> RoleEndpoint:
    """The agent's endpoint (``--base-url``, ``--api-key-env``, ``--agent-args``) or the user
    simulator's (``--user-base-url`` / ``--user-api-key-env``, each defaulting to the agent's, and
    ``--user-args``)."""
    if role == "user":
        return RoleEndpoint(
            opts.user_base_url or opts.base_url,
            opts.user_api_key_env or opts.api_key_env,
            dict(opts.user_args),
            "--user-base-url" if opts.user_base_url else "--base-url",
        )
    return RoleEndpoint(opts.base_url, opts.api_key_env, dict(opts.agent_args), "--base-url")


def ignored_args(opts: RunOptions, agent: BackendSpec, user: BackendSpec) -> list[str]:
    """One warning line (without the ``evalctl:`` prefix) per role whose ``--agent-args`` /
    ``--user-args`` were given for a side that sends no model request (replay, noop, an external
    ``ws://`` side, an in-process agent): the args would be silently unused; and one for
    ``--judge-args`` given without ``--judge-model``."""
    lines = []
    for role, spec, args, flag in (
        ("agent", agent, opts.agent_args, "--agent-args"),
        ("user", user, opts.user_args, "--user-args"),
    ):
        if args and not scheme_of(spec).model_endpoint:
            side = spec.text or spec.kind
            lines.append(f"{flag}: ignored: the {role} side ({side}) sends no model request")
    if opts.scoring.judge_args and not opts.scoring.judge_model:
        lines.append("--judge-args: ignored: no judge runs without --judge-model")
    return lines


def side_for(
    spec: BackendSpec, opts: RunOptions, scenarios: Mapping[str, Scenario], role: str = "agent"
) -> BackendFactory | str:
    """An external side's URI, or the backend factory of the built-in ``role`` side (raises
    UsageError for a missing API key before anything is written). Its request timeout and retries
    fit the turn timeout (``engine.session.backends.budget.fit_to_turn``)."""
    if scheme_of(spec).external:
        return str(spec.uri)
    endpoint = role_endpoint(opts, role)
    timeout, retries = fit_to_turn(opts.request_timeout_s, opts.max_retries, opts.turn_timeout_s)
    return make_factory(
        spec,
        scenarios=scenarios,
        base_url=endpoint.base_url,
        api_key_env=endpoint.api_key_env,
        request_timeout_s=timeout,
        max_retries=retries,
        replay_latency_s=opts.replay_latency_s,
        args=endpoint.args,
        cache_dir=opts.cache_dir,
        url_option=endpoint.url_option,
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


def check_counts(opts: RunOptions) -> None:
    """UsageError for a concurrency or trial count below 1."""
    if opts.concurrency < 1:
        raise UsageError("--concurrency must be at least 1")
    if opts.trials < 1:
        raise UsageError("--trials must be at least 1")


def endpoints(opts: RunOptions, agent: BackendSpec, user: BackendSpec) -> list[Endpoint]:
    """The ``openai:`` endpoints and external ``ws://`` sides of the run (and an ``rtvi+ws://``
    bot: its ``ws://`` URL checked, its ``rtvi+ws://`` address quoted), to check before the first
    session. With a model-call cache (``--cache``) the model endpoints are not checked: a cached
    run needs no endpoint (an uncached request to one that is down fails its session, and
    ``--max-endpoint-failures`` stops the run)."""
    cached = bool(opts.cache_dir)
    found = [
        Endpoint(
            f"{role} model endpoint ({spec})",
            role_endpoint(opts, role).base_url,
            role_endpoint(opts, role).api_key_env,
            url_option=role_endpoint(opts, role).url_option,
        )
        for role, spec in (("agent", agent), ("user", user))
        if scheme_of(spec).model_endpoint and not cached
    ]
    found += [
        Endpoint(
            f"{role} side",
            None,
            "",
            side_uri=str(spec.uri),
            url_option=f"--{role}",
            side_text=spec.text or str(spec.uri),
        )
        for role, spec in (("agent", agent), ("user", user))
        if scheme_of(spec).external or (scheme_of(spec).agent_code and spec.uri)  # an RTVI bot too
    ]
    if opts.scoring.judge_model and not cached:
        judge = opts.scoring
        found.append(
            Endpoint(
                f"judge endpoint ({judge.judge_model})",
                judge.judge_base_url,
                judge.judge_api_key_env,
                url_option="--judge-base-url",
            )
        )
    return found


async def close_sides(sides: dict[str, BackendFactory | str]) -> None:
    """Close the built-in side factories of ``sides`` (a process that made them but did not serve
    them: its workers did)."""
    for side in sides.values():
        if hasattr(side, "aclose"):
            await side.aclose()
