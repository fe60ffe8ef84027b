"""The caller-fidelity checks one by one on hand-made sessions of the mock shop (no run): what
each finds and what it allows, the registry, and the note a replay run prints."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from engine.core.fidelity import FidelityRegistry, fidelity_check
from engine.core.model import Scenario, SessionResult
from engine.domains.registry import plugins
from engine.scoring.fidelity import BUILTIN, caller_note, check_fidelity
from engine.spec.loader import load_domain
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR


@pytest.fixture(scope="module")
def cancel() -> Scenario:
    loaded = load_domain(MOCK_SPEC_DIR, MOCK_DATA_ROOT, plugins=plugins())
    return next(s for s in loaded.scenarios if s.name == "mock__cancel_order")


def _session(*turns: tuple[str, str], hangup: bool = False, user: str = "openai:caller") -> SessionResult:
    events: list[dict[str, Any]] = [{"role": r, "type": "utterance", "content": t} for r, t in turns]
    if hangup:
        events.append({"role": "user", "type": "hangup", "content": None})
    return SessionResult(
        "mock__cancel_order", 1, "user_hangup" if hangup else "exit", transcript=events, user_backend=user
    )


AGENT_ASKS = ("agent", "Sure. What is the order id?")


@pytest.mark.parametrize(
    "said",
    ["It is O-100.", "It's O, one, zero, zero.", "o-100", "The order total was 42.50 dollars, wasn't it?"],
)
def test_facts_from_the_persona_the_gold_or_the_agent_are_allowed(cancel: Scenario, said: str) -> None:
    session = _session(("user", "Hi."), ("agent", "Order O-100 is 42.50 dollars."), ("user", said))
    fidelity = check_fidelity(cancel, session)
    assert fidelity.checks["persona_facts"] is True and fidelity.findings == ()


@pytest.mark.parametrize(
    ("said", "named"),
    [
        ("It is O-107.", "O-107"),
        ("It's O, one, zero, seven.", "O107"),
        ("I paid 99 dollars.", "99"),
        ("I ordered it on March 3rd.", "march 3"),
        ("My name is Bob Stone.", "Bob Stone"),
    ],
)
def test_a_fact_the_persona_does_not_hold_is_a_finding(cancel: Scenario, said: str, named: str) -> None:
    fidelity = check_fidelity(cancel, _session(("user", "Hi."), AGENT_ASKS, ("user", said)))
    assert fidelity.checks["persona_facts"] is False
    (finding,) = fidelity.findings
    assert finding.check == "persona_facts" and finding.turn == 1 and named in finding.detail
    assert finding.line().startswith("caller turn 2: says ")


def test_a_hang_up_is_early_only_before_the_goal_and_the_gold_turns(cancel: Scenario) -> None:
    early = _session(("user", "Hi."), AGENT_ASKS, ("user", "Bye."), hangup=True)
    assert check_fidelity(cancel, early).checks["early_hangup"] is False
    assert check_fidelity(cancel, early, goal_met=True).checks["early_hangup"] is True  # the goal reached
    late = _session(*[("user", "Hi."), AGENT_ASKS] * 2, ("user", "Yes."), ("user", "Bye."), hangup=True)
    assert check_fidelity(cancel, late).checks["early_hangup"] is True  # the gold's four caller turns


def test_a_request_and_agent_speak(cancel: Scenario) -> None:
    asks = check_fidelity(cancel, _session(("user", "Could you issue me some credit?")))
    assert asks.checks["invented_request"] is False and "issue" in asks.findings[0].detail
    keeps = check_fidelity(cancel, _session(("user", "Please cancel it.")))  # its goal says cancel
    assert keeps.checks["invented_request"] is True
    for line in ("How can I help you today?", "Agent: sure.", 'cancel_order({"order_id": "O-100"})'):
        assert check_fidelity(cancel, _session(("user", line))).checks["agent_speak"] is False, line


def test_the_replay_caller_is_checked_but_not_enforced(cancel: Scenario) -> None:
    fidelity = check_fidelity(cancel, _session(("user", "It is O-107."), user="replay"))
    assert fidelity.findings and not fidelity.enforced
    assert check_fidelity(cancel, _session()).checks == dict.fromkeys(
        ("persona_facts", "early_hangup", "invented_request", "agent_speak")
    )  # nothing said: nothing to check


def test_a_registered_check_runs_and_one_that_raises_is_not_applicable(cancel: Scenario) -> None:
    @fidelity_check("polite")
    def polite(inp: Any) -> Any:
        """Raises."""
        raise RuntimeError("bug")

    registry = FidelityRegistry((*BUILTIN, polite))
    fidelity = check_fidelity(cancel, _session(("user", "Hi.")), registry=registry)
    assert fidelity.checks["polite"] is None and list(fidelity.checks)[-1] == "polite"
    with pytest.raises(ValueError, match="registered twice"):
        FidelityRegistry((*BUILTIN, BUILTIN[0]))


def test_the_caller_note(cancel: Scenario) -> None:
    mute = replace(cancel, gold_trace=None)
    assert "cannot test the agent on 1 of 2" in (caller_note("replay", [mute, cancel]) or "")
    assert "override the caller's persona" in (
        caller_note("replay", [replace(cancel, user_override=True)]) or ""
    )
    assert "conformance check" in (caller_note("replay", [cancel]) or "")
    assert caller_note("openai:m", [mute]) is None
