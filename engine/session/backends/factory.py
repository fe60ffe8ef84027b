"""Build the backend factory of a built-in side from its parsed ``--agent`` / ``--user`` spec."""

from __future__ import annotations

from typing import Any

from engine.session.backends import BackendFactory, BackendSpec
from engine.session.backends.noop import NoopFactory
from engine.session.backends.replay import ReplayFactory
from engine.util.errors import UsageError


def make_factory(
    spec: BackendSpec,
    *,
    scenarios: Any = None,
    base_url: str | None = None,
    api_key_env: str = "OPENAI_API_KEY",
    request_timeout_s: float = 60.0,
    max_retries: int = 4,
    replay_latency_s: float = 0.0,
) -> BackendFactory:
    """The backend factory of a built-in side. ``scenarios`` (name -> Scenario) is needed by
    ``replay`` (and tells ``noop`` each scenario's hang-up tool). Raises UsageError for an external
    spec (no built-in side) or a missing API key."""
    if spec.kind == "replay":
        return ReplayFactory(scenarios or {}, latency_s=replay_latency_s)
    if spec.kind == "noop":
        return NoopFactory(scenarios or {})
    if spec.kind == "openai":
        # imported here, not at the top: the openai client takes ~0.4 s to import, replay never needs it
        from engine.session.backends.openai_chat import OpenAIFactory

        return OpenAIFactory(
            model=str(spec.model),
            base_url=base_url,
            api_key_env=api_key_env,
            request_timeout_s=request_timeout_s,
            max_retries=max_retries,
        )
    raise UsageError(f"{spec} is an external side, not a backend a built-in side can run")
