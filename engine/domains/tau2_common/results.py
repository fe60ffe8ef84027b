"""What a tau2 tool call shows the model, as an evalctl handler result.

tau2 (17e07b1, ``Environment.get_response`` / ``to_json_str``) turns a tool's outcome into one
text: a returned string as it is; a returned record or list as ``json.dumps`` of its dump (default
separators, ASCII escapes, model field order); a raised exception as ``"Error: <str(exc)>"`` with
the message's error flag set. Handlers here return:

- success: ``{"status": "success", "content": <that text>}``
- failure: ``{"status": "error", "error_type": <short kind>, "message": <that text, "Error: ..." >}``

so tau2's text is ``content`` or ``message`` and tau2's error flag is ``status == "error"``.
``error_type`` is ours (``not_found``, ``invalid_state``, ``unavailable``, ``payment``,
``invalid_argument``, ``limit_reached``); tau2 has no kinds.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from typing import Any

from engine.core.tools.context import CallContext
from engine.domains.tau2_common.shapes import Shape, render

Handler = Callable[[dict[str, Any], Mapping[str, Any], CallContext], dict[str, Any]]


class ToolFailure(Exception):
    """Raised inside a handler where tau2's tool raises; :func:`tau2_tool` turns it into an error
    result. ``message`` is tau2's exception text (without the ``Error: `` prefix)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


def as_text(value: Any, shape: Shape | None = None) -> str:
    """tau2's text for a returned value: a string as it is, else the JSON of ``value`` laid out as
    ``shape``."""
    if isinstance(value, str):
        return value
    return json.dumps(render(value, shape), default=str)


def ok(value: Any, shape: Shape | None = None) -> dict[str, Any]:
    """Success result whose ``content`` is tau2's text for ``value`` (see :func:`as_text`)."""
    return {"status": "success", "content": as_text(value, shape)}


def fail(kind: str, message: str) -> dict[str, Any]:
    """Error result whose ``message`` is tau2's error text ``"Error: <message>"``."""
    return {"status": "error", "error_type": kind, "message": f"Error: {message}"}


def tau2_tool(fn: Handler) -> Handler:
    """Wrap a handler so that a :class:`ToolFailure` it raises becomes :func:`fail`'s result."""

    @functools.wraps(fn)
    def wrapper(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
        try:
            return fn(db, args, ctx)
        except ToolFailure as exc:
            return fail(exc.kind, exc.message)

    return wrapper


def get_or_fail(table: Mapping[str, Any], key: Any, message: str) -> Any:
    """``table[key]``, or a ``not_found`` failure with tau2's ``message``."""
    if isinstance(key, str) and key in table:
        return table[key]
    raise ToolFailure("not_found", message)
