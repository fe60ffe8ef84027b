"""Issue #26 §3: every FAIL names its most likely cause with the evidence. Faults planted in a
scripted agent (a wrong argument, a missing write, an extra write, a refused policy step) are the
agent's, never the user simulator's; ``diff`` leads with the cause, the summary counts failures
by cause and ``rescore`` computes it again. Real runs of the mock shop: a scripted
OpenAI-compatible agent on loopback against the replay caller."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cli import main
from engine.core.model import SessionResult
from engine.core.records.fidelity import Attribution, Finding, UserFidelity
from engine.domains.registry import plugins
from engine.scoring.attribution import attribute
from engine.spec.loader import load_domain
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR
from tests.runtime_helpers import ScriptedOpenAI, Step, completion

CANCEL = "mock__cancel_order"
GOOD_CANCEL = ("cancel_order", '{"order_id": "O-100"}')
#: What the planted agent does when the caller agrees to cancel ("Yes please."): its tool calls
#: (None: the gold's) and its words.
FAULTS: dict[str, tuple[list[tuple[str, str]], str, str]] = {
    "wrong_argument": (
        [("cancel_order", '{"order_id": "O-101"}')],
        "Done.",
        'wrong argument: cancel_order(order_id) is "O-101"',
    ),
    "missing_write": ([], "Done, it is cancelled. Anything else?", "missing write: the agent never called"),
    "extra_write": (
        [GOOD_CANCEL, ("issue_credit", '{"customer_id": "C-1", "credit_amount": 5, "reason": "sorry"}')],
        "Done, and I added 5 dollars of credit.",
        "extra write: issue_credit",
    ),
    "refused_policy_step": ([], "I cannot cancel orders, sorry.", "missing write: the agent never called"),
}


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "local")


def _agent(fault: str) -> ScriptedOpenAI:
    calls, words, _ = FAULTS[fault]

    def route(body: dict[str, Any]) -> Step:
        messages = body["messages"]
        heard = sum(1 for m in messages if m["role"] == "user")
        after_tools = messages[-1]["role"] == "tool"
        if heard == 1:
            return Step(completion("Sure. What is the order id?"))
        if heard == 2:
            if not after_tools:
                return Step(completion(None, [("g1", "get_order", '{"order_id": "O-100"}')]))
            return Step(
                completion("I found order O-100 for 42.50 dollars, not shipped yet. Shall I cancel it?")
            )
        if heard == 3 and calls and not after_tools:
            return Step(completion(None, [(f"w{i}", n, a) for i, (n, a) in enumerate(calls)]))
        if heard == 3:
            return Step(completion(words))
        return Step(completion("Goodbye!", [("e1", "end_conversation", "{}")]))

    return ScriptedOpenAI([], route=route)


def _run(tmp_path: Path, fault: str) -> Path:
    out = tmp_path / "run"
    with _agent(fault) as server:
        main(
            [
                "run",
                str(MOCK_SPEC_DIR),
                "--data-root",
                str(MOCK_DATA_ROOT),
                "--scenarios",
                CANCEL,
                "--agent",
                "openai:agent",
                "--base-url",
                server.base_url,
                "--output-dir",
                str(out),
                "--no-progress",
                "--workers",
                "1",
            ]
        )
    return out


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_fault_planted_in_the_agent_is_the_agents(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fault: str
) -> None:
    out = _run(tmp_path, fault)
    m = json.loads((out / CANCEL / "metrics.json").read_text())
    assert m["is_successful"] is False and m["error_cause"] is None
    assert m["user_fidelity"]["findings"] == [] and m["user_fidelity"]["enforced"] is False
    attribution = m["attribution"]
    assert attribution["cause"] == "agent", attribution
    assert attribution["evidence"].startswith(FAULTS[fault][2]), attribution
    if fault in ("wrong_argument", "extra_write"):  # the call itself is the evidence
        event = json.loads((out / CANCEL / "transcript.jsonl").read_text().splitlines()[attribution["turn"]])
        assert event["type"] == "tool_call" and event["role"] == "agent"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["attribution"] == {
        "agent": 1,
        "user_simulator": 0,
        "speech": 0,
        "data": 0,
        "infrastructure": 0,
    }
    assert summary["failed"][0]["attribution"]["cause"] == "agent"
    assert "Failures by cause: agent 1" in (out / "all_summary.txt").read_text()
    capsys.readouterr()
    assert main(["diff", str(out)]) == 0
    shown = capsys.readouterr().out.splitlines()
    assert shown[0] == f"== {CANCEL}: FAIL" and shown[1].startswith(f"cause: agent: {FAULTS[fault][2]}")
    # rescore computes it again from the stored session
    (out / CANCEL / "metrics.json").unlink()
    assert main(["rescore", str(out)]) in (0, 1)
    again = json.loads((out / CANCEL / "metrics.json").read_text())
    assert again["attribution"] == attribution


def test_a_caller_finding_before_the_agents_departure_is_the_user_simulators() -> None:
    loaded = load_domain(MOCK_SPEC_DIR, MOCK_DATA_ROOT, plugins=plugins())
    scenario = next(s for s in loaded.scenarios if s.name == CANCEL)
    result = SessionResult(
        CANCEL,
        1,
        "exit",
        transcript=[
            {"role": "user", "type": "utterance", "content": "Hi, I want to cancel an order."},
            {"role": "agent", "type": "utterance", "content": "Sure. What is the order id?"},
            {"role": "user", "type": "utterance", "content": "It is O-107."},
            {
                "role": "agent",
                "type": "tool_call",
                "content": {"name": "cancel_order", "arguments": {"order_id": "O-107"}},
            },
        ],
    )
    finding = Finding("persona_facts", 1, "says O-107: not in its persona", "It is O-107.")
    fidelity = UserFidelity({"persona_facts": False}, (finding,), 2, enforced=False)
    got = attribute(scenario, result, ("db_state_match",), False, fidelity)
    assert got == Attribution(
        "user_simulator", "caller turn 2: says O-107: not in its persona (persona_facts)", 2
    )
    # the same wrong call with a caller that held is the agent's, at the call
    held = UserFidelity({"persona_facts": True}, (), 2, enforced=False)
    got = attribute(scenario, result, ("db_state_match",), False, held)
    assert got.cause == "agent" and got.turn == 3 and "O-107" in got.evidence
    # an inconsistent gold is the data's; a voice session's near miss is speech
    assert attribute(scenario, result, (), False, held, gold_ok=False).cause == "data"
    assert attribute(scenario, result, (), False, held, voice_run=True).cause == "speech"


def test_a_session_ended_by_the_agents_own_error_is_attributed_to_that_error() -> None:
    """Found by a new-user pass: an agent that raised led ``diff`` with "missing write: the agent
    never called cancel_order", a consequence, instead of the exception that ended the session."""
    loaded = load_domain(MOCK_SPEC_DIR, MOCK_DATA_ROOT, plugins=plugins())
    scenario = next(s for s in loaded.scenarios if s.name == CANCEL)
    error = (
        "agent side reported backend_error: the agent failed: ValueError: boom (raised at bot.py:3 in turn)"
    )
    result = SessionResult(CANCEL, 1, "agent_error", error=error)
    got = attribute(scenario, result, ("db_state_match", "clean_exit"), True, None)
    assert got == Attribution("agent", f"the agent's own error ended the session: {error}")
    missing = attribute(scenario, SessionResult(CANCEL, 1, "exit"), ("db_state_match",), False, None)
    assert missing.evidence.startswith("missing write: the agent never called cancel_order")


def test_an_agents_protocol_breach_is_the_agents_not_infrastructure() -> None:
    """Found by a breaker: an external agent's NaN frame (stop reason ``error``, blamed on no
    one: its FAIL, 0 errors) was counted under "Failures by cause: infrastructure" and led
    ``diff`` with "cause: infrastructure". An ``error`` blamed on infrastructure stays its own."""
    loaded = load_domain(MOCK_SPEC_DIR, MOCK_DATA_ROOT, plugins=plugins())
    scenario = next(s for s in loaded.scenarios if s.name == CANCEL)
    error = "agent side broke the protocol: bad_json: frame is not JSON: NaN is not a JSON number"
    breach = attribute(scenario, SessionResult(CANCEL, 1, "error", error=error), ("clean_exit",), True, None)
    assert breach == Attribution("agent", f"the agent's own error ended the session: {error}")
    lost = SessionResult(CANCEL, 1, "error", error="connection lost", error_source="transport")
    assert attribute(scenario, lost, ("clean_exit",), True, None).cause == "infrastructure"
