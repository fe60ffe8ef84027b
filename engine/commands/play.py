"""``evalctl play --as agent|user SPEC_DIR SCENARIO``: a person plays one side in the terminal
against the other (replay or a model), as ``tau2 play`` does; the session is then scored and
explained like any run's (``engine.session.backends.human`` reads the person's lines)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from engine.commands.diff import diff
from engine.commands.run import print_outcome
from engine.core.options import RunOptions
from engine.domains.registry import plugins
from engine.run.interrupt import CtrlC
from engine.run.runner import run_cli
from engine.util.errors import UsageError
from engine.util.untrusted import one_line

#: Seconds the engine waits for one turn of a person (the run's 300 s is a model's pace).
HUMAN_TURN_TIMEOUT_S = 3600.0


def play(
    spec_dir: Path,
    scenario: str,
    role: Literal["agent", "user"],
    other: str = "replay",
    *,
    data_root: Path | None = None,
    output_dir: Path | None = None,
    base_url: str | None = None,
    api_key_env: str = "OPENAI_API_KEY",
    request_timeout_s: float = 60.0,
) -> int:
    """One session of ``scenario`` with the person as ``role`` and ``other`` (``replay``,
    ``openai:MODEL``, ``noop``) as the other side; written to ``output_dir`` (default
    ``runs/<UTC stamp>``), then scored, its report and its diff printed. Returns the run's exit
    code (``engine.commands.run.print_outcome``). Raises UsageError (exit 2) for an ``other``
    that is ``human`` or an external ``ws://`` side, and what ``evalctl run`` raises for bad input.
    The session is bounded by the scenario's ``max_duration`` as any session is; Ctrl-C (also
    while the person's line is awaited) ends it with 130 and the usual interrupted line."""
    if other.strip() == "human" or other.strip().startswith(("ws://", "wss://")):
        raise UsageError(f"play: the other side is replay, noop or openai:MODEL, not {other!r}")
    opts = RunOptions(
        spec_dir=spec_dir,
        data_root=data_root,
        plugins=plugins(),
        scenarios=(scenario,),
        agent="human" if role == "agent" else other,
        user="human" if role == "user" else other,
        base_url=base_url,
        api_key_env=api_key_env,
        request_timeout_s=request_timeout_s,
        concurrency=1,
        output_dir=output_dir,
        turn_timeout_s=HUMAN_TURN_TIMEOUT_S,
        progress=False,
        quiet=True,
        workers=1,
    )
    outcome = run_cli(opts)
    if not outcome.interrupted:
        _show_last_words(outcome.run_dir / scenario / "transcript.jsonl", role)
    with CtrlC.while_printing(outcome):
        code = print_outcome(outcome)
    if not outcome.interrupted and (outcome.run_dir / "summary.json").is_file():
        diff(outcome.run_dir, scenario)  # an interrupted session has no scored result to explain
    return code


def _show_last_words(transcript: Path, role: str) -> None:
    """Print what the other side said after the person's last line (a goodbye before it hung up
    is never asked about, so the person would not see it otherwise), as the session showed the
    other lines (``agent: ...`` / ``caller: ...``). A missing or unreadable transcript prints
    nothing: the report that follows says what happened."""
    person, label = ("agent", "caller") if role == "agent" else ("user", "agent")
    other = "user" if person == "agent" else "agent"
    try:
        entries = [json.loads(line) for line in transcript.read_text(encoding="utf-8").splitlines() if line]
    except (OSError, ValueError):
        return
    said = [i for i, e in enumerate(entries) if e.get("type") == "utterance" and e.get("role") == person]
    for entry in entries[(said[-1] + 1) if said else 0 :]:
        if entry.get("type") == "utterance" and entry.get("role") == other and entry.get("content"):
            print(f"{label}: {one_line(str(entry['content']), None)}", flush=True)
