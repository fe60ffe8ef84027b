"""Endpoints fail fast and clearly (issue 30 items 6 and 8): the request budget fits the turn
timeout so the endpoint's own "did not answer" message appears; a run whose endpoint keeps
failing the same way stops after --max-endpoint-failures sessions; the silent-side message names
the endpoint; a resume accepts changed infrastructure settings and refuses scoring-relevant ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.run.runner import run
from engine.session.backends.budget import backoff_s, fit_to_turn
from engine.session.settings import resumed_options, settings_of
from engine.util.errors import UsageError
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR
from tests.runtime_helpers import ScriptedOpenAI, Step, completion, run_options

SCENARIOS = ("mock__cancel_order", "mock__shipped_refusal", "mock__late_delivery_credit")


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALCTL_TEST_KEY", "sk-test")


def test_the_default_request_budget_fits_the_default_turn_timeout() -> None:
    # 5 tries of 60 s could never end inside a 300 s turn: 4 tries of 60 s and their backoff do
    assert fit_to_turn(60.0, 4, 300.0) == (60.0, 3)
    assert 4 * 60 + backoff_s(3) <= 0.9 * 300
    assert fit_to_turn(60.0, 4, None) == (60.0, 4)
    assert fit_to_turn(120.0, 4, 60.0) == (54.0, 0)  # a request longer than the turn: cut below it
    assert fit_to_turn(5.0, 2, 1000.0) == (5.0, 2)


async def test_a_runs_openai_sides_give_up_before_the_turn_timeout() -> None:
    """The sides a run builds (``side_for``) use the fitted budget, so a hung endpoint is named
    by the side ("did not answer in 54 s, 1 try", see test_hang_hits_the_timeout for the message)
    before the engine's turn timeout says only "agent side sent nothing"."""
    from engine.session.backends.registry import parse_backend_spec
    from engine.session.setup import side_for

    opts = run_options(
        MOCK_SPEC_DIR,
        agent="openai:m",
        base_url="http://127.0.0.1:9/v1",
        api_key_env="EVALCTL_TEST_KEY",
        turn_timeout_s=60.0,
        request_timeout_s=120.0,
        max_retries=4,
    )
    factory = side_for(parse_backend_spec("openai:m"), opts, {}, "agent")
    try:
        assert factory.client.timeout == 54.0 and factory.client.max_retries == 0
        assert factory.client.timeout < opts.turn_timeout_s
    finally:
        await factory.aclose()


async def test_identical_endpoint_failures_stop_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with ScriptedOpenAI([Step(status=500)]) as server:
        opts = run_options(
            MOCK_SPEC_DIR,
            MOCK_DATA_ROOT,
            scenarios=SCENARIOS,
            agent="openai:down-model",
            base_url=server.base_url,
            api_key_env="EVALCTL_TEST_KEY",
            max_retries=0,
            concurrency=1,
            trials=2,
            max_endpoint_failures=2,
            output_dir=tmp_path,
            progress=False,
        )
        report = await run(opts)
    assert len(server.requests) == 2  # not 6: the run stopped after two failures in a row
    results = [r for r, _ in report.results()]
    assert len(results) == 6 and all(r.stop_reason == "error" for r in results)
    assert all(r.error_source == "agent_model" for r in results)
    not_run = [r for r in results if (r.error or "").startswith("not run: 2 sessions in a row failed")]
    assert len(not_run) == 4
    assert f"openai:down-model at {server.base_url}/: HTTP 500" in (not_run[0].error or "")
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["errors"] == 6  # counted, and the summary written
    err = capsys.readouterr().err
    assert err.count("evalctl: stopping the run: 2 sessions in a row failed") == 1


async def test_different_failures_do_not_stop_the_run(tmp_path: Path) -> None:
    steps = [Step(status=500), Step(status=503), Step(status=500)]
    with ScriptedOpenAI(steps) as server:
        opts = run_options(
            MOCK_SPEC_DIR,
            MOCK_DATA_ROOT,
            scenarios=SCENARIOS,
            agent="openai:down-model",
            base_url=server.base_url,
            api_key_env="EVALCTL_TEST_KEY",
            max_retries=0,
            concurrency=1,
            max_endpoint_failures=2,
            output_dir=tmp_path,
            progress=False,
        )
        await run(opts)
    assert len(server.requests) == 3  # 500, 503, 500: never two alike in a row


async def test_a_silent_side_names_its_endpoint(tmp_path: Path) -> None:
    from engine.domains.registry import plugins
    from engine.session.backends.openai_chat import OpenAIFactory
    from engine.session.backends.replay import ReplayFactory
    from engine.session.conversation import SessionLimits
    from engine.spec.loader import load_domain
    from tests.runtime_helpers import session_between

    loaded = load_domain(MOCK_SPEC_DIR, MOCK_DATA_ROOT, plugins=plugins())
    scenario = loaded.scenario(SCENARIOS[0])
    with ScriptedOpenAI([Step(completion("too late"), delay_s=3.0)]) as server:
        factory = OpenAIFactory("m", base_url=server.base_url, api_key_env="EVALCTL_TEST_KEY", max_retries=0)
        limits = SessionLimits(max_duration_s=10, turn_timeout_s=0.3)
        result = await session_between(scenario, factory, ReplayFactory({scenario.name: scenario}), limits)
    assert result.error == f"agent side sent nothing for 0.3 s (waiting on openai:m at {server.base_url}/)"


def _recorded(**changes: object) -> dict:
    return settings_of(run_options(MOCK_SPEC_DIR, agent="openai:m", agent_args={"seed": 1}, **changes))


@pytest.mark.parametrize(
    ("name", "value"),
    [("request_timeout_s", 5.0), ("max_retries", 0), ("turn_timeout_s", 30.0), ("user_api_key_env", "K")],
)
def test_resume_accepts_changed_infrastructure_settings(name: str, value: object, tmp_path: Path) -> None:
    opts = run_options(
        MOCK_SPEC_DIR, agent="openai:m", agent_args={"seed": 1}, explicit=frozenset({name}), **{name: value}
    )
    resumed = resumed_options(opts, _recorded(), tmp_path)
    assert getattr(resumed, name) == value


@pytest.mark.parametrize(
    ("name", "value", "flag"),
    [
        ("agent_args", {"seed": 2}, "--agent-args"),
        ("user_base_url", "http://other/v1", "--user-base-url"),
        ("base_url", "http://other/v1", "--base-url"),
        ("agent", "openai:n", "--agent"),
    ],
)
def test_resume_refuses_changed_scoring_relevant_settings(
    name: str, value: object, flag: str, tmp_path: Path
) -> None:
    changes = {"agent": "openai:m", "agent_args": {"seed": 1}, name: value}
    opts = run_options(MOCK_SPEC_DIR, explicit=frozenset({name}), **changes)
    with pytest.raises(UsageError, match=f"made with {flag} "):
        resumed_options(opts, _recorded(), tmp_path)
