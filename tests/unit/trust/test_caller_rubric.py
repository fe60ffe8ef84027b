"""Issue #26 §1: with a judge, a judged rubric adds what text matching cannot decide about the
caller, each finding citing a caller turn. Real runs of the mock shop: the replay agent, a
scripted OpenAI-compatible caller and a scripted judge, each on its own loopback endpoint."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from cli import main
from engine.core.model import SessionResult
from engine.core.options import ScoringOptions
from engine.core.records.metrics import MetricsRecord
from engine.results.diff import caller_lines, explain
from engine.run.runner import run_cli
from engine.scoring.rubric import (
    RUBRIC_CHECKS,
    RUBRIC_FORMAT,
    numbered_turns,
    parse_rubric_reply,
    rubric_applies,
)
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR
from tests.runtime_helpers import ScriptedOpenAI, Step, completion, run_options
from tests.unit.trust.test_caller_fidelity import CALLERS, CANCEL, _caller

VERDICT = completion(json.dumps({"score": 1.0, "reason": "ok", "nl_assertion_verdicts": []}))


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "local")


def _rubric_requests(judge: ScriptedOpenAI) -> list[dict[str, Any]]:
    return [
        body
        for _, body in judge.requests
        if (body.get("response_format") or {}).get("json_schema", {}).get("name") == RUBRIC_FORMAT
    ]


def _caller_turn(prompt: str, words: str) -> int:
    """The number the rubric gave the caller turn saying ``words``."""
    found = re.search(rf"^\[(\d+)\] caller: {re.escape(words)}$", prompt, re.M)
    assert found is not None, prompt
    return int(found.group(1))


def _judge(answer: Any) -> ScriptedOpenAI:
    """A judge answering the verdict with a pass and the rubric with ``answer(prompt)`` (a reply
    text)."""

    def route(body: dict[str, Any]) -> Step:
        name = (body.get("response_format") or {}).get("json_schema", {}).get("name")
        if name != RUBRIC_FORMAT:
            return Step(VERDICT)
        return Step(completion(answer(body["messages"][0]["content"])))

    return ScriptedOpenAI([], route=route)


def _run(tmp_path: Path, caller: str, judge: ScriptedOpenAI | None, user: str = "openai:caller") -> Path:
    out = tmp_path / "run"
    seeds: list[Any] = []
    scoring = ScoringOptions()
    with _caller(CALLERS[caller], seeds) as server:
        if judge is not None:
            scoring = ScoringOptions(
                judge_model="judge", judge_base_url=judge.base_url, judge_retry_delay_s=0
            )
        opts = run_options(
            spec_dir=MOCK_SPEC_DIR,
            data_root=MOCK_DATA_ROOT,
            scenarios=(CANCEL,),
            user=user,
            base_url=server.base_url,
            output_dir=out,
            progress=False,
            quiet=True,
            scoring=scoring,
        )
        report = run_cli(opts)
    assert not report.scoring_errors
    return out


def _diff_lines(out: Path) -> list[str]:
    """What ``evalctl diff`` and the HTML report say about the caller of the run's session."""
    m = MetricsRecord.from_json(json.loads((out / CANCEL / "metrics.json").read_text()))
    return caller_lines(explain(out / CANCEL, m))


def _metrics(path: Path) -> dict[str, Any]:
    return json.loads((path / "metrics.json").read_text())


