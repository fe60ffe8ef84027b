"""The domain registry: one literal dict of the built-in domain plugins, plus installed ones.

A third-party package registers its plugin under the ``evalctl.domains`` entry-point group
(``[project.entry-points."evalctl.domains"] bakery = "bakery_domain:PLUGIN"``); built-in names win
over installed ones (the tests register their ``mock`` shop that way: tests/mock_domain/register.py).
Only the command layer imports this module; it hands :func:`plugins` to the one loader,
``engine.spec.loader.load_domain(spec_dir, data_root, plugins=plugins())``.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from importlib.metadata import entry_points

from engine.core.plugin import DomainPlugin, Plugins

#: The built-in plugins by name (a domain spec's ``plugin:``, default its ``name``): the package
#: whose ``PLUGIN`` it is, imported when the name is first looked up (a run of one domain does not
#: pay for importing the others: about 0.2 s).
BUILTIN: dict[str, str] = {
    "eva_airline": "engine.domains.eva_airline",
    "restaurant": "engine.domains.restaurant",
    "customer_service": "engine.domains.customer_service",
    "qa": "engine.domains.qa",
    "tau2_airline": "engine.domains.tau2_airline",
    "tau2_retail": "engine.domains.tau2_retail",
    "tau2_telecom": "engine.domains.tau2_telecom",
}


def builtin(name: str) -> DomainPlugin:
    """The built-in plugin ``name`` (KeyError when there is none), its package imported now."""
    plugin = importlib.import_module(BUILTIN[name]).PLUGIN
    assert isinstance(plugin, DomainPlugin), f"{BUILTIN[name]}.PLUGIN is not a DomainPlugin"
    return plugin


ENTRY_POINT_GROUP = "evalctl.domains"


def installed() -> dict[str, DomainPlugin]:
    """Plugins registered by installed packages under ``evalctl.domains``. An entry point that
    fails to load or is not a DomainPlugin is left out (the spec naming it then gets a validation
    problem saying the plugin is unknown)."""
    found: dict[str, DomainPlugin] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            plugin = ep.load()
        except Exception:
            continue
        if isinstance(plugin, DomainPlugin):
            found[ep.name] = plugin
    return found


class _Plugins(Mapping[str, DomainPlugin]):
    """The built-in plugins, then installed ones (built-in names win). Installed packages are
    looked up only when a name is not built in or the whole list is asked for: scanning the entry
    points means reading the metadata of every installed distribution."""

    def __init__(self) -> None:
        self._installed: dict[str, DomainPlugin] | None = None

    def _all(self) -> dict[str, DomainPlugin]:
        if self._installed is None:
            self._installed = installed()
        return {**self._installed, **{name: builtin(name) for name in BUILTIN}}

    def __getitem__(self, name: str) -> DomainPlugin:
        if name in BUILTIN:
            return builtin(name)
        return self._all()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


def plugins() -> Plugins:
    """Every plugin: the built-in ones, then installed ones (scanned only when needed)."""
    return _Plugins()
