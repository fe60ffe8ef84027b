"""tau2 retail lookups and read tools: users, orders, products, items, product types.

Each tool handler is ``(db, args, ctx) -> result``, writes nothing, and mirrors the same-named
tool of tau2 17e07b1's retail toolkit. The lookup helpers raise ToolFailure with tau2's texts
(which, unlike airline's, never name the id).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from engine.core.tools.context import CallContext
from engine.domains.tau2_common.results import ToolFailure, get_or_fail, ok, tau2_tool
from engine.domains.tau2_retail import shapes


def order_of(db: Mapping[str, Any], order_id: Any) -> dict[str, Any]:
    """The order, or ``not_found`` ``Order not found``."""
    return get_or_fail(db["orders"], order_id, "Order not found")


def user_of(db: Mapping[str, Any], user_id: Any) -> dict[str, Any]:
    """The user, or ``not_found`` ``User not found``."""
    return get_or_fail(db["users"], user_id, "User not found")


def variant_of(db: Mapping[str, Any], product_id: Any, item_id: Any) -> dict[str, Any]:
    """A product's variant, or ``not_found`` ``Product not found`` / ``Variant not found``."""
    product = get_or_fail(db["products"], product_id, "Product not found")
    return get_or_fail(product["variants"], item_id, "Variant not found")


def payment_method_of(db: Mapping[str, Any], user_id: Any, method_id: Any) -> dict[str, Any]:
    """One of the user's payment methods, or ``not_found`` ``User not found`` / ``Payment method
    not found``."""
    return get_or_fail(user_of(db, user_id)["payment_methods"], method_id, "Payment method not found")


def count_check(item_ids: list[Any], order: Mapping[str, Any], message: str) -> None:
    """tau2's check that every listed id occurs in the order at least as often as in the list;
    ``not_found`` with ``message`` (formatted with the first id that fails) otherwise."""
    held = [item["item_id"] for item in order["items"]]
    for item_id in item_ids:
        if item_ids.count(item_id) > held.count(item_id):
            raise ToolFailure("not_found", message.format(item_id=item_id))


@tau2_tool
def find_user_id_by_name_zip(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    """The first user (DB order) whose first and last names equal the given ones ignoring case and
    whose zip equals ``zip`` exactly; content is the bare user id. Error ``not_found`` ``User not
    found``."""
    first, last, zip_code = args["first_name"].lower(), args["last_name"].lower(), args["zip"]
    for user_id, user in db["users"].items():
        name = user["name"]
        if (
            name["first_name"].lower() == first
            and name["last_name"].lower() == last
            and user["address"]["zip"] == zip_code
        ):
            return ok(user_id)
    raise ToolFailure("not_found", "User not found")


@tau2_tool
def find_user_id_by_email(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    """The first user whose email equals ``email`` ignoring case; content is the bare user id.
    Error ``not_found`` ``User not found``."""
    email = args["email"].lower()
    for user_id, user in db["users"].items():
        if user["email"].lower() == email:
            return ok(user_id)
    raise ToolFailure("not_found", "User not found")


@tau2_tool
def get_order_details(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    """The order as JSON (model order, the seven optional fields null when absent). Error
    ``not_found`` ``Order not found``."""
    return ok(order_of(db, args["order_id"]), shapes.ORDER)


@tau2_tool
def get_product_details(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    """The product with all its variants as JSON. Error ``not_found`` ``Product not found``."""
    product = get_or_fail(db["products"], args["product_id"], "Product not found")
    return ok(product, shapes.PRODUCT)


@tau2_tool
def get_item_details(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    """The variant ``item_id`` of the first product holding it, as JSON. Error ``not_found``
    ``Item not found``."""
    item_id = args["item_id"]
    for product in db["products"].values():
        if item_id in product["variants"]:
            return ok(product["variants"][item_id], shapes.VARIANT)
    raise ToolFailure("not_found", "Item not found")


@tau2_tool
def get_user_details(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    """The user as JSON. Error ``not_found`` ``User not found``."""
    return ok(user_of(db, args["user_id"]), shapes.USER)


def list_all_product_types(db: dict[str, Any], args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    """Content: a JSON object from product name to product id, keys sorted (a later product with
    the same name wins). Never fails."""
    names = {product["name"]: product["product_id"] for product in db["products"].values()}
    return ok(json.dumps(names, sort_keys=True))
