"""The eva_airline domain: SkyWay Airlines phone support from ServiceNow eva 0.1.3.

Handlers mirror eva 0.1.3's airline tools (``docs/eva_airline_tools.md`` in the shared docs);
gold traces come from eva 2.1.0 (``eva_trace`` format); the ``authenticated`` diagnostic compares
the caller session with the gold's; the spoken-form diagnostics (``spoken.py``) count agent lines
that say a code unspelled, read a journey id aloud or leak tool-call text.
"""

from __future__ import annotations

from engine.core.plugin import DomainPlugin
from engine.domains.eva_airline import diagnostics, payout, predicates, read, spoken, write
from engine.domains.eva_airline.common import FIELD_RULES
from engine.domains.eva_airline.gold import eva_trace, localise

HANDLERS = {
    # read / system (read.py)
    "get_reservation": read.get_reservation,
    "get_flight_status": read.get_flight_status,
    "get_disruption_info": read.get_disruption_info,
    "search_rebooking_options": read.search_rebooking_options,
    "transfer_to_agent": read.transfer_to_agent,
    # write (write.py, payout.py)
    "rebook_flight": write.rebook_flight,
    "cancel_reservation": write.cancel_reservation,
    "process_refund": payout.process_refund,
    "assign_seat": write.assign_seat,
    "add_baggage_allowance": write.add_baggage_allowance,
    "add_meal_request": write.add_meal_request,
    "add_to_standby": write.add_to_standby,
    "issue_travel_credit": payout.issue_travel_credit,
    "issue_hotel_voucher": payout.issue_hotel_voucher,
    "issue_meal_voucher": payout.issue_meal_voucher,
}

PLUGIN = DomainPlugin(
    name="eva_airline",
    description="eva 0.1.3 airline handlers, predicates, the authenticated and spoken-form diagnostics",
    handlers=HANDLERS,
    field_rules={name: FIELD_RULES for name in HANDLERS},
    predicates=predicates.PREDICATES,
    diagnostics={"authenticated": diagnostics.authenticated, **spoken.DIAGNOSTICS},
    count_diagnostics=frozenset(spoken.DIAGNOSTICS),
    gold_adapters={"eva_trace": eva_trace},
    localise=localise,
)
