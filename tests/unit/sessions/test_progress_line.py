"""The progress line of a finished session: the error it shows is one clipped line."""

from __future__ import annotations

from typing import Any

import pytest

from engine.domains.registry import plugins
from engine.run.progress import Finished
from engine.spec.loader import load_domain
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR
from tests.mock_domain.eva_fixtures import session


@pytest.fixture(scope="module")
def sc() -> Any:
    return load_domain(MOCK_SPEC_DIR, MOCK_DATA_ROOT, plugins=plugins()).scenario("mock__shipped_refusal")


def test_a_long_bad_message_error_is_clipped_on_the_progress_line(sc: Any) -> None:
    """Repro: a bad_message printed a 2,061-character progress line with its newlines."""
    result = session(sc, sc.fresh_db(), stop_reason="error", error="bad_message: " + "x\n" * 1000)
    fin = Finished.of(result, None)
    assert "\n" not in fin.note and len(fin.note) < 300
    assert "(2013 chars)" in fin.note
