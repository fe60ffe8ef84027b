"""Fixtures of the eva_airline tests: the domain loaded from the real data root once per module."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.domains.registry import plugins
from engine.spec.loader import LoadedDomain, load_domain
from tests.conftest import SPEC_DIR


@pytest.fixture(scope="module")
def loaded(data_root: Path) -> LoadedDomain:
    """specs/eva_airline on the eva 0.1.3 and 2.1.0 releases (50 scenarios). Read it only."""
    return load_domain(SPEC_DIR, data_root, plugins=plugins())
