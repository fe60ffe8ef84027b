"""Per-role model settings (issue 26 item 4): the agent and the user simulator on two different
scripted OpenAI-compatible endpoints, each with its own key and request args; every reply's
finish_reason recorded, a cut-off reply shown by diff; the args parsed with one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli import main
from engine.core.model_args import parse_model_args, request_kwargs
from engine.report_html.transcript import Budget, chat_entries
from engine.results.diff import diff_run, render_text
from engine.run.runner import run
from engine.util.errors import UsageError
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR
from tests.runtime_helpers import ScriptedOpenAI, Step, completion, run_options

SCENARIO = "mock__cancel_order"


def cut_off(body: dict) -> dict:
    """``body`` (a completion) as a reply stopped at the token limit."""
    body["choices"][0]["finish_reason"] = "length"
    return body


def agent_steps() -> list[Step]:
    return [
        Step(cut_off(completion("How can I he"))),
        Step(completion("Goodbye.", [("c1", "end_conversation", "{}")])),
    ]


async def test_agent_and_user_reach_their_own_endpoints_with_their_own_keys_and_args(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_KEY", "sk-agent")
    monkeypatch.setenv("USER_KEY", "sk-user")
    with ScriptedOpenAI(agent_steps()) as agent, ScriptedOpenAI([Step(completion("Cancel it."))]) as user:
        opts = run_options(
            MOCK_SPEC_DIR,
            MOCK_DATA_ROOT,
            scenarios=(SCENARIO,),
            agent="openai:agent-model",
            user="openai:user-model",
            base_url=agent.base_url,
            api_key_env="AGENT_KEY",
            user_base_url=user.base_url,
            user_api_key_env="USER_KEY",
            agent_args={"temperature": 0.2, "seed": 5, "top_k": 40},
            user_args={"max_tokens": 64, "reasoning_effort": "low"},
            output_dir=tmp_path,
            progress=False,
        )
        report = await run(opts)
    [(result, _)] = report.results()
    assert result.stop_reason == "exit", result.error
    assert agent.requests and user.requests
    for _, body in agent.requests:
        assert body["model"] == "agent-model"
        assert (body["temperature"], body["seed"], body["top_k"]) == (0.2, 5, 40)  # top_k: extra body
        assert "max_tokens" not in body and "reasoning_effort" not in body
    for _, body in user.requests:
        assert body["model"] == "user-model"
        assert (body["max_tokens"], body["reasoning_effort"]) == (64, "low")
        assert "temperature" not in body and "seed" not in body
    assert set(agent.auth) == {"Bearer sk-agent"} and set(user.auth) == {"Bearer sk-user"}
    # run.json records both roles' endpoints and args, and never a key
    text = (tmp_path / "run.json").read_text()
    settings = json.loads(text)["settings"]
    assert settings["base_url"] == agent.base_url and settings["user_base_url"] == user.base_url
    assert settings["user_api_key_env"] == "USER_KEY"
    assert settings["agent_args"] == {"seed": 5, "temperature": 0.2, "top_k": 40}
    assert settings["user_args"] == {"max_tokens": 64, "reasoning_effort": "low"}
    assert "sk-agent" not in text and "sk-user" not in text
    # every reply's finish_reason is in the transcript; the cut-off one is marked and diff says so
    entries = [
        json.loads(line) for line in (tmp_path / SCENARIO / "transcript.jsonl").read_text().splitlines()
    ]
    finishes = [(e["role"], e["content"]) for e in entries if e["type"] == "finish"]
    assert finishes[0] == ("agent", {"turn": 0, "reasons": ["length"], "cut_off": True})
    # the user side opened with the scenario's first words (no request): its turn 1 asked its model
    assert ("user", {"turn": 1, "reasons": ["stop"], "cut_off": False}) in finishes
    assert finishes[-1] == ("agent", {"turn": 1, "reasons": ["tool_calls"], "cut_off": False})
    [d] = diff_run(tmp_path)
    assert d.cut_off == ["agent turn 0: 1 of 1 model reply cut off at the token limit (finish_reason length)"]
    assert "cut-off replies (1;" in render_text([d], tmp_path)
    # and the HTML report's conversation marks it
    chat = chat_entries(tmp_path / SCENARIO / "transcript.jsonl", Budget(50_000))
    notes = [e["x"] for e in chat if e["k"] == "note" and "cut off" in e["x"]]
    assert notes == ["agent reply cut off at the token limit (finish_reason length)"]


def test_args_split_into_api_fields_and_extra_body() -> None:
    args = parse_model_args(
        '{"temperature": 0, "seed": 1, "tool_choice": "auto", "min_p": 0.1}', "--agent-args"
    )
    assert request_kwargs(args) == {
        "seed": 1,
        "temperature": 0,
        "tool_choice": "auto",
        "extra_body": {"min_p": 0.1},
    }
    assert parse_model_args(None, "--agent-args") == {} == parse_model_args(" ", "--user-args")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("{temperature: 0}", "--agent-args: not JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"messages": []}', "'messages' is set by evalctl itself"),
        ('{"seed": 1.5}', "'seed' must be an integer"),
        ('{"temperature": "hot"}', "'temperature' must be a number"),
    ],
)
def test_bad_args_are_one_line(text: str, says: str) -> None:
    with pytest.raises(UsageError, match=says):
        parse_model_args(text, "--agent-args")


def test_bad_args_on_the_command_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", str(MOCK_SPEC_DIR), "--user-args", '{"stream": true}'])
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip() == "evalctl: --user-args: 'stream' is set by evalctl itself and cannot be given"


async def test_a_per_attempt_seed_reaches_the_user_sides_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    """A session run with ``seeds={"user": 11}`` (a regenerated caller's new seed) sends seed 11
    in the user side's requests, over the seed of --user-args; the agent's args are untouched."""
    from engine.domains.registry import plugins
    from engine.session.backends.openai_chat import OpenAIFactory
    from engine.session.conversation import SessionLimits, run_session
    from engine.session.setup import session_setup
    from engine.session.sides import builtin_side
    from engine.spec.loader import load_domain

    monkeypatch.setenv("EVALCTL_TEST_KEY", "sk-test")
    scenario = load_domain(MOCK_SPEC_DIR, MOCK_DATA_ROOT, plugins=plugins()).scenario(SCENARIO)
    with ScriptedOpenAI(agent_steps()) as agent, ScriptedOpenAI([Step(completion("Cancel it."))]) as user:
        factories = {
            "agent": OpenAIFactory("a", agent.base_url, "EVALCTL_TEST_KEY", args={"seed": 1}),
            "user": OpenAIFactory("u", user.base_url, "EVALCTL_TEST_KEY", args={"seed": 3, "top_k": 2}),
        }
        async with (
            builtin_side(factories["agent"], "agent") as a,
            builtin_side(factories["user"], "user") as u,
        ):
            limits = SessionLimits(max_duration_s=10, turn_timeout_s=5)
            await run_session(scenario, session_setup(scenario), a, u, limits, seeds={"user": 11})
        for factory in factories.values():
            await factory.aclose()
    assert {body["seed"] for _, body in user.requests} == {11}
    assert {body["top_k"] for _, body in user.requests} == {2}
    assert {body["seed"] for _, body in agent.requests} == {1}


def test_rescore_takes_judge_args_checked_as_run_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["rescore", str(tmp_path), "--judge-args", '{"n": 2}'])
    assert code == 2
    assert (
        capsys.readouterr().err.strip()
        == "evalctl: --judge-args: 'n' is set by evalctl itself and cannot be given"
    )


@pytest.mark.parametrize(
    ("flag", "text", "says"),
    [
        ("--agent-args", "[" * 60_000, "nested too deeply"),
        ("--user-args", '{"a": ' * 300 + "1" + "}" * 300, "nested too deeply (over 256 levels)"),
        ("--judge-args", '{"seed": ' + "9" * 5_000 + "}", "an integer too long"),
    ],
)
def test_deep_or_huge_args_json_is_one_line_exit_2(
    flag: str, text: str, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", str(MOCK_SPEC_DIR), flag, text])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.startswith(f"evalctl: {flag}: not JSON (") and says in err
    assert "\n" not in err and "Traceback" not in err


def test_args_for_a_side_without_model_requests_warn_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["run", str(MOCK_SPEC_DIR), "--data-root", str(MOCK_DATA_ROOT), "--scenarios", SCENARIO]
    args += ["--output-dir", str(tmp_path / "run"), "--no-progress", "--user", "noop"]
    code = main([*args, "--agent-args", '{"temperature": 0}', "--user-args", '{"seed": 1}'])
    err = capsys.readouterr().err
    assert code in (0, 1)  # a verdict: the args changed nothing
    assert err.count("evalctl: --agent-args: ignored: the agent side (replay) sends no model request\n") == 1
    assert err.count("evalctl: --user-args: ignored: the user side (noop) sends no model request\n") == 1


def test_judge_args_without_a_judge_warn_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["run", str(MOCK_SPEC_DIR), "--data-root", str(MOCK_DATA_ROOT), "--scenarios", SCENARIO]
    args += ["--output-dir", str(tmp_path / "run"), "--no-progress", "--judge-args", '{"temperature": 0}']
    code = main(args)
    err = capsys.readouterr().err
    assert code in (0, 1)
    assert err.count("evalctl: --judge-args: ignored: no judge runs without --judge-model\n") == 1
