"""Issue 30 item 1: the tau2 domains take tool arguments as tau2 calls its tools (``**arguments``
into the toolkit method, no conversion), through the engine's runtime and the shipped tool tables:
undeclared and missing arguments refused with Python's TypeError text, nothing converted, a wrong
JSON type refused before the tool runs (the documented divergence), and telecom results shown to
the model as tau2's text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine.core.toolruntime import ToolRuntime
from engine.core.tools.writeset import session_view
from engine.domains.registry import plugins
from engine.spec.loader import LoadedDomain, load_domain
from tests.conftest import REPO

RES = "4WQ150"  # a reservation of the airline DB


@pytest.fixture(scope="module")
def specs(data_root: Path) -> dict[str, LoadedDomain]:
    names = ("tau2_airline", "tau2_retail", "tau2_telecom")
    return {n: load_domain(REPO / "specs" / n, data_root, plugins=plugins()) for n in names}


def _call(loaded: LoadedDomain, name: str, args: Any) -> tuple[dict[str, Any], str, dict[str, Any]]:
    """(result, the text the model is shown, the session DB) of one call on a fresh session."""
    scenario = loaded.scenarios[0]
    assert scenario.initial_db is not None
    db = session_view(scenario.initial_db)
    result = ToolRuntime(scenario.tools, db).call(name, args).result
    plugin = scenario.domain.plugin
    assert plugin is not None and plugin.result_text is not None
    return result, plugin.result_text(result), db


def test_issue30_item1_undeclared_arguments_are_refused_with_taus_type_error(specs) -> None:
    result, text, _ = _call(specs["tau2_airline"], "get_user_details", {"user_id": "mia_li_3668", "x": 1})
    assert result["status"] == "error"
    assert text == "Error: AirlineTools.get_user_details() got an unexpected keyword argument 'x'"
    _, text, _ = _call(specs["tau2_retail"], "get_order_details", {"order_id": "#W2378156", "verbose": True})
    assert text == "Error: RetailTools.get_order_details() got an unexpected keyword argument 'verbose'"
    # a write tool with an extra key changes nothing (it ran before: issue 30 counted 85 such runs)
    args = {
        "reservation_id": RES,
        "total_baggages": 9,
        "nonfree_baggages": 9,
        "payment_id": "x",
        "note": "",
    }
    result, text, db = _call(specs["tau2_airline"], "update_reservation_baggages", args)
    assert text.endswith("got an unexpected keyword argument 'note'")
    assert db["reservations"][RES] is specs["tau2_airline"].scenarios[0].initial_db["reservations"][RES]
    _, text, _ = _call(
        specs["tau2_telecom"], "get_customer_by_phone", {"phone_number": "555-123-2002", "x": 1}
    )
    assert text == "Error: TelecomTools.get_customer_by_phone() got an unexpected keyword argument 'x'"


def test_issue30_item1_missing_arguments_are_refused_with_taus_type_error(specs) -> None:
    _, text, _ = _call(specs["tau2_airline"], "get_reservation_details", {})
    assert (
        text == "Error: AirlineTools.get_reservation_details() missing 1 required positional argument: "
        "'reservation_id'"
    )
    _, text, _ = _call(specs["tau2_retail"], "find_user_id_by_name_zip", {"zip": "19122"})
    assert text == (
        "Error: RetailTools.find_user_id_by_name_zip() missing 2 required positional arguments: "
        "'first_name' and 'last_name'"
    )
    _, text, _ = _call(specs["tau2_airline"], "update_reservation_baggages", {})
    assert text.endswith(
        "missing 4 required positional arguments: 'reservation_id', 'total_baggages', "
        "'nonfree_baggages', and 'payment_id'"
    )


@pytest.mark.parametrize("value", ["2", 2.0, True, None])
def test_issue30_item1_nothing_is_converted(specs, value: Any) -> None:
    """tau2 converts nothing: "2" / 2.0 for an integer are not 2 (tau2 would store "2" raw, or
    raise midway after a partial write); evalctl refuses them before the tool runs."""
    args = {"reservation_id": RES, "total_baggages": value, "nonfree_baggages": 0, "payment_id": "x"}
    result, text, db = _call(specs["tau2_airline"], "update_reservation_baggages", args)
    assert result["status"] == "error" and result["error_type"] == "invalid_arguments"
    assert text.startswith("Error: ")
    assert text == (
        "Error: Argument 'total_baggages' of AirlineTools.update_reservation_baggages() should be "
        f"integer, not {value!r}"
    )
    assert db["reservations"][RES] is specs["tau2_airline"].scenarios[0].initial_db["reservations"][RES]


def test_issue30_item1_a_string_is_never_taken_for_a_number_and_back(specs) -> None:
    _, text, _ = _call(specs["tau2_airline"], "get_user_details", {"user_id": 5})
    assert text == "Error: Argument 'user_id' of AirlineTools.get_user_details() should be string, not 5"
    ok, text, _ = _call(specs["tau2_airline"], "get_user_details", {"user_id": "mia_li_3668"})
    assert ok["status"] == "success" and text.startswith('{"user_id": "mia_li_3668"')


def test_issue30_item1_telecom_results_reach_the_model_as_taus_text(specs) -> None:
    result, text, _ = _call(specs["tau2_telecom"], "get_customer_by_phone", {"phone_number": "000"})
    assert result["status"] == "error" and text == "Error: " + result["message"]
    assert not text.startswith("{")
    result, text, _ = _call(specs["tau2_telecom"], "transfer_to_human_agents", {"summary": "s"})
    assert result["status"] == "success" and text == "Transfer successful"
