"""Helpers of the NeMo small-domain tests: the release, the tool tables through the real spec
loader, a writes-checking handler call, a replay."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from engine.core.dataroot import resolve_data_root
from engine.core.model import ToolSpec
from engine.core.tools.arguments import ArgumentChecker
from engine.core.tools.context import CallContext
from engine.domains import customer_service, qa, restaurant
from engine.domains.nemo_common import END_TOOL, RELEASE, domain_of, load_records
from engine.domains.registry import plugins
from engine.spec.loader import LoadedDomain, load_domain
from engine.util.errors import DataRootError

# TODO(lead): remove this fallback once `make data` installs nemo-1a83139 into ./data.
SHARED_FALLBACK = Path("/work/shared")
REPO = Path(__file__).resolve().parents[3]

PACKAGES: dict[str, ModuleType] = {"restaurant": restaurant, "customer_service": customer_service, "qa": qa}


def has_release(root: Path | None) -> bool:
    return root is not None and (root / RELEASE / "scenarios.json").is_file()


def configured_root() -> Path | None:
    """``resolve_data_root(None)`` (``$EVAL_DATA_ROOT`` or ./data), or None when it does not exist."""
    try:
        return resolve_data_root(None)
    except DataRootError:
        return None


@cache
def release_records() -> dict[str, dict[str, Any]]:
    """The 35 records, from the data root, else from the shared fallback (see conftest)."""
    return load_records(data_root())


def data_root() -> Path:
    root = configured_root()
    return root if has_release(root) and root is not None else SHARED_FALLBACK


@cache
def loaded(domain: str) -> LoadedDomain:
    """``specs/<domain>`` through the real loader (registry plugins, the release's data root)."""
    return load_domain(REPO / "specs" / domain, data_root(), plugins=plugins())


def tool_spec(pkg: ModuleType, tool: str) -> ToolSpec:
    """The row of ``tool`` in the domain's YAML tool table (AssertionError when it has none)."""
    spec = loaded(pkg.PLUGIN.name).domain.tools.get(tool)
    assert spec is not None, f"{tool} is not in specs/{pkg.PLUGIN.name}/tools.yaml"
    return spec


def names(*domains: str) -> list[str]:
    """Upstream names of the records of ``domains`` (all when none given), in file order."""
    return [n for n, r in release_records().items() if not domains or domain_of(r) in domains]


def package(record: Mapping[str, Any]) -> ModuleType:
    return PACKAGES[domain_of(record)]


_MISSING = object()


def _segments(path: str, args: Mapping[str, Any]) -> tuple[list[str], bool]:
    parts = path.strip("/").split("/")
    container = parts[-1] == "-"
    if container:
        parts = parts[:-1]
    return [str(args[p[1:-1]]) if p.startswith("{") else p for p in parts], container


def _node(doc: Any, segs: list[str]) -> Any:
    for seg in segs:
        if isinstance(doc, dict) and seg in doc:
            doc = doc[seg]
        elif isinstance(doc, list) and seg.isdigit() and int(seg) < len(doc):
            doc = doc[int(seg)]
        else:
            return _MISSING
    return doc


def _mask(doc: Any, segs: list[str]) -> None:
    parent = _node(doc, segs[:-1])
    if isinstance(parent, dict) and segs[-1] in parent:
        parent[segs[-1]] = "<declared>"


def _ids(value: Any, out: set[int]) -> set[int]:
    if isinstance(value, dict | list):
        out.add(id(value))
        for item in value.values() if isinstance(value, dict) else value:
            _ids(item, out)
    return out


def call_checked(
    pkg: ModuleType,
    tool: str,
    db: dict[str, Any],
    args: Mapping[str, Any],
    options: Mapping[str, Any] | None = None,
    call_index: int = 1,
    writes: tuple[str, ...] | None = None,
) -> dict[str, Any]:
    """Run one handler and check the contract around it: nothing outside the tool's ``writes``
    (default: its tool table row's) changes, entries of a ``/-`` container are not changed in place,
    an error leaves the DB untouched, the result is JSON and shares no object with the DB."""
    before = copy.deepcopy(db)
    if writes is None:
        writes = tool_spec(pkg, tool).writes or ()
    declared = [_segments(p, args) for p in writes]
    entries = []
    for segs, container in declared:
        node = _node(db, segs)
        if container and isinstance(node, dict | list):
            for item in node.values() if isinstance(node, dict) else node:
                entries.append((item, copy.deepcopy(item)))
    ctx = CallContext(
        tool=tool, call_index=call_index, options=dict(options or {}), today=str(db.get("_current_date", ""))
    )
    result = pkg.HANDLERS[tool](db, args, ctx)
    json.dumps(result)
    assert result["status"] in ("success", "error"), result
    if result["status"] == "error":
        assert set(result) == {"status", "error_type", "message"}, result
        assert db == before, f"{tool} changed the DB and returned an error"
    masked_before, masked_after = copy.deepcopy(before), copy.deepcopy(db)
    for segs, _ in declared:
        _mask(masked_before, segs)
        _mask(masked_after, segs)
    assert masked_after == masked_before, f"{tool} changed the DB outside {writes}"
    for live, snapshot in entries:
        assert live == snapshot, f"{tool} changed an existing entry of a '/-' container in place"
    assert not (_ids(result, set()) & _ids(db, set())), f"{tool} handed out a live DB object"
    return result


def checked_arguments(pkg: ModuleType, tool: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """``args`` through the engine's argument checker with the tool's JSON Schema (AssertionError
    with the error result when they are refused)."""
    clean, failed = ArgumentChecker(tool_spec(pkg, tool).parameters, {}).check(args)
    assert failed is None, failed
    assert clean is not None
    return clean


def replay(record: Mapping[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]], list[str]]:
    """Play the record's gold tool calls on its initial DB with the domain's handlers.

    Returns ``(final db, action records of write tools, tools called)``; asserts every call is
    offered, passes the schema and succeeds, and that the conversation ends with the end tool.
    """
    pkg = package(record)
    db = pkg.initial_db(record)
    options = pkg.tool_options(record)
    actions: list[dict[str, Any]] = []
    called: list[str] = []
    counts: dict[str, int] = {}
    steps = pkg.gold_steps(record)
    for step in steps:
        if step["kind"] != "tool_call":
            continue
        tool = step["tool"]
        assert tool in record["agent_tools"], f"{record['name']}: gold calls {tool}, which is not offered"
        called.append(tool)
        args = checked_arguments(pkg, tool, step["arguments"])
        if tool == END_TOOL:
            continue
        counts[tool] = counts.get(tool, 0) + 1
        result = call_checked(pkg, tool, db, args, options.get(tool), counts[tool])
        assert result["status"] == "success", (record["name"], tool, result)
        if tool_spec(pkg, tool).kind == "write":
            actions.append({"action_type": tool, **args})
    assert steps[-1] == {"kind": "tool_call", "text": "", "tool": END_TOOL, "arguments": {}}
    return db, actions, called
