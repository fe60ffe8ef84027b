"""A session's ``transcript.jsonl`` as chat entries for the report, within a byte budget.

``transcript.jsonl`` holds one object per event ``{role, type, content, t}``
(``engine.session.conversation``):
``utterance`` (content: the text), ``tool_call`` (``{call_id, name, arguments}``, arguments as the
side sent them, usually JSON text), ``tool_result`` (``{call_id, name, result}``), ``hangup`` and
``end`` (``{stop_reason, error}``). Everything in it is a side's text: it is kept as data (the page
shows it with ``textContent``), cut to bounds, never interpreted.

Entries (compact keys; they are repeated per turn):

- ``{"k": "say", "r": role, "x": text, "t": seconds}``
- ``{"k": "tool", "r": role, "n": name, "a": arguments, "res": result, "ok": true|false|null, "t": s}``
  (``a`` / ``res`` JSON values, or ``{ELIDED: preview, "size": chars}`` when over the bounds)
- ``{"k": "note", "x": text}`` (hang-up, end of session, unreadable lines, entries left out)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from engine.results.diff import call_arguments
from engine.util.untrusted import one_line

#: Longest single value (an utterance, a tool call's arguments or result) kept whole, in characters
#: of compact JSON; a longer one is kept as a preview of :data:`PREVIEW` characters.
ITEM_MAX = 8_000
PREVIEW = 600
#: The key of a value kept only as a preview: ``{ELIDED: text, "size": full length}``.
ELIDED = "__evalctl_elided__"
#: Most transcript lines read from one file.
MAX_LINES = 2_000


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str))


class Budget:
    """Bytes (characters of compact JSON) one scenario's detail may still take."""

    def __init__(self, total: int):
        self.left = total

    def keep(self, value: Any) -> Any:
        """``value`` when it fits both :data:`ITEM_MAX` and the budget, else a preview marker
        ``{ELIDED: text, "size": chars}``; charges what is kept."""
        size = _size(value)
        if size <= ITEM_MAX and size <= self.left:
            self.left -= size
            return value
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
        cut = {ELIDED: text[: min(PREVIEW, max(self.left, 80))], "size": len(text)}
        self.left -= _size(cut)
        return cut


def _status(result: Any) -> bool | None:
    if isinstance(result, dict) and result.get("status") in ("success", "error"):
        return result["status"] == "success"
    return None


def _read_lines(path: Path) -> tuple[list[Any], int, int]:
    """Parsed lines (at most MAX_LINES), the count of unreadable lines and of lines left out."""
    items: list[Any] = []
    bad = extra = 0
    with path.open(encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f):
            if n >= MAX_LINES:
                extra += 1
                continue
            if not line.strip():
                continue
            try:
                items.append(json.loads(line))
            except (ValueError, RecursionError):
                bad += 1
    return items, bad, extra


def chat_entries(path: Path, budget: Budget) -> list[dict[str, Any]]:
    """The chat entries of ``path`` (a missing file gives one note), within ``budget``."""
    try:
        events, bad, extra = _read_lines(path)
    except OSError as err:
        return [{"k": "note", "x": f"no transcript: {err.strerror or err}"}]
    out: list[dict[str, Any]] = []
    calls: dict[str, dict[str, Any]] = {}
    for n, ev in enumerate(events):
        if budget.left <= 0:
            extra += len(events) - n
            break
        if not isinstance(ev, dict) or not isinstance(ev.get("type"), str):
            bad += 1
            continue
        kind, role, content = one_line(ev["type"], 80), one_line(ev.get("role", "?"), 80), ev.get("content")
        t = (
            ev.get("t")
            if isinstance(ev.get("t"), int | float) and not isinstance(ev.get("t"), bool)
            else None
        )
        if kind == "utterance":
            if isinstance(content, str) and content.strip():
                out.append({"k": "say", "r": role, "x": budget.keep(content), "t": t})
        elif kind == "tool_call" and isinstance(content, dict):
            entry = {
                "k": "tool",
                "r": role,
                "n": one_line(content.get("name", "?"), 200),
                "a": budget.keep(call_arguments(content.get("arguments"))),
                "res": None,
                "ok": None,
                "t": t,
            }
            calls[str(content.get("call_id"))] = entry
            out.append(entry)
        elif kind == "tool_result" and isinstance(content, dict):
            called = calls.pop(str(content.get("call_id")), None)
            result = content.get("result")
            if called is not None:
                entry = called
            else:  # a result without its call: show it on its own
                entry = {
                    "k": "tool",
                    "r": "?",
                    "n": one_line(content.get("name", "?"), 200),
                    "a": None,
                    "t": t,
                }
                out.append(entry)
            entry["res"], entry["ok"] = budget.keep(result), _status(result)
        elif kind == "hangup":
            out.append({"k": "note", "x": "the caller hung up"})
        elif kind == "clipped" and isinstance(content, dict):
            said, sent = content.get("chars"), content.get("forwarded")
            cut = f"the agent's {said} characters were cut to {sent} for the caller"
            out.append({"k": "note", "x": budget.keep(cut)})
        elif kind == "finish" and isinstance(content, dict):
            if content.get("cut_off"):  # a reply stopped at the token limit: shown, not hidden
                text = f"{role} reply cut off at the token limit (finish_reason length)"
                out.append({"k": "note", "x": budget.keep(text)})
        elif kind == "end" and isinstance(content, dict):
            ended_by = content.get("error")
            text = f"session ended: stop reason {content.get('stop_reason')}"
            out.append({"k": "note", "x": budget.keep(text + (f"; error: {ended_by}" if ended_by else ""))})
        else:
            out.append({"k": "note", "x": budget.keep(f"{role} {kind}")})
    if bad:
        out.append({"k": "note", "x": f"{bad} transcript line(s) unreadable (see transcript.jsonl)"})
    if extra:
        out.append({"k": "note", "x": f"{extra} more transcript entries not shown (see transcript.jsonl)"})
    return out
