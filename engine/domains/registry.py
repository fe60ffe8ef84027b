"""The domain registry: one literal dict of the built-in domain plugins, plus installed ones.

A third-party package registers its plugin under the ``evalctl.domains`` entry-point group
(``[project.entry-points."evalctl.domains"] bakery = "bakery_domain:PLUGIN"``); built-in names win
over installed ones. Only the command layer imports this module.
"""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path

from engine import specs
from engine.domains import eva_airline, mock, tau2_airline, tau2_retail
from engine.plugin import DomainPlugin, Plugins
from engine.specs import LoadedDomain

#: The built-in plugins by name (a domain spec's ``plugin:``, default its ``name``).
BUILTIN: dict[str, DomainPlugin] = {
    "eva_airline": eva_airline.PLUGIN,
    "mock": mock.PLUGIN,
    "tau2_airline": tau2_airline.PLUGIN,
    "tau2_retail": tau2_retail.PLUGIN,
}

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


def plugins() -> Plugins:
    """Every plugin: installed ones, then the built-in ones (which win on a name clash)."""
    return {**installed(), **BUILTIN}


def load_domain(spec_dir: str | Path, data_root: str | Path | None = None) -> LoadedDomain:
    """:func:`engine.specs.load_domain` with every registered plugin (for scripts and tests)."""
    return specs.load_domain(spec_dir, data_root, plugins=plugins())
