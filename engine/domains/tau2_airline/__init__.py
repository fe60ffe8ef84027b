"""tau2-bench airline: the 14 agent tools as evalctl handlers (mirrors tau2-bench 17e07b1).

DB: tau2's ``data/tau2/domains/airline/db.json`` as plain JSON (``flights``, ``users``,
``reservations``), shared read-only between sessions; handlers write only what ``WRITES`` declares.

Result mapping (see ``engine.domains.tau2_common.results``): tau2's tool message text is the
result's ``content`` on success and its ``message`` (``"Error: <exception text>"``) on failure;
tau2's ``error`` flag is ``status == "error"``. Records are shown in tau2's model field order with
null optional fields, lists and records as ``json.dumps`` with default separators.

DB hash: ``engine.domains.tau2_common.tau2_db_hash(db, NULL_DEFAULTS)`` equals tau2's own
``get_db_hash`` (a reservation's absent ``status`` is null in tau2's dump).

Upstream behaviour reproduced because it changes an end state or a shown text (details in each
handler's docstring and docs/domains/tau2_airline_retail.md): cancelling releases no seats and
credits no gift card; changing flights takes no seats and releases none; bookings do take seats;
gift-card amounts are reduced without rounding; a used certificate disappears whatever its
balance; new ids are ``HATHAT``/``HATHAU``/``HATHAV`` and ``certificate_3221322``.. (first free);
bookings are stamped 2024-05-15T15:00:00; a certificate cannot pay for a change even at price 0;
the one-stop search's ``+1`` next-day date is ``2024-05-<day+1>`` unpadded.

``transfer_to_human_agents`` ends the call: the tool table must declare it as ending the session
(stop reason ``transfer``). No tool reads ``ctx.today`` or ``ctx.options``; tau2's fixed clock
(2024-05-15 15:00 EST, also stated in the policy) is a constant of ``booking``.
"""

from __future__ import annotations

from engine.domains.tau2_airline import booking, read, updates
from engine.domains.tau2_airline.shapes import NULL_DEFAULTS
from engine.domains.tau2_common import generic
from engine.domains.tau2_common.plugin import tau2_plugin
from engine.domains.tau2_common.results import Handler

HANDLERS: dict[str, Handler] = {
    "book_reservation": booking.book_reservation,
    "calculate": generic.calculate,
    "cancel_reservation": booking.cancel_reservation,
    "get_reservation_details": read.get_reservation_details,
    "get_user_details": read.get_user_details,
    "list_all_airports": read.list_all_airports,
    "search_direct_flight": read.search_direct_flight,
    "search_onestop_flight": read.search_onestop_flight,
    "send_certificate": booking.send_certificate,
    "transfer_to_human_agents": generic.transfer_to_human_agents,
    "update_reservation_baggages": updates.update_reservation_baggages,
    "update_reservation_flights": updates.update_reservation_flights,
    "update_reservation_passengers": updates.update_reservation_passengers,
    "get_flight_status": read.get_flight_status,
}

#: What each tool may change (see engine.domains.tau2_common.gold for the path forms). A ``/-``
#: container may get entries added, removed or replaced by updated copies, never changed in place.
WRITES: dict[str, tuple[str, ...]] = {
    "book_reservation": ("/users/{user_id}", "/reservations/-", "/flights/-"),
    "calculate": (),
    "cancel_reservation": ("/reservations/{reservation_id}",),
    "get_reservation_details": (),
    "get_user_details": (),
    "list_all_airports": (),
    "search_direct_flight": (),
    "search_onestop_flight": (),
    "send_certificate": ("/users/{user_id}",),
    "transfer_to_human_agents": (),
    "update_reservation_baggages": ("/reservations/{reservation_id}", "/users/-"),
    "update_reservation_flights": ("/reservations/{reservation_id}", "/users/-"),
    "update_reservation_passengers": ("/reservations/{reservation_id}",),
    "get_flight_status": (),
}

#: Tools whose success ends the call, with the stop reason (the lead declares it in the tool table).
ENDS_CALL: dict[str, str] = {"transfer_to_human_agents": "transfer"}

#: The domain's plugin record (engine.domains.registry): handlers, the ``tau2`` hash style, tau2's
#: tool-result text and the ``communicate_info`` diagnostic.
PLUGIN = tau2_plugin(
    "tau2_airline",
    HANDLERS,
    NULL_DEFAULTS,
    "tau2-bench airline (17e07b1): 50 tasks on one shared DB of flights, users and reservations.",
    "AirlineTools",
)

__all__ = ["ENDS_CALL", "HANDLERS", "NULL_DEFAULTS", "PLUGIN", "WRITES"]