def test_a_judged_finding_makes_the_caller_broken_and_regenerates_it(tmp_path: Path) -> None:
    cited: list[int] = []
    prompts: list[str] = []

    def answer(prompt: str) -> str:
        prompts.append(prompt)
        cited.append(_caller_turn(prompt, "Yes please."))
        finding = {"check": "persona_adherence", "turn": cited[-1], "detail": "too eager for the persona"}
        return json.dumps({"findings": [finding]})

    out = tmp_path / "run"
    with _caller(CALLERS["behaves"], []) as caller, _judge(answer) as judge:
        code = main(
            [
                *("run", str(MOCK_SPEC_DIR), "--data-root", str(MOCK_DATA_ROOT), "--scenarios", CANCEL),
                *("--user", "openai:caller", "--base-url", caller.base_url, "--output-dir", str(out)),
                *("--judge-model", "judge", "--judge-base-url", judge.base_url),
                *("--no-progress", "--workers", "1"),
            ]
        )
    assert code == 3  # the deterministic checks pass this caller: the rubric alone made it an error
    m = _metrics(out / CANCEL)
    assert m["is_successful"] == "error" and m["error_cause"]["source"] == "user_simulator"
    # "Yes please." is the caller's third turn (after its opening and the order id)
    assert m["error_cause"]["message"] == (
        "caller fidelity: caller turn 3: too eager for the persona (persona_adherence)"
    )
    fid = m["user_fidelity"]
    assert fid["judged"] is True and fid["dropped"] == 0 and fid["judge_error"] is None
    assert fid["findings"] == [
        {
            "check": "persona_adherence",
            "turn": 2,
            "detail": "too eager for the persona",
            "text": "Yes please.",
        }
    ]
    assert fid["checks"]["persona_adherence"] is False and fid["checks"]["facts_as_given"] is True
    assert fid["checks"]["persona_facts"] is True  # the text checks found nothing
    assert fid["attempt"] == 2 and fid["replaced"] == ["persona_adherence", "persona_adherence"]
    assert len(_rubric_requests(judge)) == 3 and len(cited) == 3  # one per session, regenerated twice
    # the rubric shows the caller's own record and asks each check
    assert all(f"`{name}`" in prompts[0] for name in RUBRIC_CHECKS)
    assert "O-100" in prompts[0].split("## The call (")[0]  # the persona's order, before the call
    stored = json.loads((out / CANCEL / "user_rubric.json").read_text())
    assert stored["findings"] == fid["findings"] and stored["error"] is None
    # the rubric's requests are the judge's use: three verdicts and three rubrics over the run
    summary = json.loads((out / "summary.json").read_text())
    assert summary["regenerated"]["reasons"] == {"persona_adherence": 2}
    assert m["usage"]["judge"]["calls"] == 2


def test_a_finding_citing_no_caller_turn_is_dropped_and_counted(tmp_path: Path) -> None:
    def answer(prompt: str) -> str:
        agent = re.search(r"^\[(\d+)\] agent: ", prompt, re.M)
        assert agent is not None
        findings = [
            {"check": "facts_as_given", "turn": 99, "detail": "no such turn"},
            {"check": "never_the_agent", "turn": int(agent.group(1)), "detail": "an agent turn"},
            {"check": "made_up", "turn": _caller_turn(prompt, "Yes please."), "detail": "no such check"},
        ]
        return json.dumps({"findings": findings})

    with _judge(answer) as judge:
        out = _run(tmp_path, "behaves", judge)
    m = _metrics(out / CANCEL)
    assert m["is_successful"] is True and m["error_cause"] is None
    fid = m["user_fidelity"]
    assert fid["findings"] == [] and fid["dropped"] == 3 and fid["judged"] is True
    assert all(fid["checks"][name] is True for name in RUBRIC_CHECKS)
    assert len(_rubric_requests(judge)) == 1
    assert _diff_lines(out) == ["caller rubric: 3 finding(s) dropped (cited no caller turn)"]


def test_a_judge_answering_garbage_leaves_the_verdict_to_the_text_checks(tmp_path: Path) -> None:
    with _judge(lambda prompt: "I think the caller was fine, mostly.") as judge:
        out = _run(tmp_path, "behaves", judge)
    m = _metrics(out / CANCEL)
    assert m["is_successful"] is True and m["error_cause"] is None
    fid = m["user_fidelity"]
    assert fid["judged"] is False and fid["findings"] == [] and fid["attempt"] == 0
    assert "no JSON object with a findings list" in fid["judge_error"]
    assert not any(name in fid["checks"] for name in RUBRIC_CHECKS)
    assert len(_rubric_requests(judge)) == 3  # retried judge_retries (2) times, then noted
    (line,) = _diff_lines(out)
    assert line.startswith("caller rubric not answered (text checks only): ValueError: rubric reply")


def test_a_garbage_rubric_does_not_hide_a_deterministic_finding(tmp_path: Path) -> None:
    with _judge(lambda prompt: "{not json") as judge:
        out = _run(tmp_path, "wrong_code", judge)
    m = _metrics(out / CANCEL)
    assert m["is_successful"] == "error" and m["error_cause"]["source"] == "user_simulator"
    assert m["user_fidelity"]["findings"][0]["check"] == "persona_facts"
    assert m["user_fidelity"]["judge_error"]


def test_no_rubric_without_a_judge(tmp_path: Path) -> None:
    out = _run(tmp_path, "behaves", None)
    fid = _metrics(out / CANCEL)["user_fidelity"]
    assert fid["judged"] is False and fid["judge_error"] is None and fid["dropped"] == 0
    assert not any(name in fid["checks"] for name in RUBRIC_CHECKS)
    assert not (out / CANCEL / "user_rubric.json").exists()


