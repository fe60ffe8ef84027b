"""Fixtures of the NeMo small-domain tests: the ``nemo-1a83139`` release through the data root."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.core.dataroot import resolve_data_root
from engine.domains.nemo_common import RELEASE
from tests.domains.nemo.helpers import SHARED_FALLBACK, configured_root, has_release


@pytest.fixture(scope="session", autouse=True)
def nemo_data_root() -> Iterator[Path]:
    """The data root holding ``nemo-1a83139``: ``resolve_data_root(None)`` (./data), else the
    shared folder, set as ``EVAL_DATA_ROOT`` for the session only in that case."""
    root = configured_root()
    if has_release(root):
        assert root is not None
        yield root
        return
    # TODO(lead): remove this fallback once `make data` installs nemo-1a83139 into ./data.
    if not has_release(SHARED_FALLBACK):
        pytest.fail(f"no {RELEASE} under the data root ({root}) nor under {SHARED_FALLBACK}: run `make data`")
    saved = os.environ.get("EVAL_DATA_ROOT")
    os.environ["EVAL_DATA_ROOT"] = str(SHARED_FALLBACK)
    try:
        yield resolve_data_root(None)
    finally:
        if saved is None:
            os.environ.pop("EVAL_DATA_ROOT", None)
        else:
            os.environ["EVAL_DATA_ROOT"] = saved
