"""The domain registry: built-in plugins by name, installed ones through the ``evalctl.domains``
entry-point group. The test shop ``mock`` is not built in: the test session registers it as a third
party would (tests/mock_domain/register.py), and it reaches the engine through the same lookup."""

from __future__ import annotations

import importlib.util
from importlib.metadata import distribution
from pathlib import Path

import pytest

from engine.domains import registry
from tests.conftest import REPO
from tests.mock_domain import mock_shop
from tests.mock_domain.register import DISTRIBUTION, install


def test_the_test_shop_is_not_a_built_in_domain() -> None:
    assert "mock" not in registry.BUILTIN
    assert importlib.util.find_spec("engine.domains.mock") is None
    assert not (REPO / "engine" / "domains" / "mock").exists()
    with pytest.raises(KeyError):
        registry.builtin("mock")


def test_the_test_shop_comes_from_an_installed_distributions_entry_point() -> None:
    (entry,) = distribution(DISTRIBUTION).entry_points
    assert (entry.group, entry.name, entry.value) == (
        "evalctl.domains",
        "mock",
        "tests.mock_domain.mock_shop:PLUGIN",
    )
    assert registry.installed()["mock"] is mock_shop.PLUGIN
    assert registry.plugins()["mock"] is mock_shop.PLUGIN
    assert "mock" in set(registry.plugins())


def test_every_built_in_name_is_its_plugins_name() -> None:
    for name in registry.BUILTIN:
        assert registry.builtin(name).name == name


def test_install_refuses_to_write_over_an_installed_copy(tmp_path: Path) -> None:
    info = install(tmp_path)
    assert (info / "entry_points.txt").read_text(encoding="utf-8").startswith("[evalctl.domains]\n")
    with pytest.raises(FileExistsError):
        install(tmp_path)
