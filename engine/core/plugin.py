"""What a domain package gives the engine: one frozen :class:`DomainPlugin` record.

A domain is a spec folder (``domain.yaml``, tool tables, scenarios), a data release in the data
root and a handler package holding one ``PLUGIN = DomainPlugin(...)``. The engine core never
imports a domain package: the command layer looks plugins up in ``engine.domains.registry`` (one
literal dict, plus third-party packages registered under the ``evalctl.domains`` entry-point group)
and hands them to the spec loader. A domain spec names its plugin with ``plugin:`` (default: the
domain's ``name``).

The records are defined in :mod:`engine.core.model` (a Domain holds its plugin and a plugin's
diagnostics read a Scenario, so they share one module); this is where domain packages import them.
"""

from __future__ import annotations

from engine.core.model import (
    DeriveFunc,
    Diagnostic,
    DiagnosticInputs,
    DomainPlugin,
    GoldAdapter,
    Handler,
    HashFunc,
    InitStep,
    Plugins,
    Predicate,
    ResultText,
    SyncStep,
)

__all__ = [
    "DeriveFunc",
    "Diagnostic",
    "DiagnosticInputs",
    "DomainPlugin",
    "GoldAdapter",
    "Handler",
    "HashFunc",
    "InitStep",
    "Plugins",
    "Predicate",
    "ResultText",
    "SyncStep",
]
