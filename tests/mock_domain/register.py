"""Registering the mock shop for the tests the way a third party registers a domain.

The shop's plugin (:mod:`tests.mock_domain.mock_shop`) is not part of the evalctl package. The tests
make it visible the way ``pip install`` makes a domain package visible: a distribution's
``*.dist-info`` folder with an ``entry_points.txt`` naming it under ``evalctl.domains``, on
``sys.path``. :func:`install` writes that folder; :func:`register` puts it (and the repository, so
``tests.mock_domain`` imports) first on ``sys.path`` and on ``$PYTHONPATH``, so the ``evalctl``
processes a test starts find the shop too. ``tests/conftest.py`` does this once per test session.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DISTRIBUTION = "evalctl-test-mock-shop"
VERSION = "0"
ENTRY_POINT = "mock = tests.mock_domain.mock_shop:PLUGIN"


def install(site: Path) -> Path:
    """Write the distribution's metadata into ``site`` (a folder meant for ``sys.path``): the
    ``evalctl_test_mock_shop-0.dist-info`` folder, returned. Raises FileExistsError when it is
    already there."""
    info = site / f"{DISTRIBUTION.replace('-', '_')}-{VERSION}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {DISTRIBUTION}\nVersion: {VERSION}\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(f"[evalctl.domains]\n{ENTRY_POINT}\n", encoding="utf-8")
    return info


def register(site: Path) -> None:
    """Install the distribution into ``site`` and make it visible to this process and its children:
    ``site`` and the repository go first on ``sys.path`` and ``$PYTHONPATH``."""
    install(site)
    paths = [str(site), str(REPO)]
    for path in reversed(paths):
        if path not in sys.path:
            sys.path.insert(0, path)
    current = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = os.pathsep.join([*paths, *(p for p in current.split(os.pathsep) if p)])
