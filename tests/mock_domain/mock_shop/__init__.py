"""The tiny ``mock`` shop domain of the tests (``tests/mock_domain/``): orders, store credit and two
predicates. It is not part of the shipped package: the tests register it the way a third party
registers a domain, through an ``evalctl.domains`` entry point of a distribution of their own
(:mod:`tests.mock_domain.register`)."""

from __future__ import annotations

from engine.core.plugin import DomainPlugin
from tests.mock_domain.mock_shop import handlers

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
