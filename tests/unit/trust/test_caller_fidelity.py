"""Issue #26 §1-2: scripted model callers that deviate in known ways (a wrong order id, an early
hang-up, agent-speak, an invented request) give the verdict ``error`` with source
``user_simulator`` and are regenerated with a new seed, every attempt kept; two behaving callers
are scored normally. Real runs of the mock shop: the replay agent against a scripted
OpenAI-compatible caller on loopback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cli import main
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR
from tests.runtime_helpers import ScriptedOpenAI, Step, completion

CANCEL = "mock__cancel_order"
#: The caller's words after its opening ("Hi, I want to cancel an order."), one per agent line:
#: "What is the order id?", "... Shall I cancel it?", "Done ... Anything else?", "Goodbye!".
CALLERS: dict[str, list[str]] = {
    "behaves": ["It is O-100.", "Yes please.", "No, thanks. Bye."],
    "behaves_spelled": ["It's O, one, zero, zero.", "Yes, go ahead.", "That's all, thank you!"],
    "wrong_code": ["It is O-107.", "Yes please.", "No, thanks. Bye."],
    "early_hangup": ["Never mind, bye. ###STOP###"],
    "agent_speak": [
        "It is O-100.",
        "Yes please.",
        "Thank you for calling, is there anything else I can help with?",
    ],
    "invented_request": ["It is O-100.", "Yes, and also issue me store credit for the trouble.", "Bye."],
}


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "local")


def _caller(lines: list[str], seeds: list[Any]) -> ScriptedOpenAI:
    def route(body: dict[str, Any]) -> Step:
        said = sum(1 for m in body["messages"] if m["role"] == "assistant")  # the opening first
        if said == 1:  # a session's first request
            seeds.append(body.get("seed"))
        return Step(completion(lines[min(said - 1, len(lines) - 1)]))

    return ScriptedOpenAI([], route=route)


def _run(tmp_path: Path, lines: list[str], *extra: str) -> tuple[Path, int, list[Any]]:
    out = tmp_path / "run"
    seeds: list[Any] = []
    with _caller(lines, seeds) as server:
        code = main(
            [
                "run",
                str(MOCK_SPEC_DIR),
                "--data-root",
                str(MOCK_DATA_ROOT),
                "--scenarios",
                CANCEL,
                "--user",
                "openai:caller",
                "--base-url",
                server.base_url,
                "--output-dir",
                str(out),
                "--no-progress",
                "--workers",
                "1",
                *extra,
            ]
        )
    return out, code, seeds


def _metrics(path: Path) -> dict[str, Any]:
    return json.loads((path / "metrics.json").read_text())


@pytest.mark.parametrize("name", ["behaves", "behaves_spelled"])
def test_a_behaving_caller_is_scored_normally(tmp_path: Path, name: str) -> None:
    out, code, seeds = _run(tmp_path, CALLERS[name])
    m = _metrics(out / CANCEL)
    assert code == 0 and m["is_successful"] is True and m["error_cause"] is None
    fidelity = m["user_fidelity"]
    assert fidelity["findings"] == [] and fidelity["enforced"] is True and fidelity["attempt"] == 0
    assert set(fidelity["checks"].values()) == {True}
    assert seeds == [None] and not (out / ".regenerated").exists()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["regenerated"] == {"sessions": 0, "attempts": 0, "reasons": {}}


@pytest.mark.parametrize(
    ("name", "check", "turn"),
    [
        ("wrong_code", "persona_facts", 1),
        ("early_hangup", "early_hangup", 1),
        ("agent_speak", "agent_speak", 3),
        ("invented_request", "invented_request", 2),
    ],
)
def test_a_deviating_caller_is_a_user_simulator_error_and_is_regenerated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, check: str, turn: int
) -> None:
    out, code, seeds = _run(tmp_path, CALLERS[name])
    assert code == 3  # errors without --allow-errors
    m = _metrics(out / CANCEL)
    assert m["is_successful"] == "error" and m["attribution"] is None
    assert m["error_cause"]["source"] == "user_simulator"
    assert m["error_cause"]["message"].startswith(f"caller fidelity: caller turn {turn + 1}: ")
    fidelity = m["user_fidelity"]
    assert fidelity["checks"][check] is False and fidelity["findings"][0]["check"] == check
    assert fidelity["findings"][0]["turn"] == turn
    # --regenerate defaults to 2: three sessions, each with a new seed, the two replaced kept
    assert fidelity["attempt"] == 2 and fidelity["replaced"] == [check, check]
    assert seeds == [None, 1, 2]  # the first session sends no seed, each regeneration a new one
    kept = out / ".regenerated" / CANCEL
    assert sorted(p.name for p in kept.iterdir()) == ["attempt_1", "attempt_2"]
    assert all(_metrics(kept / a)["is_successful"] == "error" for a in ("attempt_1", "attempt_2"))
    assert (kept / "attempt_1" / "transcript.jsonl").exists()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["regenerated"] == {"sessions": 1, "attempts": 2, "reasons": {check: 2}}
    # the replaced attempts' requests are still paid for: the run's usage counts all three
    calls = [
        _metrics(d)["usage"]["user"]["calls"] for d in (kept / "attempt_1", kept / "attempt_2", out / CANCEL)
    ]
    assert summary["usage"]["user"]["calls"] == sum(calls) and len(seeds) == 3
    assert summary["errors"] == 1
    text = (out / "all_summary.txt").read_text()
    assert f"regenerated: 1 session(s), 2 attempt(s) replaced ({check}: 2)" in text


def test_regenerate_zero_keeps_the_first_attempt(tmp_path: Path) -> None:
    out, code, seeds = _run(tmp_path, CALLERS["wrong_code"], "--regenerate", "0")
    assert code == 3
    m = _metrics(out / CANCEL)
    assert m["is_successful"] == "error" and m["user_fidelity"]["attempt"] == 0
    assert seeds == [None] and not (out / ".regenerated").exists()


def test_a_resume_keeps_the_broken_callers_attempts_and_regenerates_again(tmp_path: Path) -> None:
    lines, seeds = list(CALLERS["wrong_code"]), []
    out = tmp_path / "run"
    every = ("run", str(MOCK_SPEC_DIR), "--data-root", str(MOCK_DATA_ROOT), "--no-progress", "--workers", "1")
    with _caller(lines, seeds) as server:
        model = ("--scenarios", CANCEL, "--user", "openai:caller", "--base-url", server.base_url)
        assert main([*every, *model, "--output-dir", str(out), "--regenerate", "1"]) == 3
        assert _metrics(out / CANCEL)["user_fidelity"]["attempt"] == 1 and seeds == [None, 1]
        lines[:] = CALLERS["behaves"]  # the caller model behaves now
        assert main([*every, "--resume", str(out)]) == 0
    m = _metrics(out / CANCEL)
    assert m["is_successful"] is True and m["user_fidelity"]["replaced"] == ["persona_facts"] * 2
    assert sorted(p.name for p in (out / ".regenerated" / CANCEL).iterdir()) == ["attempt_1", "attempt_2"]
    assert seeds == [None, 1, 2]  # the third attempt of the result: a seed no earlier attempt used
