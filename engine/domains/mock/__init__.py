"""The tiny ``mock`` shop domain of the tests (``tests/mock_domain/``) and of docs/authoring.md's
examples: orders, store credit and two predicates."""

from __future__ import annotations

from engine.core.plugin import DomainPlugin
from engine.domains.mock import handlers

PLUGIN = DomainPlugin(
    name="mock",
    description="a tiny shop: orders and store credit",
    handlers={
        "mock_get_order": handlers.get_order,
        "mock_cancel_order": handlers.cancel_order,
        "mock_issue_credit": handlers.issue_credit,
    },
    predicates={"order_status": handlers.mock_order_status, "credit_balance": handlers.mock_credit_balance},
)
