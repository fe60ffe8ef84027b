"""``evalctl serve``: a built-in side as its own process, until Ctrl-C."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from pathlib import Path

from engine.core.plugin import Plugins
from engine.session.backends.factory import make_factory
from engine.session.backends.registry import parse_backend_spec, scheme_of
from engine.session.sides.server import server_uri, start_side_server
from engine.spec.loader import load_domain
from engine.util.errors import UsageError


async def serve_side(
    role: str,
    backend: str = "replay",
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    spec_dir: Path | None = None,
    data_root: Path | None = None,
    plugins: Plugins | None = None,
    base_url: str | None = None,
    api_key_env: str = "OPENAI_API_KEY",
    request_timeout_s: float = 60.0,
    max_retries: int = 4,
    replay_latency_s: float = 0.0,
    on_ready: Callable[[str], None] = print,
    stop: asyncio.Event | None = None,
) -> None:
    """Serve the ``role`` side (agent or user) with ``backend`` (``replay`` or ``openai:MODEL``)
    at ``ws://host:port`` until ``stop`` is set or the task is cancelled. ``replay`` needs
    ``spec_dir`` (the gold traces). ``on_ready`` gets the URI once listening.

    Raises UsageError for an external backend spec, replay without a spec dir, a missing API key
    or a port that cannot be bound.
    """
    spec = parse_backend_spec(backend)
    scenarios = None
    if scheme_of(spec).gold_side:
        if spec_dir is None:
            raise UsageError(f"serve --backend {spec} needs --spec-dir (the scenarios whose gold it plays)")
        scenarios = {s.name: s for s in load_domain(spec_dir, data_root, plugins=plugins or {}).scenarios}
    factory = make_factory(
        spec,
        scenarios=scenarios,
        base_url=base_url,
        api_key_env=api_key_env,
        request_timeout_s=request_timeout_s,
        max_retries=max_retries,
        replay_latency_s=replay_latency_s,
    )
    try:
        server = await start_side_server(factory, host, port, role=role, check_schema=True)
    except OSError as err:
        raise UsageError(f"cannot listen on {host}:{port}: {err.strerror or err}") from None
    on_ready(server_uri(server))
    try:
        await (stop or asyncio.Event()).wait()
    except asyncio.CancelledError:
        pass
    finally:
        server.close()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(2.0):
                await server.wait_closed()
        if hasattr(factory, "aclose"):
            await factory.aclose()
