"""One scenario of each tau2 domain end to end with ``openai:`` sides on a scripted OpenAI-compatible
server on loopback (the real client, runner, protocol and artifacts): the agent model is shown tau2's
bare tool texts (``tool.result.text``), the user model's ``###STOP###`` ends the call, the agent's
closing end_conversation makes it a clean exit, and the DB, COMMUNICATE and stop reason are scored.
The user-side stop tokens are also checked for the reasons a stop reason names."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine.core.render import render_user_prompt
from engine.domains.registry import plugins
from engine.run import runner
from engine.session.backends import user_stop
from engine.session.backends.openai_chat import OpenAIFactory
from engine.spec.loader import LoadedDomain, load_domain
from tests.conftest import REPO
from tests.runtime_helpers import (
    ScriptedOpenAI,
    Step,
    completion,
    run_options,
    say,
    scripted_factory,
    session_between,
)

#: (domain, task): airline 14 cancels and books (COMMUNICATE values 327, 1000, 1786); retail 38
#: starts with a gold lookup that fails in tau2 too, then cancels an order.
CASES = [("airline", "14"), ("retail", "38")]
THANKS = "Thanks, that is all I needed."


@pytest.fixture(scope="module")
def retail(data_root: Path) -> LoadedDomain:
    return load_domain(REPO / "specs" / "tau2_retail", data_root, plugins=plugins())


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALCTL_TEST_KEY", "sk-test")


def _script(gold: list[dict[str, Any]], closing_words: str) -> list[Step]:
    """The requests of one session in order: the agent greets; the user asks; the agent makes the
    gold calls one per request, then speaks; the user thanks it and stops; the agent hangs up."""
    steps = [
        Step(completion("Hi! How can I help you today?")),
        Step(completion("I need help with my booking.")),
    ]
    for i, action in enumerate(gold):
        steps.append(Step(completion(None, [(f"call_{i}", action["name"], json.dumps(action["arguments"]))])))
    steps.append(Step(completion(closing_words)))
    steps.append(Step(completion(f"{THANKS} ###STOP###")))
    steps.append(Step(completion("Goodbye!", [("call_end", "end_conversation", "{}")])))
    return steps


@pytest.mark.parametrize(("name", "task"), CASES)
async def test_an_openai_agent_and_user_run_a_task_end_to_end(
    name: str, task: str, data_root: Path, tau2_oracle, tmp_path: Path
) -> None:
    oracle = tau2_oracle[name][task]
    spec = REPO / "specs" / f"tau2_{name}"
    scenario = load_domain(spec, data_root, plugins=plugins()).scenario(f"tau2_{name}__{task}")
    gold = scenario.record["evaluation_criteria"]["actions"]
    words = "All done: " + ", ".join(scenario.record["evaluation_criteria"]["communicate_info"] or ["ok"])
    with ScriptedOpenAI(_script(gold, words)) as server:
        opts = run_options(
            spec,
            data_root,
            scenarios=(scenario.name,),
            agent="openai:agent-model",
            user="openai:user-model",
            base_url=server.base_url,
            api_key_env="EVALCTL_TEST_KEY",
            output_dir=tmp_path / "run",
            quiet=True,
            progress=False,
        )
        report = await runner.run(opts)
    bodies = [body for _, body in server.requests]
    assert len(bodies) == len(gold) + 5
    ((result, metrics),) = list(report.results())
    assert result.stop_reason == "exit" and metrics.is_successful is True, metrics.success_breakdown
    assert metrics.signals.db_state_match is True and metrics.db_hash == oracle["gold_end_state_tau2_hash"]
    assert metrics.signals.diagnostics["communicate_info"] is True
    # the agent model saw tau2's bare texts as tool messages: the oracle's, errors included
    agent_final = next(b for b in reversed(bodies) if b["model"] == "agent-model")
    tool_messages = [m["content"] for m in agent_final["messages"] if m["role"] == "tool"]
    assert tool_messages[: len(gold)] == [r["content"] for r in oracle["gold_responses"]]
    assert agent_final["messages"][-1] == {"role": "user", "content": THANKS}  # the token never reaches it
    # the user model got the rendered tau2 prompt and the agent's greeting first
    user_first = next(b for b in bodies if b["model"] == "user-model")
    assert user_first["messages"][0] == {"role": "system", "content": render_user_prompt(scenario)}
    assert user_first["messages"][1] == {"role": "user", "content": "Hi! How can I help you today?"}
    assert {"role": "user", "type": "hangup", "content": {"reason": "stop"}}.items() <= next(
        e for e in result.transcript if e["type"] == "hangup"
    ).items()


@pytest.mark.parametrize(
    ("said", "stop"),
    [
        ("I'm being transferred, thanks. ###TRANSFER###", "user_transfer"),
        ("###OUT-OF-SCOPE###", "user_out_of_scope"),
        ("Great, bye! ###STOP###", "user_stop"),
    ],
)
async def test_a_user_stop_token_ends_the_call_with_its_reason(said: str, stop: str, retail) -> None:
    """The token ends the call from the user side; an agent that does not hang up in its closing
    turn leaves the stop reason naming the token (not a clean exit)."""
    scenario = retail.scenario("tau2_retail__0")
    agent = scripted_factory(lambda turn: say("Hello, how can I help?" if turn.index == 0 else "Okay."))
    with ScriptedOpenAI([Step(completion("Hi, one question.")), Step(completion(said))]) as server:
        user = OpenAIFactory("user-model", base_url=server.base_url, api_key_env="EVALCTL_TEST_KEY")
        result = await session_between(scenario, agent, user)
    assert result.stop_reason == stop and not result.clean_exit
    assert result.user_turns == 2 and result.agent_turns == 3  # greeting, answer, closing turn
    spoken = [e["content"] for e in result.transcript if e["role"] == "user" and e["type"] == "utterance"]
    assert spoken[-1] == user_stop(said)[0] and "###" not in spoken[-1]


def test_user_stop_finds_the_first_token_anywhere() -> None:
    assert user_stop("Thanks! ###STOP###") == ("Thanks!", "stop")
    assert user_stop("###TRANSFER### ok ###STOP###") == ("ok", "transfer")
    assert user_stop("no token # here") == ("no token # here", None)
