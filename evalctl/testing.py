"""evalctl as a pytest plugin: the ``evalctl_run`` fixture runs scenarios into the test's own
temporary folder and returns the run's report, so a test asserts on its rates.

Enable it with ``-p evalctl.testing`` or ``pytest_plugins = ["evalctl.testing"]`` in a
``conftest.py`` (an installed evalctl registers it through the ``pytest11`` entry point).

    def test_agent(evalctl_run):
        result = evalctl_run("specs/eva_airline", agent="replay", scenarios=["eva_airline__3_1_5"])
        assert result.composite_rate >= 0.8

The runs land in ``tmp_path / "evalctl-runs"`` (one folder per call) unless ``output_dir`` is
given; ``EVAL_DATA_ROOT`` or ``data_root=`` says where the data releases are.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import evalctl


@pytest.fixture
def evalctl_run(tmp_path: Path) -> Callable[..., evalctl.RunReport]:
    """A function with :func:`evalctl.run`'s arguments whose runs go under the test's
    ``tmp_path`` (``evalctl-runs/1``, ``2``...) unless ``output_dir`` is given."""
    count = 0

    def run(spec_dir: str | Path, **kwargs: Any) -> evalctl.RunReport:
        nonlocal count
        count += 1
        kwargs.setdefault("output_dir", tmp_path / "evalctl-runs" / str(count))
        return evalctl.run(spec_dir, **kwargs)

    return run