def test_no_rubric_request_for_the_replay_caller(tmp_path: Path) -> None:
    with _judge(lambda prompt: json.dumps({"findings": []})) as judge:
        out = _run(tmp_path / "replay", "behaves", judge, user="replay")
    assert len(judge.requests) == 1 and _rubric_requests(judge) == []  # the verdict only
    fid = _metrics(out / CANCEL)["user_fidelity"]
    assert fid["judged"] is False and fid["judge_error"] is None
    assert not (out / CANCEL / "user_rubric.json").exists()


def test_rescore_with_a_judge_asks_the_rubric_and_without_one_drops_it(tmp_path: Path) -> None:
    out = _run(tmp_path, "behaves", None)
    assert _metrics(out / CANCEL)["is_successful"] is True

    def answer(prompt: str) -> str:
        finding = {"check": "goal_pursued", "turn": _caller_turn(prompt, "It is O-100."), "detail": "vague"}
        return json.dumps({"findings": [finding]})

    with _judge(answer) as judge:
        code = main(["rescore", str(out), "--judge-model", "judge", "--judge-base-url", judge.base_url])
    assert code == 3 and len(_rubric_requests(judge)) == 1
    m = _metrics(out / CANCEL)
    assert m["is_successful"] == "error" and m["error_cause"]["source"] == "user_simulator"
    assert m["user_fidelity"]["findings"][0]["turn"] == 1 and m["user_fidelity"]["judged"] is True
    assert (out / CANCEL / "user_rubric.json").exists()

    assert main(["rescore", str(out), "--no-judge"]) == 0
    m = _metrics(out / CANCEL)
    assert m["is_successful"] is True and m["user_fidelity"]["judged"] is False
    assert not (out / CANCEL / "user_rubric.json").exists()


def _session(lines: list[tuple[str, str]]) -> SessionResult:
    transcript = [{"role": role, "type": "utterance", "content": text, "t": 0.0} for role, text in lines]
    return SessionResult(CANCEL, 1, "exit", transcript=transcript, user_backend="openai:caller")


CALL = [("user", "Hi, cancel O-100."), ("agent", "Which order?"), ("user", "O-100."), ("agent", "Done.")]


def test_a_reply_cites_turns_of_the_whole_call_and_keeps_only_caller_turns() -> None:
    findings = [
        {"check": "facts_as_given", "turn": 3, "detail": "said it twice"},  # caller turn 2 of the call
        {"check": "facts_as_given", "turn": 4, "detail": "an agent turn"},
        {"check": "facts_as_given", "turn": True, "detail": "not a number"},
        {"check": "facts_as_given", "turn": "1", "detail": "a string"},
        {"check": ["facts_as_given"], "turn": 1, "detail": "a list for a check"},
        "not an object",
    ]
    reply = "Looking at it.\n```json\n" + json.dumps({"findings": findings}) + "\n```"
    kept, dropped = parse_rubric_reply(reply, _session(CALL))
    assert [(f.check, f.turn, f.detail, f.text) for f in kept] == [
        ("facts_as_given", 1, "said it twice", "O-100.")
    ]
    assert dropped == 5
    with pytest.raises(ValueError, match="no JSON object with a findings list"):
        parse_rubric_reply('{"score": 1}', _session(CALL))
    assert parse_rubric_reply('{"findings": []}', _session(CALL)) == ([], 0)


def test_the_rubric_numbers_every_spoken_turn_of_a_model_callers_session() -> None:
    turns, caller = numbered_turns(_session(CALL))
    assert [(t["number"], t["role"]) for t in turns] == [
        (1, "caller"),
        (2, "agent"),
        (3, "caller"),
        (4, "agent"),
    ]
    assert caller == {1: 0, 3: 1}
    replay = SessionResult(CANCEL, 1, "exit", user_backend="replay")
    assert rubric_applies(_session(CALL)) and not rubric_applies(replay)


def test_validate_names_a_rubric_that_does_not_render(monkeypatch: pytest.MonkeyPatch) -> None:
    from engine.domains.registry import plugins
    from engine.spec import validate
    from engine.spec.loader import load_domain

    scenario = next(
        s for s in load_domain(MOCK_SPEC_DIR, MOCK_DATA_ROOT, plugins=plugins()).scenarios if s.name == CANCEL
    )
    assert validate.judge_prompt_problems(scenario) == []

    def broken(*args: Any) -> str:
        raise TypeError("no such variable")

    monkeypatch.setattr(validate, "render_rubric_prompt", broken)
    (problem,) = validate.judge_prompt_problems(scenario)
    assert "the caller rubric (user_rubric.md.j2) does not render: TypeError" in problem.message
