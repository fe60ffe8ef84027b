"""Handler registry: a literal dict from handler name to a plain function.

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


def _stub(name: str) -> Callable[..., dict[str, Any]]:
    def handler(db: dict[str, Any], args: Mapping[str, Any], ctx: Any) -> dict[str, Any]:
        raise NotImplementedError(f"handler {name!r} is not implemented yet")

    return handler


_NAMES = (
    "get_reservation",
    "get_flight_status",
    "get_disruption_info",
    "search_rebooking_options",
    "rebook_flight",
    "cancel_reservation",
    "process_refund",
    "assign_seat",
    "add_baggage_allowance",
    "add_meal_request",
    "add_to_standby",
    "issue_travel_credit",
    "issue_hotel_voucher",
    "issue_meal_voucher",
    "transfer_to_agent",
    "end_conversation",
)

HANDLERS: dict[str, Callable[..., dict[str, Any]]] = {n: _stub(n) for n in _NAMES}
