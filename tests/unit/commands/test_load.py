"""``evalctl load``: a small ramp (2, 4, 8 callers) on the mock shop against an in-process fake agent
that plays gold after a latency (tests/load_agents.py): the table's shape, the fields of
``load.json``, the stop after the first step whose failures exceed ``--fail-above`` when the
agent breaks above 4 sessions at once, and bad ramps as one line, exit 2."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cli import main
from engine.core.records.load import LoadRecord
from engine.results.load_figures import HEADER, reply_times
from engine.run.load import LoadPlan, fill, step_sessions
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR
from tests.load_agents import GoldAgent


def _load(agent: str, out: Path, ramp: str, *more: str) -> int:
    return main(
        [
            "load",
            str(MOCK_SPEC_DIR),
            "--data-root",
            str(MOCK_DATA_ROOT),
            "--agent",
            agent,
            "--ramp",
            ramp,
            "--output-dir",
            str(out),
            *more,
        ]
    )


def test_a_ramp_reports_each_step(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    agent = GoldAgent(MOCK_SPEC_DIR, MOCK_DATA_ROOT, latency_s=0.02)
    assert _load(agent.register("load_gold"), tmp_path, "2,4,8", "--fail-above", "0.2") == 0
    assert agent.peak == 8  # the last step ran its 8 callers at once
    lines = capsys.readouterr().out.splitlines()
    # the last lines say what overhead means and name both files (before: load.json alone)
    assert lines[-2].startswith("overhead: evalctl's CPU time over the step's wall time")
    assert lines[-1] == f"load: {tmp_path / 'load.json'}, {tmp_path / 'load.html'}"
    assert re.split(r"\s{2,}", lines[0])[: len(HEADER)] == list(HEADER)  # the columns, in order
    rows = [re.split(r"\s{2,}", line) for line in lines[1:4]]
    assert [(r[0], r[1], r[2]) for r in rows] == [
        ("2", "2", "100.0% (2/2 sessions)"),
        ("4", "6", "100.0% (6/6 sessions)"),
        ("8", "9", "100.0% (9/9 sessions)"),
    ]
    body = json.loads((tmp_path / "load.json").read_text(encoding="utf-8"))
    record = LoadRecord.from_json(body)
    assert record.stopped_at is None and [s.callers for s in record.steps] == [2, 4, 8]
    # 4 and 8 sessions over the shop's 3 scenarios: each 2 and 3 times (trials), all counted
    assert [(s.sessions, s.passed, s.failed, s.errors) for s in record.steps] == [
        (2, 2, 0, 0),
        (6, 6, 0, 0),
        (9, 9, 0, 0),
    ]
    for step in record.steps:
        p50, p99 = step.latency_ms["p50"], step.latency_ms["p99"]
        assert step.replies >= step.sessions and p50 is not None and p99 is not None
        assert 20.0 <= p50 <= p99  # at least the agent's latency
        # cpu_s and wall_s are written to 3 decimals, the share from the unrounded times
        bound = (step.cpu_s + 5e-4) / max(step.wall_s - 5e-4, 1e-9) - step.cpu_s / step.wall_s
        assert step.cpu_s > 0 and 0 < step.overhead == pytest.approx(
            step.cpu_s / step.wall_s, abs=bound + 1e-4
        )
        assert (tmp_path / step.run_dir / "summary.json").is_file()
    page = (tmp_path / "load.html").read_text(encoding="utf-8")
    assert page.count("<polyline") == 3  # p50, p95, p99 over the steps
    assert "2 callers" in page and "8 callers" in page and "verdicts per step" in page


def test_the_ramp_stops_at_the_failure_threshold(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    agent = GoldAgent(MOCK_SPEC_DIR, MOCK_DATA_ROOT, latency_s=0.15, fails_above=4)
    code = _load(agent.register("load_breaks"), tmp_path, "2,8,16", "--fail-above", "0.2")
    assert code == 1
    out = capsys.readouterr().out
    record = LoadRecord.from_json(json.loads((tmp_path / "load.json").read_text(encoding="utf-8")))
    assert [s.callers for s in record.steps] == [2, 8] and record.stopped_at == 1  # 16 never ran
    steps = record.steps
    assert steps[0].failure_share == 0.0  # at most 4 at once: it holds
    assert steps[1].failure_share > 0.2 and steps[1].errors_by_cause["fail:agent_error"] == steps[1].failed
    assert not (tmp_path / "step-03-16").exists()
    assert "stopped at 8 callers" in out and "--fail-above 20.0%" in out


@pytest.mark.parametrize(
    ("ramp", "message"),
    [("10,x", "--ramp '10,x'"), ("0,5", "each at least 1"), (",", "one or more caller counts")],
)
def test_a_bad_ramp_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], ramp: str, message: str
) -> None:
    assert _load("replay", tmp_path / "out", ramp) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
    assert not (tmp_path / "out").exists()


def test_steps_cycle_the_scenarios() -> None:
    names = ["a", "b", "c"]
    assert fill(names, 2) == (("a", "b"), 1)
    assert fill(names, 3) == (("a", "b", "c"), 1)
    assert fill(names, 8) == (("a", "b", "c"), 3)
    # whole rounds of every selected scenario (before: ("a", "b") twice, "c" silently dropped)
    assert fill(names, 4) == (("a", "b", "c"), 2)
    assert fill(names, 6) == (("a", "b", "c"), 2)


def test_a_step_runs_every_selected_scenario_and_says_which_it_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Found by a new-user pass: ``--ramp 2,4 --scenarios A,B,C`` ran only A and B in every step
    (the step of 4 callers ran 4 sessions over 2 scenarios), C dropped without a word."""
    agent = GoldAgent(MOCK_SPEC_DIR, MOCK_DATA_ROOT, latency_s=0.0)
    chosen = ["mock__cancel_order", "mock__late_delivery_credit", "mock__shipped_refusal"]
    code = _load(agent.register("load_all"), tmp_path, "2,4", "--scenarios", ",".join(chosen))
    assert code == 0
    captured = capsys.readouterr()
    record = LoadRecord.from_json(json.loads((tmp_path / "load.json").read_text(encoding="utf-8")))
    assert [(s.callers, s.sessions) for s in record.steps] == [(2, 2), (4, 6)]
    ran = [
        sorted(
            json.loads(m.read_text())["scenario_name"] for m in (tmp_path / s.run_dir).rglob("metrics.json")
        )
        for s in record.steps
    ]
    assert sorted(set(ran[1])) == chosen and len(ran[1]) == 6  # every scenario, twice
    assert sorted(set(ran[0])) == chosen[:2]
    assert [s.left_out for s in record.steps] == [(chosen[2],), ()]
    err = [line for line in captured.err.splitlines() if line.startswith("evalctl load:")]
    assert len(err) == 2
    assert err[0].endswith(f"1 selected scenario not run (fewer sessions than scenarios selected; give "
                           f"--sessions-per-step to run them all): {chosen[2]}")  # fmt: skip
    assert "not run" not in err[1]
    out = captured.out.splitlines()
    assert f"2 callers: 1 selected scenario not run (fewer sessions than scenarios selected; give " \
        f"--sessions-per-step to run them all): {chosen[2]}" in out  # fmt: skip
    assert not any(line.startswith("4 callers:") for line in out)


