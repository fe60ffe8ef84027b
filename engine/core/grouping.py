"""Scenario groups: how a domain sorts its scenarios into families for reports.

A domain declares its grouping in ``domain.yaml`` (``report_group``); the loader turns it into a
:class:`GroupRule`, every scenario gets its group (``Scenario.group``), each session records it in
``scenario_config/metadata.json`` (``group``), and ``evalctl report --html`` charts the pass rate
per group. eva_airline groups by flow family, the first number of the eva id::

    report_group:
      field: record_id     # what is matched: record_id (default) or name (the scenario name)
      pattern: '^(\\d+)\\.'  # a Python regular expression, searched in the field
      label: 'flow {1}.x'  # the group's name: {0} the whole match, {1}, {2}... its groups
      other: other         # the group of a scenario the pattern does not match (default "other")
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

_REF = re.compile(r"\{(\d+)\}")


@dataclass(frozen=True)
class GroupRule:
    """A domain's ``report_group``: ``pattern`` searched in the scenario's ``field``; a match is
    named by ``label`` with ``{n}`` replaced by the match's group n; no match gives ``other``."""

    pattern: str
    label: str = "{0}"
    field: Literal["record_id", "name"] = "record_id"
    other: str = "other"

    def group_of(self, record_id: str, name: str) -> str:
        """The group of a scenario with that record id and name."""
        m = re.search(self.pattern, record_id if self.field == "record_id" else name)
        if m is None:
            return self.other
        return _REF.sub(lambda ref: m.group(int(ref.group(1))) or "", self.label)


def parse_rule(raw: Mapping[str, Any]) -> tuple[GroupRule | None, list[tuple[str, str]]]:
    """The rule of a schema-checked ``report_group`` mapping, or None with the problems as
    ``(key, message)``: a pattern that does not compile, a label naming a group the pattern lacks."""
    pattern = str(raw["pattern"])
    try:
        compiled = re.compile(pattern)
    except re.error as err:
        return None, [("pattern", f"not a regular expression: {err}")]
    label = str(raw.get("label", "{0}"))
    missing = sorted({int(n) for n in _REF.findall(label) if int(n) > compiled.groups})
    if missing:
        groups = f"{compiled.groups} group{'' if compiled.groups == 1 else 's'}"
        return None, [("label", f"names {{{missing[0]}}} but the pattern has {groups}")]
    field: Literal["record_id", "name"] = "name" if raw.get("field") == "name" else "record_id"
    return GroupRule(pattern, label, field, str(raw.get("other", "other"))), []
