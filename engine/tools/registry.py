"""Handler registry: a literal dict from handler name to a plain function.

Spec files name handlers by these keys (never by import path). Unknown names are validation
errors with a "did you mean" suggestion.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from engine.tools import airline_common, airline_payout, airline_read, airline_write, harness, mock
from engine.tools.airline_common import FieldRule


class Handler(Protocol):
    """A tool handler: ``(db, args, ctx) -> result``.

    ``db`` is the session DB (mutate in place for writes), ``args`` the validated arguments,
    ``ctx`` a :class:`CallContext` (call index, tool options). Returns ``{status: ..., ...}``.
    """

    def __call__(self, db: dict[str, Any], args: Mapping[str, Any], ctx: Any) -> dict[str, Any]: ...


HANDLERS: dict[str, Callable[..., dict[str, Any]]] = {
    # eva_airline read / system (engine/tools/airline_read.py)
    "get_reservation": airline_read.get_reservation,
    "get_flight_status": airline_read.get_flight_status,
    "get_disruption_info": airline_read.get_disruption_info,
    "search_rebooking_options": airline_read.search_rebooking_options,
    "transfer_to_agent": airline_read.transfer_to_agent,
    # eva_airline write (engine/tools/airline_write.py, airline_payout.py)
    "rebook_flight": airline_write.rebook_flight,
    "cancel_reservation": airline_write.cancel_reservation,
    "process_refund": airline_payout.process_refund,
    "assign_seat": airline_write.assign_seat,
    "add_baggage_allowance": airline_write.add_baggage_allowance,
    "add_meal_request": airline_write.add_meal_request,
    "add_to_standby": airline_write.add_to_standby,
    "issue_travel_credit": airline_payout.issue_travel_credit,
    "issue_hotel_voucher": airline_payout.issue_hotel_voucher,
    "issue_meal_voucher": airline_payout.issue_meal_voucher,
    # harness (engine/tools/harness.py)
    "end_conversation": harness.end_conversation,
    # the tiny mock shop domain of the tests (engine/tools/mock.py, tests/mock_domain/)
    "mock_get_order": mock.get_order,
    "mock_cancel_order": mock.cancel_order,
    "mock_issue_credit": mock.issue_credit,
}

#: Handlers whose success ends the session, with the stop reason they give.
ENDING_HANDLERS: dict[str, str] = {"end_conversation": "exit", "transfer_to_agent": "transfer"}

#: Per-argument checks and error reporting of a handler's arguments, keyed by argument name (see
#: ``FieldRule``); handlers not listed get plain JSON Schema validation of their tool's parameters.
FIELD_RULES: dict[str, Mapping[str, FieldRule]] = {
    name: airline_common.FIELD_RULES
    for name, fn in HANDLERS.items()
    if fn.__module__ in (airline_read.__name__, airline_write.__name__, airline_payout.__name__)
}
