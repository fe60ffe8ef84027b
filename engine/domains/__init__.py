"""Domain packages: one per domain, each exposing ``PLUGIN`` (an :class:`engine.core.plugin.DomainPlugin`).

Only the command layer and :mod:`engine.domains.registry` import these packages; the engine core
never does (checked by import-linter contracts and tests/project/test_layers.py).
"""
