"""How an in-process agent's exception is named in its FAIL's detail: one clean line, the
exception's type name and its message, whatever the agent raised (a message of many lines, a
5 MB one, one whose ``str()`` itself raises, or one of evalctl's own exception classes, such as
``SpecError``, whose text reads like evalctl's ``file:line: $.path: ...`` problems: it is the
agent's error, named as raised, never taken for evalctl's own).
"""

from __future__ import annotations

import asyncio

from engine.util.untrusted import one_line

#: Most characters of an agent's exception message kept in its FAIL's detail (the rest is cut,
#: its full length noted): the detail stays one readable line of a summary, with room for the
#: ``(raised at FILE:LINE in FUNCTION)`` that follows it.
MAX_EXCEPTION_CHARS = 300

#: Longest exception type name kept (a class made with ``type()`` may be named anything).
_MAX_NAME_CHARS = 100


def exception_line(exc: BaseException, limit: int = MAX_EXCEPTION_CHARS) -> str:
    """``TypeName: message`` for ``exc`` on one line: every run of whitespace and control
    characters (newlines, tabs, ANSI escapes) becomes one space, invisible characters are shown
    as ``<U+XXXX>``, the message is cut to ``limit`` characters noting its full length
    (``... (5000 chars)``); ``TypeName`` alone when the message is empty. Never raises (a
    message whose ``str()`` raises is named so)."""
    name = one_line(type(exc).__name__, _MAX_NAME_CHARS)
    try:
        text = str(exc)
    except Exception as err:  # the agent's own __str__ may raise too
        text = f"<its message cannot be shown: str() raised {type(err).__name__}>"
    full = len(text)
    # a bounded prefix is flattened (the rest would be cut anyway), then clipped
    flat = " ".join(one_line(text[: 4 * limit + 1], None).split())
    if len(flat) > limit or full > 4 * limit:
        flat = f"{flat[:limit].rstrip()}... ({full} chars)"
    return f"{name}: {flat}" if flat else name


def agent_failed(exc: BaseException, where: str = "") -> str:
    """The detail of the FAIL of an agent whose code raised ``exc`` (``where``: the
    ``(raised at ...)`` clause of ``engine.session.backends.bridge.raised_at``, or empty):
    ``the agent failed: TypeName: message`` (:func:`exception_line`), or, for an
    ``asyncio.CancelledError`` that the agent's code raised or caused (it cancelled its own turn),
    ``the agent's turn was cancelled by the agent's code (CancelledError: message)``."""
    if isinstance(exc, asyncio.CancelledError):
        return f"the agent's turn was cancelled by the agent's code ({exception_line(exc)}){where}"
    return f"the agent failed: {exception_line(exc)}{where}"