def test_reply_time_is_the_engine_clock_from_caller_line_to_agent_words() -> None:
    transcript = [
        {"role": "agent", "type": "utterance", "content": "Hello", "t": 0.0},  # a greeting: not a reply
        {"role": "user", "type": "utterance", "content": "Hi", "t": 0.5},
        {"role": "agent", "type": "tool_call", "content": {}, "t": 0.9},
        {"role": "agent", "type": "utterance", "content": "Done", "t": 1.75},
        {"role": "agent", "type": "utterance", "content": "More", "t": 2.0},  # not a second reply
        {"role": "user", "type": "utterance", "content": "Bye", "t": 3.0},
    ]
    assert reply_times(transcript) == [1.25]


def test_a_step_runs_one_session_per_caller_or_what_is_asked(tmp_path: Path) -> None:
    assert step_sessions(LoadPlan((5,), tmp_path), 5, None) == 5
    assert step_sessions(LoadPlan((5,), tmp_path, sessions_per_step=12), 5, 3.0) == 12
    timed = LoadPlan((5,), tmp_path, step_duration_s=30.0)
    assert step_sessions(timed, 5, None) == 5  # the first step: one round, which measures a session
    assert step_sessions(timed, 5, 10.0) == 15  # three rounds of 10 s fill 30 s
    assert step_sessions(timed, 5, 100.0) == 5  # at least one round


