"""Shared pieces of the tau2 telecom handlers: result shapes, the tool wrapper, the fixed date.

Every handler here follows the engine's contract ``(db, args, ctx) -> result``. tau2 17e07b1 either
returns text to the model or raises; the mapping onto evalctl results is:

- tau2 returned text ``T`` (a plain string, or the JSON that tau2's ``Environment.to_json_str``
  makes of a dict or a pydantic record) -> ``{"status": "success", "content": T}``;
- tau2 raised ``E`` (its tool message is ``"Error: " + str(E)``, flagged ``error=True``) ->
  ``{"status": "error", "error_type": <kind>, "message": str(E)}``.

:func:`tau2_content` turns a result back into tau2's ``(error, content)`` pair; the parity tests
compare that pair with the oracle's ``gold_responses``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from engine.core.tools.context import CallContext

#: tau2's telecom clock is frozen (``tau2.domains.telecom.utils.get_today``).
TODAY = "2025-02-25"

#: Marks a parameter without a default in :func:`tau2_tool`.
REQUIRED: Any = object()

Result = dict[str, Any]
Handler = Callable[[dict[str, Any], Mapping[str, Any], CallContext], Result]


class ToolError(Exception):
    """What a tau2 tool raises: ``kind`` becomes the result's ``error_type``, the text its message."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind
        self.message = message


def success(content: str) -> Result:
    """A success result carrying tau2's exact tool text."""
    return {"status": "success", "content": content}


def error(kind: str, message: str) -> Result:
    """An error result: ``message`` is tau2's exception text (tau2 shows ``"Error: " + message``)."""
    return {"status": "error", "error_type": kind, "message": message}


def tau2_content(result: Mapping[str, Any]) -> tuple[bool, str]:
    """The ``(error, content)`` pair tau2 would put in its tool message for this result."""
    if result.get("status") == "success":
        return False, str(result["content"])
    return True, f"Error: {result.get('message', '')}"


def today(ctx: CallContext | None) -> str:
    """The session's date: the DB's ``_current_date`` when the engine has one, else tau2's fixed day."""
    return (ctx.today if ctx is not None else "") or TODAY


def _call_problem(owner: str, name: str, params: Mapping[str, Any], args: Mapping[str, Any]) -> str | None:
    """Python's own TypeError text for a call tau2 would make with these keyword arguments."""
    for key in args:
        if key not in params:
            return f"{owner}.{name}() got an unexpected keyword argument '{key}'"
    missing = [p for p, default in params.items() if default is REQUIRED and p not in args]
    if not missing:
        return None
    quoted = [f"'{m}'" for m in missing]
    if len(quoted) == 1:
        listed = quoted[0]
    elif len(quoted) == 2:
        listed = f"{quoted[0]} and {quoted[1]}"
    else:
        listed = ", ".join(quoted[:-1]) + f", and {quoted[-1]}"
    noun = "argument" if len(missing) == 1 else "arguments"
    return f"{owner}.{name}() missing {len(missing)} required positional {noun}: {listed}"


def tau2_tool(owner: str, params: Mapping[str, Any]) -> Callable[[Callable[..., Result]], Handler]:
    """Wrap a tool body ``(db, ctx, **params) -> result`` as an engine handler.

    ``owner`` is tau2's toolkit class (``TelecomTools`` / ``TelecomUserTools``) and ``params`` the
    tau2 signature (name -> default, or :data:`REQUIRED`). An argument tau2's signature would
    refuse gives Python's TypeError text as an ``invalid_arguments`` error (tau2 calls the method
    with ``**arguments``); a :class:`ToolError` raised by the body becomes an error result.
    """

    def wrap(body: Callable[..., Result]) -> Handler:
        name = body.__name__

        @functools.wraps(body)
        def handler(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> Result:
            problem = _call_problem(owner, name, params, args)
            if problem is not None:
                return error("invalid_arguments", problem)
            values = {p: args.get(p, default) for p, default in params.items()}
            try:
                return body(db, ctx, **values)
            except ToolError as exc:
                return error(exc.kind, exc.message)

        handler.tau2_owner = owner  # type: ignore[attr-defined]  # read by tau2_arguments
        return handler

    return wrap
