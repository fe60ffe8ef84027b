"""The NeMo small-domain data release (``nemo-1a83139/scenarios.json``) and what every domain reads.

The release holds one record per upstream scenario (fields described in the release's README):
``module`` (``restaurant``, ``fastbite``, ``customer_service``, ``qa``, ``simple_qa``), ``name``,
``agent_tools`` (tool class name -> constructor arguments, all strings), the persona / task / actions /
resources of both sides, ``reference_answer`` and ``reference_rendered_prompts``. Records are
read in place from the data root; nothing here copies upstream text into the project.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

#: The release folder inside a data root, and its dataset file.
RELEASE = "nemo-1a83139"
DATASET = f"{RELEASE}/scenarios.json"

#: Upstream module -> evalctl domain (the two legacy modules fold into restaurant and qa).
DOMAIN_OF_MODULE: dict[str, str] = {
    "restaurant": "restaurant",
    "fastbite": "restaurant",
    "customer_service": "customer_service",
    "qa": "qa",
    "simple_qa": "qa",
}

#: What upstream's bridge sends the agent before anyone speaks (the agent then greets the caller);
#: every one of the 35 scenarios starts this way (upstream ``bridge.py`` kickoff).
AGENT_KICKOFF = "Hello"

#: The upstream tool that ends the call; evalctl maps it onto its harness ``end_conversation``.
END_TOOL = "EndConversationTool"


def load_records(data_root: str | Path) -> dict[str, dict[str, Any]]:
    """All records of the release under ``data_root``, keyed by upstream ``name`` (file order).

    Raises FileNotFoundError when the release is missing, ValueError when the file does not hold
    ``{"scenarios": [record, ...]}`` or two records share a name.
    """
    path = Path(data_root) / DATASET
    doc = json.loads(path.read_text(encoding="utf-8"))
    records = doc.get("scenarios") if isinstance(doc, dict) else None
    if not isinstance(records, list):
        raise ValueError(f"{path}: expected an object with a 'scenarios' list")
    out: dict[str, dict[str, Any]] = {}
    for record in records:
        name = record["name"]
        if name in out:
            raise ValueError(f"{path}: duplicate scenario name {name!r}")
        out[name] = record
    return out


def domain_of(record: Mapping[str, Any]) -> str:
    """The evalctl domain of a record (``restaurant``, ``customer_service`` or ``qa``); KeyError
    for an unknown upstream module."""
    return DOMAIN_OF_MODULE[record["module"]]


def evalctl_name(record: Mapping[str, Any]) -> str:
    """The evalctl scenario name ``<domain>__<label>``: upstream names already have that form,
    except the legacy ones (``fastbite`` -> ``restaurant__fastbite``, ``simple_qa_2`` ->
    ``qa__simple_qa_2``)."""
    domain = domain_of(record)
    name = str(record["name"])
    return name if name.startswith(f"{domain}__") else f"{domain}__{name}"


def offered_tools(record: Mapping[str, Any]) -> list[str]:
    """The tool names this scenario gives the agent, in upstream order (``EndConversationTool``
    included). Scenarios of one domain differ: the domain's tool table
    (``specs/<domain>/tools.yaml``) holds the union."""
    return list(record["agent_tools"])


def tool_arguments(record: Mapping[str, Any], tool: str) -> dict[str, Any]:
    """The upstream constructor arguments of ``tool`` in this scenario (``{}`` when not offered)."""
    return dict(record["agent_tools"].get(tool) or {})


def upstream_truthy(value: Any) -> bool:
    """Python truthiness, as upstream applies it to constructor strings: ``"False"`` is true."""
    return bool(value)
