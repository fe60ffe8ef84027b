"""Issue 30 item 8 (real-model run): ``diff`` lists the agent's refused tool calls with their
errors; it said "actions: none" when every one of a model's 5-9 calls had been refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import cli
from engine.results.diff import refused_calls
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR

ONE = "mock__shipped_refusal"


def test_diff_lists_refused_tool_calls_with_their_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    spec = ["run", str(MOCK_SPEC_DIR), "--data-root", str(MOCK_DATA_ROOT), "--output-dir", str(out)]
    assert cli.main([*spec, "--scenarios", ONE, "--no-progress", "--workers", "1"]) == 0
    sdir = out / ONE
    refused = [
        {
            "name": "cancel_order",
            "arguments": '{"order_id": "O-1',
            "result": {
                "status": "error",
                "error_type": "invalid_arguments",
                "message": "arguments are not JSON",
            },
            "turn": 1,
            "side": "agent",
        },
        {
            "name": "cancel_order",
            "arguments": {"order_id": "O-102"},
            "result": {
                "status": "error",
                "error_type": "invalid_state",
                "message": "order O-102 has shipped",
            },
            "turn": 2,
            "side": "agent",
        },
    ]
    calls = json.loads((sdir / "tool_calls.json").read_text(encoding="utf-8"))
    (sdir / "tool_calls.json").write_text(json.dumps([*calls, *refused]), encoding="utf-8")
    db = json.loads((sdir / "final_db.json").read_text(encoding="utf-8"))
    db["orders"] = {}
    (sdir / "final_db.json").write_text(json.dumps(db), encoding="utf-8")
    assert cli.main(["rescore", str(out)]) in (0, 1)
    capsys.readouterr()
    assert cli.main(["diff", str(out), ONE]) == 0
    text = capsys.readouterr().out
    assert "actions: none" in text  # no write went through...
    assert "refused tool calls (2):" in text  # ...but what was tried, and why it failed, is said
    assert "  1. cancel_order(" in text and "-> invalid_arguments: arguments are not JSON" in text
    assert '  2. cancel_order(order_id="O-102") -> invalid_state: order O-102 has shipped' in text
    assert cli.main(["diff", str(out), ONE, "--json"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)
    assert [r["error"] for r in entry["refused"]] == [
        "invalid_arguments: arguments are not JSON",
        "invalid_state: order O-102 has shipped",
    ]


def test_diff_refused_calls_leave_out_successes_and_the_user_side() -> None:
    calls = [
        {"name": "a", "arguments": {}, "result": {"status": "success"}, "turn": 0, "side": "agent"},
        {
            "name": "b",
            "arguments": {},
            "result": {"status": "error", "message": "no"},
            "turn": 0,
            "side": "user",
        },
        {"name": "c", "arguments": {}, "result": {"status": "error"}, "turn": 1, "side": "agent"},
    ]
    assert refused_calls(calls) == [{"name": "c", "arguments": {}, "turn": 1, "error": "refused"}]
    assert refused_calls({"not": "a list"}) == []
