"""tau2-bench retail: the 16 agent tools as evalctl handlers (mirrors tau2-bench 17e07b1).

DB: tau2's ``data/tau2/domains/retail/db.json`` as plain JSON (``products``, ``users``,
``orders``), shared read-only between sessions; handlers write only what ``WRITES`` declares.

Result mapping (see ``engine.domains.tau2_common.results``): tau2's tool message text is the
result's ``content`` on success and its ``message`` (``"Error: <exception text>"``) on failure;
tau2's ``error`` flag is ``status == "error"``. Records are shown in tau2's model field order with
the seven optional order fields null when absent; the user-id lookups return the bare id.

DB hash: ``engine.domains.tau2_common.tau2_db_hash(db, NULL_DEFAULTS)`` equals tau2's own
``get_db_hash``.

Upstream behaviour reproduced because it changes an end state or a shown text (details in each
handler's docstring and docs/domains/tau2_airline_retail.md): modify-items gives every modified
item the last new variant's price and options and records ``abs(difference)`` unrounded;
gift-card balances are rounded to cents after each change; exchange/return only record a request
(no money moves); cancel refunds every payment-history entry, refunds included; modify-payment
keeps the order ``pending``; exchange's price difference is an int 0 when no items are listed;
status checks differ per tool (``pending`` exactly for cancel and modify-items, any status
containing ``pending`` for address and payment changes).

``transfer_to_human_agents`` ends the call: the tool table must declare it as ending the session
(stop reason ``transfer``). No tool reads ``ctx.today`` or ``ctx.options``.
"""

from __future__ import annotations

from engine.core.tools.arguments import FieldRule
from engine.domains.tau2_common import generic
from engine.domains.tau2_common.plugin import tau2_plugin
from engine.domains.tau2_common.results import Handler
from engine.domains.tau2_retail import modify, orders, read
from engine.domains.tau2_retail.shapes import NULL_DEFAULTS

HANDLERS: dict[str, Handler] = {
    "calculate": generic.calculate,
    "cancel_pending_order": orders.cancel_pending_order,
    "exchange_delivered_order_items": orders.exchange_delivered_order_items,
    "find_user_id_by_name_zip": read.find_user_id_by_name_zip,
    "find_user_id_by_email": read.find_user_id_by_email,
    "get_order_details": read.get_order_details,
    "get_product_details": read.get_product_details,
    "get_item_details": read.get_item_details,
    "get_user_details": read.get_user_details,
    "list_all_product_types": read.list_all_product_types,
    "modify_pending_order_address": orders.modify_pending_order_address,
    "modify_pending_order_items": modify.modify_pending_order_items,
    "modify_pending_order_payment": modify.modify_pending_order_payment,
    "modify_user_address": orders.modify_user_address,
    "return_delivered_order_items": orders.return_delivered_order_items,
    "transfer_to_human_agents": generic.transfer_to_human_agents,
}

#: What each tool may change (see engine.domains.tau2_common.gold for the path forms). A ``/-``
#: container may get entries added, removed or replaced by updated copies, never changed in place.
WRITES: dict[str, tuple[str, ...]] = {
    "calculate": (),
    "cancel_pending_order": ("/orders/{order_id}", "/users/-"),
    "exchange_delivered_order_items": ("/orders/{order_id}",),
    "find_user_id_by_name_zip": (),
    "find_user_id_by_email": (),
    "get_order_details": (),
    "get_product_details": (),
    "get_item_details": (),
    "get_user_details": (),
    "list_all_product_types": (),
    "modify_pending_order_address": ("/orders/{order_id}",),
    "modify_pending_order_items": ("/orders/{order_id}", "/users/-"),
    "modify_pending_order_payment": ("/orders/{order_id}", "/users/-"),
    "modify_user_address": ("/users/{user_id}",),
    "return_delivered_order_items": ("/orders/{order_id}",),
    "transfer_to_human_agents": (),
}

#: Tools whose success ends the call, with the stop reason (the lead declares it in the tool table).
ENDS_CALL: dict[str, str] = {"transfer_to_human_agents": "transfer"}

_FOLDED = FieldRule(ignore_case=True)

#: The domain's plugin record (engine.domains.registry): handlers, the ``tau2`` hash style, tau2's
#: tool-result text and the ``communicate_info`` diagnostic.
PLUGIN = tau2_plugin(
    "tau2_retail",
    HANDLERS,
    NULL_DEFAULTS,
    "tau2-bench retail (17e07b1): 114 tasks on one shared DB of products, users and orders.",
    "RetailTools",
    {  # the handlers look these up ignoring case (tau2's find_user_id_by_*)
        "find_user_id_by_name_zip": {n: _FOLDED for n in ("first_name", "last_name")},
        "find_user_id_by_email": {"email": _FOLDED},
    },
)

__all__ = ["ENDS_CALL", "HANDLERS", "NULL_DEFAULTS", "PLUGIN", "WRITES"]
