"""One self-contained HTML file: inline CSS, inline script, inline SVG, data as JSON blocks.

Safety: every text from the run is escaped (static sections) or carried as JSON inside
``<script type="application/json">`` (``<``, ``>``, ``&`` and the two JavaScript line separators
written as ``\\uXXXX``, so no value can close the block) and put on the page by the script with
``textContent``. A Content-Security-Policy allows only this page's own script and style (by their
SHA-256) and no network access at all: even an injected tag could neither run nor fetch.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from collections.abc import Iterable
from html import escape
from importlib import resources
from pathlib import Path
from typing import Any

from engine import __version__
from engine.util.artifacts import write_bytes
from engine.util.errors import OutputError

_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_ESCAPE_TABLE = str.maketrans(_ESCAPES)


def asset(name: str) -> str:
    """The text of ``engine/report_html/assets/<name>``."""
    return resources.files("engine.report_html").joinpath("assets", name).read_text(encoding="utf-8")


def _finite(value: Any) -> Any:
    """``value`` with NaN and infinities (which JSON cannot hold) as None."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def json_block(block_id: str, value: Any) -> str:
    """``<script type="application/json" id=...>`` holding ``value`` (safe to embed, see the
    module docstring)."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=str)
    except ValueError:  # NaN or an infinity from a damaged file
        text = json.dumps(_finite(value), ensure_ascii=False, separators=(",", ":"), default=str)
    return f'<script type="application/json" id="{block_id}">{text.translate(_ESCAPE_TABLE)}</script>'


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


def document(
    title: str, subtitle: str, body: Iterable[str], script: str | None, css: str, media: bool = False
) -> str:
    """The whole page: ``body`` parts (already HTML) inside ``<main>``, then ``script`` inline.
    ``media``: its ``<audio>`` players may load the run's own files (``media-src 'self'``; a
    voice run's WAVs beside the page), nothing else."""
    if script is not None and "</script" in script.lower():
        raise ValueError("an inline script must not contain '</script'")
    script_src = f"'{_sha256(script)}'" if script is not None else "'none'"
    csp = (
        f"default-src 'none'; script-src {script_src}; style-src '{_sha256(css)}'; img-src data:; "
        + ("media-src 'self'; " if media else "")
        + "base-uri 'none'; form-action 'none'"
    )
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{escape(csp)}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f'<meta name="generator" content="evalctl {escape(__version__)}">',
        f"<title>{escape(title)}</title>",
        f"<style>{css}</style></head><body>",
        f'<header><h1>{escape(title)}</h1><p class="run">{escape(subtitle)}</p></header><main>',
        *body,
        "</main>",
        f"<footer>evalctl {escape(__version__)}: self-contained report; raw artifact links are relative"
        " to this file.</footer>",
    ]
    if script is not None:
        parts.append(f"<script>{script}</script>")
    parts.append("</body></html>\n")
    return "\n".join(parts)


def write_page(out: Path, data: bytes) -> None:
    """Write a page's bytes to ``out`` (atomically). Raises OutputError (one line, exit 2) when it
    cannot be written: a folder that cannot be created, no permission, a full disk."""
    try:
        write_bytes(out, data)
    except OSError as err:
        raise OutputError(f"cannot write {out}: {err.strerror or err}") from None
