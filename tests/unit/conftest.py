"""Fixtures of the engine-core tests: the mock shop loaded once per test module."""

from __future__ import annotations

import pytest

from engine.domains.registry import plugins
from engine.spec.loader import LoadedDomain, load_domain
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR


@pytest.fixture(scope="module")
def loaded() -> LoadedDomain:
    """The mock shop (tests/mock_domain/) through the real loader: its scenarios carry a decision
    tree, extra caller facts, agent notes and gold conversations. Read it only."""
    return load_domain(MOCK_SPEC_DIR, MOCK_DATA_ROOT, plugins=plugins())
