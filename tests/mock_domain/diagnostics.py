"""The mock shop's plugin with two diagnostics, for the tests of what the engine does with a domain's
diagnostics (metrics.json, summary.json, the report) without the eva data.

The shop's own plugin (:mod:`tests.mock_domain.mock_shop`) has none; ``plugins_with_diagnostics()``
is the registry's plugins with ``mock`` replaced by this one (pass it as ``RunOptions.plugins`` or
``load_domain(plugins=...)``):

- ``looked_up`` (bool): the agent called ``get_order`` before its first write (eva's
  ``authenticated`` is the same kind of check);
- ``long_agent_lines`` (count, 0 = clean): agent utterances over ``LONG_LINE`` characters (eva's
  spoken-form counts are the same kind).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from engine.core.model import DiagnosticInputs, DomainPlugin
from engine.domains.registry import plugins
from tests.mock_domain import mock_shop

LONG_LINE = 60
WRITES = ("cancel_order", "issue_credit")
NAMES = ("looked_up", "long_agent_lines")


def looked_up(inputs: DiagnosticInputs) -> bool:
    for call in inputs.result.tool_calls:
        if call.get("side", "agent") != "agent":
            continue
        if call["name"] == "get_order":
            return True
        if call["name"] in WRITES:
            return False
    return True  # no write at all: nothing to look up before


def long_agent_lines(inputs: DiagnosticInputs) -> int:
    return sum(
        1
        for e in inputs.result.transcript
        if e.get("role") == "agent" and e.get("type") == "utterance" and len(str(e["content"])) > LONG_LINE
    )


PLUGIN = dataclasses.replace(
    mock_shop.PLUGIN,
    diagnostics={"looked_up": looked_up, "long_agent_lines": long_agent_lines},
    count_diagnostics=frozenset({"long_agent_lines"}),
)


def plugins_with_diagnostics() -> Mapping[str, DomainPlugin]:
    return {**plugins(), "mock": PLUGIN}
