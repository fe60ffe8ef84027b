"""Build the backend factory of a built-in side from its parsed ``--agent`` / ``--user`` spec."""

from __future__ import annotations

from typing import Any

from engine.session.backends import BackendFactory, BackendSpec
from engine.session.backends.registry import BackendOptions, scheme_of


def make_factory(
    spec: BackendSpec,
    *,
    scenarios: Any = None,
    base_url: str | None = None,
    api_key_env: str = "OPENAI_API_KEY",
    request_timeout_s: float = 60.0,
    max_retries: int = 4,
    replay_latency_s: float = 0.0,
    args: dict[str, Any] | None = None,
    cache_dir: str | None = None,
    url_option: str = "--base-url",
) -> BackendFactory:
    """The backend factory of a built-in side, built by the class registered under the spec's
    scheme (``engine.session.backends.registry``). ``scenarios`` (name -> Scenario) is needed by
    ``replay`` (and tells ``noop`` each scenario's hang-up tool). Raises UsageError for an external
    spec (no built-in side) or a missing API key. ``args``: the role's request fields
    (``engine.core.model_args``); ``cache_dir``: the model-call cache folder; ``url_option``: the
    option that sets ``base_url``, named in messages."""
    options = BackendOptions(
        scenarios=scenarios or {},
        base_url=base_url,
        api_key_env=api_key_env,
        request_timeout_s=request_timeout_s,
        max_retries=max_retries,
        replay_latency_s=replay_latency_s,
        args=dict(args or {}),
        cache_dir=cache_dir,
        url_option=url_option,
    )
    return scheme_of(spec).factory(spec, options)
