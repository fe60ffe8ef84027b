"""``evalctl serve ROLE``: a built-in side, or the gold model (``model``), as its own process,
until Ctrl-C or SIGTERM (either ends it with exit 0)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path
from typing import Literal

import click

from engine.domains.registry import plugins
from engine.session.sides.standalone import serve_side
from engine.util.aio import stop_signals_interrupt
from engine.util.errors import UsageError


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
    ``ws://host:port`` (port 0 = any free port) until Ctrl-C or SIGTERM; says where on stderr once listening.
    Returns 0. Raises UsageError like ``engine.session.sides.standalone.serve_side`` (replay without a
    spec dir, a missing API key, a port that cannot be bound). ``request_timeout_s``: seconds per
    model request."""

    def ready(uri: str) -> None:
        click.echo(f"serving the {role} side ({backend}) on {uri}; Ctrl-C stops", err=True)

    with stop_signals_interrupt(), contextlib.suppress(KeyboardInterrupt):
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


def serve_model(
    spec_dir: Path,
    data_root: Path | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    heard: bool = False,
) -> int:
    """Serve the gold model of ``spec_dir``'s scenarios (``engine.session.gold_model.GoldLLM``: an
    OpenAI-compatible ``/v1/chat/completions`` that answers with each scenario's gold agent turns)
    on ``http://host:port/v1`` (port 0 = any free port) until Ctrl-C or SIGTERM; says where on stderr once
    listening. ``heard``: match the caller lines as a speech recogniser heard them (a voice bot).
    Returns 0. Raises SpecError / DataRootError for specs that do not load, UsageError for a port
    that cannot be bound."""
    from engine.session.gold_model import GoldLLM
    from engine.spec.loader import load_domain

    loaded = load_domain(spec_dir, data_root, plugins=plugins())
    played = [s for s in loaded.scenarios if s.gold_trace is not None]
    try:
        llm = GoldLLM(played, heard=heard, host=host, port=port)
    except OSError as err:
        raise UsageError(f"cannot listen on {host}:{port}: {err.strerror or err}") from None
    with llm, stop_signals_interrupt(), contextlib.suppress(KeyboardInterrupt):
        click.echo(
            f"serving the gold model of {len(played)} scenario(s) of {loaded.domain.name} on {llm.base_url} "
            "(any model name, any key); Ctrl-C stops",
            err=True,
        )
        while True:
            time.sleep(3600)
    return 0