def test_a_step_size_is_given_one_way(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = _load("replay", tmp_path / "out", "2", "--sessions-per-step", "4", "--step-duration", "10")
    assert code == 2 and "give one of them" in capsys.readouterr().err


def test_an_agent_gone_after_a_step_keeps_the_steps_measured(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: the ramp raised at the next step's endpoint check and load.json was never written.
    The agent is an external side stopped when the first step is done (``on_step``: no timing)."""
    import os
    import signal
    import subprocess
    import sys

    from engine.commands import load as load_command
    from engine.run import load as load_module
    from tests.conftest import REPO

    proc = subprocess.Popen(
        [sys.executable, str(REPO / "cli.py"), "serve", "agent", "--port", "0", "--spec-dir",
         str(MOCK_SPEC_DIR), "--data-root", str(MOCK_DATA_ROOT)],
        cwd=REPO, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        match = re.search(r"on (ws://127\.0\.0\.1:\d+)", proc.stderr.readline())
        assert match
        real = load_module.run_load

        async def stop_after_the_first_step(opts, plan, on_step=None):  # type: ignore[no-untyped-def]
            def told(step):  # type: ignore[no-untyped-def]
                if on_step is not None:
                    on_step(step)
                proc.send_signal(signal.SIGINT)
                proc.communicate(timeout=10)

            return await real(opts, plan, told)

        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(load_command, "run_load", stop_after_the_first_step)
            code = _load(match.group(1), tmp_path, "2,4")
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            proc.communicate(timeout=10)
    captured = capsys.readouterr()
    assert code == 3
    record = LoadRecord.from_json(json.loads((tmp_path / "load.json").read_text(encoding="utf-8")))
    assert [s.callers for s in record.steps] == [2] and (tmp_path / "load.html").is_file()
    assert (
        "step 2 (4 callers) could not run: " in captured.err and "the finished steps are in" in captured.err
    )
    assert HEADER[0] in captured.out  # the table of the step measured was printed


#: Spends 0.2 s of CPU in each turn (counted by the CPU clock, not the wall), then ends the call.
BURNER = """
import time


def make(session, tools):
    async def turn(line):
        start = time.process_time()
        while time.process_time() - start < 0.2:
            pass
        await tools.call("end_conversation", "{}", say="Goodbye.")
        return ""

    return turn
"""


def test_a_steps_cpu_counts_the_in_process_agents_worker(tmp_path: Path) -> None:
    """An in-process agent runs in a supervised worker process (engine.run.workers.isolated): its
    CPU is the step's too. Before: the step counted only its own process's CPU, none of the agent's."""
    agent = tmp_path / "burner.py"
    agent.write_text(BURNER)
    assert _load(f"python:{agent}:make", tmp_path / "out", "3") == 0
    [step] = json.loads((tmp_path / "out" / "load.json").read_text())["steps"]
    assert step["sessions"] == 3 and step["cpu_s"] >= 3 * 0.2


#: Leaves a task behind that ignores its cancellation once, writing the moment it was cancelled
#: (``time.monotonic()``) to the file $STUBBORN_AT; it ends after 30 s at most.
STUBBORN = """
import asyncio, os, time


async def _stubborn():
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:
        with open(os.environ["STUBBORN_AT"], "w") as out:
            out.write(repr(time.monotonic()))
        await asyncio.sleep(30)


def make(session, tools):
    async def turn(line):
        asyncio.get_running_loop().create_task(_stubborn())
        await tools.call("end_conversation", "{}", say="Goodbye.")
        return ""

    return turn
"""


def test_a_steps_wall_ends_with_its_last_session_not_the_workers_shutdown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker of an in-process agent that leaves a task ignoring cancellation waits
    ``GRACE_S`` (5 s) for it before it ends (engine.util.aio.run_to_end). Before: that wait was
    in the step's wall (a step of one 0.1 s session measured 5.3 s, at least the grace whatever
    the machine). The step now ends with its last session."""
    from engine.util.aio import GRACE_S

    agent, at = tmp_path / "stubborn.py", tmp_path / "cancelled_at"
    agent.write_text(STUBBORN)
    monkeypatch.setenv("STUBBORN_AT", str(at))
    assert _load(f"python:{agent}:make", tmp_path / "out", "1", "--sessions-per-step", "1") == 0
    [step] = json.loads((tmp_path / "out" / "load.json").read_text())["steps"]
    assert step["sessions"] == 1
    assert at.is_file()  # the worker did reach its leftover task, and waited the grace for it
    assert step["wall_s"] < GRACE_S


#: Never answers a caller line.
SILENT = """
import asyncio


def make(session, tools):
    async def turn(line):
        await asyncio.sleep(3600)

    return turn
"""


def test_a_ramp_takes_the_turn_timeout_and_max_turns(tmp_path: Path) -> None:
    """Found by a new user: `load` had no --turn-timeout, so a silent agent held each session for
    the default 300 s; nor --max-turns."""
    agent = tmp_path / "silent.py"
    agent.write_text(SILENT)
    args = ("1", "--sessions-per-step", "1", "--turn-timeout", "0.5", "--max-turns", "3")
    assert _load(f"python:{agent}:make", tmp_path / "out", *args) == 0
    [step] = json.loads((tmp_path / "out" / "load.json").read_text())["steps"]
    assert step["sessions"] == 1 and step["failed"] == 1
    run = json.loads(next((tmp_path / "out").glob("step-01-1/run.json")).read_text())
    assert run["settings"]["turn_timeout_s"] == 0.5 and run["settings"]["max_turns"] == 3
