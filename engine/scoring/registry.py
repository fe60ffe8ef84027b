"""The signal registry of this process: the built-in signals, then installed packages' ones.

A third-party package registers a signal (an ``engine.core.signals.SignalDef``, i.e. a function
decorated with ``@signal``) under the ``evalctl.signals`` entry-point group::

    [project.entry-points."evalctl.signals"]
    latency_ok = "latency_signal:latency_ok"

The entry point's name must be the signal's name. Built-in names cannot be replaced: a package
registering one is refused, as is an entry point that does not load or is not a SignalDef; each
refusal is one line on stderr naming the entry point (the run goes on with the other signals,
and a spec naming the refused signal fails validation). docs/authoring.md, "Adding a success
signal", has a complete example.
"""

from __future__ import annotations

import sys
from functools import cache
from importlib.metadata import entry_points

from engine.core.fidelity import FidelityCheckDef, FidelityRegistry
from engine.core.signals import SignalDef, SignalRegistry
from engine.scoring.fidelity import BUILTIN as FIDELITY_BUILTIN
from engine.scoring.signals import BUILTIN

ENTRY_POINT_GROUP = "evalctl.signals"


def installed() -> tuple[list[SignalDef], list[str]]:
    """The signals installed packages register under ``evalctl.signals``, and one line per entry
    point refused (does not load, not a SignalDef, named otherwise than its signal)."""
    found: list[SignalDef] = []
    refused: list[str] = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            definition = ep.load()
        except Exception as exc:  # a third party's import error must not stop the run
            refused.append(f"{ep.name} = {ep.value}: does not load ({type(exc).__name__}: {exc})")
            continue
        if not isinstance(definition, SignalDef):
            refused.append(f"{ep.name} = {ep.value}: not a signal (decorate the function with @signal)")
        elif definition.name != ep.name:
            refused.append(f"{ep.name} = {ep.value}: the signal is named {definition.name!r}")
        else:
            found.append(definition)
    return found, refused


def build_registry(extra: list[SignalDef]) -> tuple[SignalRegistry, list[str]]:
    """The built-in signals plus ``extra`` (a duplicate or built-in name is refused, with a line)."""
    registry = SignalRegistry(BUILTIN)
    refused: list[str] = []
    for definition in extra:
        try:
            registry.add(definition)
        except ValueError as err:
            refused.append(f"{definition.name}: {err}")
    return registry, refused


@cache
def signals() -> SignalRegistry:
    """Every signal of this process, in display order: :data:`engine.scoring.signals.BUILTIN`,
    then the installed ones (entry points scanned once per process; refusals printed on stderr)."""
    found, refused = installed()
    registry, more = build_registry(found)
    for line in (*refused, *more):
        print(f"evalctl: signal entry point {ENTRY_POINT_GROUP}: {line}; left out", file=sys.stderr)
    return registry


def signal_names() -> tuple[str, ...]:
    """The names a spec's ``success_signals`` may list (the schema enums), in display order."""
    return signals().gating_names()


#: The entry-point group of installed caller-fidelity checks (``engine.core.fidelity``).
FIDELITY_ENTRY_POINT_GROUP = "evalctl.fidelity"


@cache
def fidelity_checks() -> FidelityRegistry:
    """Every caller-fidelity check of this process: the built-in ones
    (:data:`engine.scoring.fidelity.BUILTIN`), then those installed packages register under
    ``evalctl.fidelity`` (the entry point named as its check); a refused one is one line on stderr."""
    registry = FidelityRegistry(FIDELITY_BUILTIN)
    for ep in entry_points(group=FIDELITY_ENTRY_POINT_GROUP):
        try:
            definition = ep.load()
            if not isinstance(definition, FidelityCheckDef) or definition.name != ep.name:
                raise TypeError("not a fidelity check of that name (decorate it with @fidelity_check)")
            registry.add(definition)
        except Exception as exc:  # a third party's failure must not stop the run
            print(
                f"evalctl: fidelity entry point {FIDELITY_ENTRY_POINT_GROUP}: {ep.name} = {ep.value}: "
                f"{type(exc).__name__}: {exc}; left out",
                file=sys.stderr,
            )
    return registry
