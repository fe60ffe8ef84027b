"""``view_delta`` / ``apply_delta`` (engine.core.tools.writeset): a session DB sent between
processes as what it changed. The rebuilt DB equals the session's, and the delta holds only the
records a write copied, whatever the change (a record replaced, appended or removed, a table or a
list replaced, a top-level key added or removed, a deep copy)."""

from __future__ import annotations

import pickle
from typing import Any

from engine.core.tools.writeset import apply_delta, deep_copy, session_view, view_delta


def _base() -> dict[str, Any]:
    return {
        "users": {f"u{i}": {"name": f"user {i}", "orders": [i]} for i in range(200)},
        "flags": [{"on": True}, {"on": False}],
        "version": 3,
    }


def _roundtrip(base: dict[str, Any], view: dict[str, Any]) -> dict[str, Any]:
    delta = pickle.loads(pickle.dumps(view_delta(base, view)))  # as it crosses the pipe
    rebuilt = apply_delta(pickle.loads(pickle.dumps(base)), delta)  # the other process's own base
    assert rebuilt == view and list(rebuilt) == list(view)
    for table in ("users",):
        if isinstance(view.get(table), dict):
            assert list(rebuilt[table]) == list(view[table])  # the records' order too
    return delta


def test_an_untouched_session_sends_nothing() -> None:
    base = _base()
    assert _roundtrip(base, session_view(base)) == {"order": list(base), "top": {}, "rows": {}}


def test_a_written_record_is_the_only_one_sent() -> None:
    base = _base()
    view = session_view(base)
    view["users"]["u7"] = {**view["users"]["u7"], "name": "renamed"}  # as WriteSet copies it
    view["users"]["u999"] = {"name": "new", "orders": []}  # appended
    delta = _roundtrip(base, view)
    assert delta == {
        "order": list(base),
        "top": {},
        "rows": {"users": {"u7": view["users"]["u7"], "u999": view["users"]["u999"]}},
    }
    assert len(pickle.dumps(delta)) < len(pickle.dumps(view)) / 20


def test_removals_lists_and_top_level_changes_are_sent_whole() -> None:
    base = _base()
    view = session_view(base)
    del view["users"]["u3"]  # a removal changes the table's keys: the table goes whole
    view["flags"][1] = {"on": True}
    view["version"] = 4
    view["added"] = {"x": 1}
    delta = _roundtrip(base, view)
    assert set(delta["top"]) == {"users", "flags", "version", "added"} and delta["rows"] == {}
    smaller = session_view(base)
    del smaller["version"]
    assert _roundtrip(base, smaller) == {"order": ["users", "flags"], "top": {}, "rows": {}}


def test_a_deep_copy_is_sent_whole_and_rebuilt_equal() -> None:
    base = _base()
    view = deep_copy(base)
    view["users"]["u1"]["name"] = "changed in place"
    delta = _roundtrip(base, view)
    assert len(delta["rows"]["users"]) == 200  # nothing shared: every record differs by identity


def test_the_top_level_order_of_the_session_is_kept() -> None:
    """A domain's set-up step may rebuild the DB in another order (tau2 telecom does)."""
    base = _base()
    view = {k: session_view(base)[k] for k in ("version", "users", "flags")}
    assert list(_roundtrip(base, view)["order"]) == ["version", "users", "flags"]
