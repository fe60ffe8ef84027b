"""``evalctl serve ROLE``: a built-in side as its own process, until Ctrl-C."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Literal

import click

from engine.domains.registry import plugins
from engine.session.sides.standalone import serve_side


def serve(
    role: Literal["agent", "user"],
    backend: str = "replay",
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    spec_dir: Path | None = None,
    data_root: Path | None = None,
    base_url: str | None = None,
    api_key_env: str = "OPENAI_API_KEY",
    request_timeout_s: float = 60.0,
) -> int:
    """Serve the ``role`` side with ``backend`` (``replay`` or ``openai:MODEL``) on
    ``ws://host:port`` (port 0 = any free port) until Ctrl-C; says where on stderr once listening.
    Returns 0. Raises UsageError like ``engine.session.sides.standalone.serve_side`` (replay without a
    spec dir, a missing API key, a port that cannot be bound). ``request_timeout_s``: seconds per
    model request."""

    def ready(uri: str) -> None:
        click.echo(f"serving the {role} side ({backend}) on {uri}; Ctrl-C stops", err=True)

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(
            serve_side(
                role,
                backend,
                host=host,
                port=port,
                spec_dir=spec_dir,
                data_root=data_root,
                plugins=plugins(),
                base_url=base_url,
                api_key_env=api_key_env,
                request_timeout_s=request_timeout_s,
                on_ready=ready,
            )
        )
    return 0
