"""Issue 30 item 4: ``evalctl play --as agent|user`` lets a person play one side in the terminal
against replay, tool calls typed as JSON and their results shown, the session scored at the end
like any run's. Driven through stdin (click's CliRunner input: no terminal, no timing)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

import cli
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR, REPO

ONE = "mock__cancel_order"


def _play(tmp_path: Path, role: str, lines: list[str]) -> tuple[int, str, Path]:
    out = tmp_path / "run"
    args = ["play", str(MOCK_SPEC_DIR), ONE, "--as", role, "--data-root", str(MOCK_DATA_ROOT)]
    result = CliRunner().invoke(cli.group, [*args, "--output-dir", str(out)], input="\n".join(lines) + "\n")
    return result.exit_code if result.exception is None else -1, result.output, out


def test_play_as_agent_against_the_replay_caller_is_scored(tmp_path: Path) -> None:
    code, output, out = _play(
        tmp_path,
        "agent",
        [
            "Sure. What is the order id?",
            '/tool get_order {"order_id": "O-100"}',
            "I found order O-100 for 42.50 dollars, not shipped yet. Shall I cancel it?",
            "/tool cancel_order {order_id: O-100}",  # not JSON: refused, shown, the turn goes on
            '/tool cancel_order {"order_id": "O-100"}',
            "Done, order O-100 is cancelled. Anything else?",
            "Goodbye!",
            "/end",
        ],
    )
    assert code == 0, output
    assert "caller: Hi, I want to cancel an order." in output and "caller: It is O-100." in output
    assert "result: " in output and "42.5" in output  # the DB's answer to get_order, shown
    assert "a key in double quotes is expected at character 2" in output  # the refused call's error
    assert "Overall Success Rate: 100.0% (1/1 scenarios" in output
    calls = json.loads((out / ONE / "tool_calls.json").read_text(encoding="utf-8"))
    assert [c["name"] for c in calls][:3] == ["get_order", "cancel_order", "cancel_order"]
    final = json.loads((out / ONE / "final_db.json").read_text(encoding="utf-8"))
    assert final["orders"]["O-100"]["status"] == "cancelled"


def test_play_as_user_against_the_replay_agent_shows_the_agent_and_is_scored(tmp_path: Path) -> None:
    code, output, out = _play(tmp_path, "user", ["Hi, I want to cancel an order.", "It is O-101.", "/end"])
    assert code == 0, output
    assert "[you are the user]" in output and "agent: Sure. What is the order id?" in output
    assert "stop reason:" in output and "results: " in output  # scored and explained like any run
    assert json.loads((out / "run.json").read_text(encoding="utf-8"))["settings"]["user"] == "human"


def test_play_refuses_a_human_or_external_other_side(tmp_path: Path) -> None:
    args = ["play", str(MOCK_SPEC_DIR), ONE, "--as", "agent", "--other", "human"]
    assert cli.main([*args, "--data-root", str(MOCK_DATA_ROOT)]) == 2


def test_play_ctrl_c_while_waiting_for_the_person_exits_130(tmp_path: Path) -> None:
    """Before: SIGINT left the stdin read running in a thread; play waited for stdin to close."""
    args = ["play", str(MOCK_SPEC_DIR), ONE, "--as", "agent", "--data-root", str(MOCK_DATA_ROOT)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli", *args, "--output-dir", str(tmp_path / "run")],
        stdin=subprocess.PIPE,  # kept open: only the signal can end the wait
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # the prompt: the backend is waiting for the person now
        assert first.startswith("[you are the agent]"), first
        os.kill(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 130, err
    assert "evalctl: interrupted; finished results kept in" in err and "Traceback" not in err
    assert f"results: {tmp_path / 'run'}" in out


def test_play_unknown_slash_command_is_refused_not_spoken(tmp_path: Path) -> None:
    _code, output, out = _play(tmp_path, "agent", ["/unknowncmd", "/end"])
    assert "  unknown command /unknowncmd (commands: /tool, /tools, /end)" in output
    transcript = (out / ONE / "transcript.jsonl").read_text(encoding="utf-8")
    assert "/unknowncmd" not in transcript  # never the agent's words


def test_play_as_user_closed_stdin_is_the_persons_hang_up(tmp_path: Path) -> None:
    _code, output, out = _play(tmp_path, "user", [])
    metrics = json.loads((out / ONE / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["is_successful"] is False  # a verdict, not `error` (before: user_simulator error)
    assert metrics["error_cause"] is None and metrics["user_fidelity"]["enforced"] is False
    assert "a replay, noop or human caller: reported, not an error" in output


def test_play_as_user_shows_the_agents_last_words_before_it_hung_up(tmp_path: Path) -> None:
    lines = ["Hi, I want to cancel an order.", "It is O-100.", "Yes please.", "No, thanks. Bye."]
    code, output, _ = _play(tmp_path, "user", lines)
    assert code == 0, output
    before_report = output.split("Overall Success Rate")[0]
    assert before_report.count("agent: Goodbye!") == 1  # said after the person's last line, shown once
