"""Issue #9 §4: the judge's verdict is the object its template asks for, requested as a JSON-schema
response format and read against that schema; a request parameter the endpoint refuses is dropped
once and recorded; ``evalctl validate`` renders every scenario's judge prompt."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from cli import main
from engine.core.options import ScoringOptions
from engine.scoring.judge import parse_judge_reply, run_judge
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR
from tests.mock_domain.eva_fixtures import session
from tests.mock_domain.judge_server import scripted_judge

VERDICT = {"score": 0.1, "reason": "wrong flight", "nl_assertion_verdicts": []}


@pytest.fixture(scope="module")
def sc() -> Any:
    from engine.domains.registry import plugins
    from engine.spec.loader import load_domain

    return replace(
        load_domain(MOCK_SPEC_DIR, MOCK_DATA_ROOT, plugins=plugins()).scenario("mock__late_delivery_credit"),
        nl_assertions=(),
    )


def _opts(url: str) -> ScoringOptions:
    return ScoringOptions(judge_model="judge-1", judge_base_url=url, judge_retry_delay_s=0.0)


def test_an_object_quoted_in_the_reasoning_is_not_the_verdict() -> None:
    reply = (
        'A perfect call would earn {"score": 1.0}. Here the agent rebooked the wrong flight.\n'
        '{"score": 0.1, "reason": "wrong flight", "nl_assertion_verdicts": []}'
    )
    # before: the first object holding a score was taken: 1.0, a pass
    assert parse_judge_reply(reply, 0) == (0.1, "wrong flight", [])
    whole_first = '{"score": 0.3, "reason": "r", "nl_assertion_verdicts": []} and note {"score": 1.0}'
    assert parse_judge_reply(whole_first, 0)[0] == 0.3  # the whole object wins over a bare score
    with pytest.raises(ValueError, match=r"\$\.score: 1\.5 is greater than the maximum of 1"):
        parse_judge_reply('{"score": 1.5, "reason": "r", "nl_assertion_verdicts": []}', 0)


async def test_the_verdict_schema_is_the_requests_response_format(sc: Any) -> None:
    from engine.scoring.judge import VERDICT_SCHEMA

    with scripted_judge([VERDICT]) as (url, server):
        out = await run_judge(sc, session(sc, None), _opts(url))
    assert out.error is None and out.score == 0.1 and out.dropped_parameters == []
    (request,) = server.requests
    assert request["temperature"] == 0
    assert request["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "judge_verdict", "strict": True, "schema": VERDICT_SCHEMA},
    }


@pytest.mark.parametrize(
    ("parameter", "message"),
    [
        ("temperature", "Unsupported value: 'temperature' does not support 0 with this model."),
        ("response_format", "Invalid parameter: 'response_format' of type 'json_schema' is not supported."),
    ],
)
async def test_a_refused_parameter_is_dropped_once_and_recorded(
    sc: Any, parameter: str, message: str
) -> None:
    from engine.scoring.judge import Judge

    def endpoint(body: dict[str, Any]) -> Any:
        return (400, message) if parameter in body else VERDICT

    with scripted_judge([endpoint]) as (url, server):
        judge = Judge(_opts(url))
        try:
            first = await judge.ask(sc, session(sc, None))
            second = await judge.ask(sc, session(sc, None))
        finally:
            await judge.aclose()
    # before: the same request was retried as it was, three times, then recorded as a failure
    assert first.error is None and first.score == 0.1 and first.attempts == 1
    assert first.dropped_parameters == [parameter] and second.dropped_parameters == [parameter]
    assert [parameter in r for r in server.requests] == [True, False, False]  # the run does without it
    body = first.to_json()
    assert body["dropped_parameters"] == [parameter]


async def test_a_400_that_names_no_optional_parameter_is_a_judge_failure(sc: Any) -> None:
    with scripted_judge([(400, "Invalid 'messages': too long")]) as (url, server):
        out = await run_judge(sc, session(sc, None), replace(_opts(url), judge_retries=1))
    assert out.score is None and "400" in str(out.error) and len(server.requests) == 2
    assert out.dropped_parameters == []


def test_validate_renders_every_scenarios_judge_prompt(tmp_path: Path, capsys: Any) -> None:
    spec = tmp_path / "spec"
    shutil.copytree(MOCK_SPEC_DIR, spec)
    (spec / "judge.md.j2").write_text("Grade {{ scenario_name }} against {{ rubric }}.\n", encoding="utf-8")
    args = ["validate", str(spec), "--data-root", str(MOCK_DATA_ROOT), "--no-replay"]
    # before: validate passed, and every judged session of a run failed to render its prompt
    assert main(args) == 1
    lines = capsys.readouterr().out.splitlines()
    problems = [line for line in lines if "judge prompt" in line]
    assert len(problems) == 3
    assert problems[0] == f"{spec}/judge.md.j2:1: $: judge prompt: template error: 'rubric' is undefined " + (
        "[mock__cancel_order]"
    )
    (spec / "judge.md.j2").unlink()  # the repository's judge template then: it renders
    assert main(args) == 0
    assert "6 prompts and 3 judge prompts rendered" in capsys.readouterr().out


def test_the_schema_sent_is_strict_structured_output() -> None:
    from engine.scoring.judge import VERDICT_SCHEMA

    def walk(node: Any) -> None:
        if isinstance(node, dict) and node.get("type") == "object":
            assert node["additionalProperties"] is False and sorted(node["required"]) == sorted(
                node["properties"]
            )
        for child in node.values() if isinstance(node, dict) else node if isinstance(node, list) else []:
            walk(child)

    walk(VERDICT_SCHEMA)
    assert json.loads(json.dumps(VERDICT_SCHEMA)) == VERDICT_SCHEMA
