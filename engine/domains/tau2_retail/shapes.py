"""Record layouts and null defaults of tau2's retail DB (mirrors tau2 17e07b1 retail data models).

The JSON file already holds fields in model order; what tau2 adds when it shows or hashes an order
is its seven optional fields, null when absent (no order in the file has them).
"""

from __future__ import annotations

from engine.domains.tau2_common.shapes import ListOf, MapOf, Tagged, model

ORDER_OPTIONAL = (
    "cancel_reason",
    "exchange_items",
    "exchange_new_items",
    "exchange_payment_method_id",
    "exchange_price_difference",
    "return_items",
    "return_payment_method_id",
)

#: Fields tau2's retail models hold as null when the DB leaves them out (for the tau2 hash).
NULL_DEFAULTS: dict[str, dict[str, None]] = {"/orders/*": dict.fromkeys(ORDER_OPTIONAL)}

VARIANT = model("item_id", "options", "available", "price")
PRODUCT = model("name", "product_id", ("variants", MapOf(VARIANT)))
NAME = model("first_name", "last_name")
ADDRESS = model("address1", "address2", "city", "country", "state", "zip")
PAYMENT_METHOD = Tagged(
    "source",
    {
        "credit_card": model("source", "id", "brand", "last_four"),
        "paypal": model("source", "id"),
        "gift_card": model("source", "id", "balance"),
    },
)
USER = model(
    "user_id",
    ("name", NAME),
    ("address", ADDRESS),
    "email",
    ("payment_methods", MapOf(PAYMENT_METHOD)),
    "orders",
)
ORDER_ITEM = model("name", "product_id", "item_id", "price", "options")
FULFILMENT = model("tracking_id", "item_ids")
ORDER_PAYMENT = model("transaction_type", "amount", "payment_method_id")
ORDER = model(
    "order_id",
    "user_id",
    ("address", ADDRESS),
    ("items", ListOf(ORDER_ITEM)),
    "status",
    ("fulfillments", ListOf(FULFILMENT)),
    ("payment_history", ListOf(ORDER_PAYMENT)),
    *ORDER_OPTIONAL,
    nullable=ORDER_OPTIONAL,
)
DB = model(("products", MapOf(PRODUCT)), ("users", MapOf(USER)), ("orders", MapOf(ORDER)))
