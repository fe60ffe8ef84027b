"""Handler registry: a literal dict from handler name to a plain function.  (STUB: filled by the tool-table work.)

Spec files name handlers by these keys (never by import path). Unknown names are validation
errors with a "did you mean" suggestion.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol


class Handler(Protocol):
    """A tool handler: ``(db, args, ctx) -> result``.

    ``db`` is the session DB (mutate in place for writes), ``args`` the validated arguments,
    ``ctx`` a :class:`CallContext` (call index, tool options). Returns ``{status: ..., ...}``.
    """

    def __call__(self, db: dict[str, Any], args: Mapping[str, Any], ctx: Any) -> dict[str, Any]: ...


HANDLERS: dict[str, Callable[..., dict[str, Any]]] = {}
