"""``call_checked`` catches handlers that break the handler contract (so its passes mean something)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from tests.domains.nemo.helpers import call_checked


def _pkg(handler: Any) -> Any:
    return SimpleNamespace(HANDLERS={"t": handler})


def _db() -> dict[str, Any]:
    return {"accounts": {"A": {"plan": "x"}, "B": {"plan": "y"}}, "log": [{"n": 1}]}


def test_a_declared_write_passes() -> None:
    def handler(db: dict[str, Any], args: Any, ctx: Any) -> dict[str, Any]:
        db["accounts"][args["account_id"]]["plan"] = "z"
        db["log"].append({"n": 2})
        return {"status": "success"}

    db = _db()
    writes = ("/accounts/{account_id}", "/log/-")
    assert call_checked(_pkg(handler), "t", db, {"account_id": "A"}, writes=writes)["status"] == "success"
    assert db["accounts"]["A"]["plan"] == "z"


def test_a_write_outside_the_declared_paths_fails() -> None:
    def handler(db: dict[str, Any], args: Any, ctx: Any) -> dict[str, Any]:
        db["accounts"]["B"]["plan"] = "z"
        return {"status": "success"}

    with pytest.raises(AssertionError, match="outside"):
        call_checked(_pkg(handler), "t", _db(), {"account_id": "A"}, writes=("/accounts/{account_id}",))


def test_changing_an_entry_of_a_container_in_place_fails() -> None:
    def handler(db: dict[str, Any], args: Any, ctx: Any) -> dict[str, Any]:
        db["log"][0]["n"] = 5
        return {"status": "success"}

    with pytest.raises(AssertionError, match="in place"):
        call_checked(_pkg(handler), "t", _db(), {}, writes=("/log/-",))


def test_an_error_that_half_applies_fails() -> None:
    def handler(db: dict[str, Any], args: Any, ctx: Any) -> dict[str, Any]:
        db["log"].append({"n": 2})
        return {"status": "error", "error_type": "x", "message": "m"}

    with pytest.raises(AssertionError, match="returned an error"):
        call_checked(_pkg(handler), "t", _db(), {}, writes=("/log/-",))


def test_handing_out_a_live_db_object_fails() -> None:
    def handler(db: dict[str, Any], args: Any, ctx: Any) -> dict[str, Any]:
        return {"status": "success", "account": db["accounts"]["A"]}

    with pytest.raises(AssertionError, match="live"):
        call_checked(_pkg(handler), "t", _db(), {}, writes=())
