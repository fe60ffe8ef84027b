"""Issue 30 item 7: ``evalctl diff`` takes a call's arguments by the tool's own rules before it says
the agent left the gold path: the engine's lax conversion where the tool uses it (eva_airline),
none for tau2's tools (tau2 converts nothing), and the fields a handler compares without regard
to case ('rodriguez' vs 'Rodriguez')."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from engine.domains.registry import plugins
from engine.results.diff import _left_gold_path
from engine.results.session_files import gold_path
from engine.spec.loader import load_domain
from engine.util.artifacts import write_json
from tests.conftest import REPO

FOLLOWED = "followed the gold path (every gold tool call, in order)"


def _said(tmp_path: Path, spec: str, scenario: str, edit: Any, data_root: Path) -> str | None:
    """What diff says of an agent that made the gold's calls of ``scenario`` changed by ``edit``."""
    loaded = load_domain(REPO / "specs" / spec, data_root, plugins=plugins())
    gold = gold_path(loaded.scenario(scenario))
    sdir = tmp_path / scenario
    write_json(sdir / "scenario_config" / "gold_path.json", gold)
    calls = [
        {"name": c["name"], "arguments": copy.deepcopy(c["arguments"]), "turn": c["turn"]}
        for c in gold["tool_calls"]
    ]
    edit(calls)
    write_json(sdir / "tool_calls.json", calls)
    return _left_gold_path(sdir)


def _set(tool: str, key: str, value: Any) -> Any:
    def edit(calls: list[dict[str, Any]]) -> None:
        call = next(c for c in calls if c["name"] == tool)
        call["arguments"][key] = value(call["arguments"][key]) if callable(value) else value

    return edit


def test_issue30_item7_diff_treats_a_case_insensitive_field_as_the_handler_does(
    tmp_path: Path, data_root: Path
) -> None:
    eva = "eva_airline__voluntary_date_change"  # gold: get_reservation(last_name="rodriguez")
    assert (
        _said(tmp_path, "eva_airline", eva, _set("get_reservation", "last_name", "Rodriguez"), data_root)
        == FOLLOWED
    )
    assert (
        _said(
            tmp_path, "eva_airline", eva, _set("get_reservation", "confirmation_number", "zk3ffw"), data_root
        )
        == FOLLOWED
    )
    other = _said(tmp_path, "eva_airline", eva, _set("get_reservation", "last_name", "Rodrigues"), data_root)
    assert other is not None and other.startswith("left the gold path at tool call 1")
    retail = "tau2_retail__0"  # gold: find_user_id_by_name_zip(first_name="Yusuf", last_name="Rossi", ...)
    assert (
        _said(
            tmp_path,
            "tau2_retail",
            retail,
            _set("find_user_id_by_name_zip", "last_name", str.lower),
            data_root,
        )
        == FOLLOWED
    )
    zip_changed = _said(
        tmp_path, "tau2_retail", retail, _set("find_user_id_by_name_zip", "zip", "19123"), data_root
    )
    assert zip_changed is not None and zip_changed.startswith("left the gold path")


def test_issue30_item7_diff_converts_arguments_only_where_the_tool_does(
    tmp_path: Path, data_root: Path
) -> None:
    eva = "eva_airline__voluntary_date_change"  # gold: search_rebooking_options(passenger_count=1)
    as_text = _set("search_rebooking_options", "passenger_count", lambda v: str(v))
    assert _said(tmp_path, "eva_airline", eva, as_text, data_root) == FOLLOWED  # eva's pydantic takes "1"
    # tau2 converts nothing: the zip as a number is another call (tau2 compares it with a string)
    retail = "tau2_retail__0"
    as_number = _said(
        tmp_path, "tau2_retail", retail, _set("find_user_id_by_name_zip", "zip", 19122), data_root
    )
    assert as_number is not None and as_number.startswith("left the gold path at tool call 1")
