"""The runner and the run/serve verbs: selection, errors, trials, resume, Ctrl-C, serve."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import cli
from engine.core.options import TaskSelection
from engine.domains.registry import plugins
from engine.run.runner import run, select_scenarios
from engine.spec.loader import load_domain
from engine.spec.selection import select_tasks
from engine.util.errors import UsageError
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR, REPO
from tests.runtime_helpers import run_options

SHOP = (MOCK_SPEC_DIR, MOCK_DATA_ROOT)  # the mock shop: its spec folder and data root
SHOP_RUN = ["run", str(MOCK_SPEC_DIR), "--data-root", str(MOCK_DATA_ROOT)]


def test_select_scenarios() -> None:
    scenarios = load_domain(*SHOP, plugins=plugins()).scenarios
    assert len(select_scenarios(scenarios, (), None)) == len(scenarios) == 3
    picked = select_scenarios(scenarios, ("mock__shipped_refusal", "mock__cancel_order"), None)
    assert [s.name for s in picked] == ["mock__shipped_refusal", "mock__cancel_order"]
    assert {s.name for s in select_scenarios(scenarios, (), "mock__s")} == {"mock__shipped_refusal"}
    assert len(select_scenarios(scenarios, (), "mock__")) == 3
    with pytest.raises(UsageError, match=r"no scenario named 'mock__cancel_ordr' \(did you mean"):
        select_scenarios(scenarios, ("mock__cancel_ordr",), None)
    with pytest.raises(UsageError, match="no scenario matches --domain 'tau2_'"):
        select_scenarios(scenarios, (), "tau2_")


def test_names_and_a_prefix_that_share_no_scenario_are_named_both() -> None:
    """Before: the error named --domain alone, though every scenario of --domain
    exists (the names given start otherwise)."""
    scenarios = load_domain(*SHOP, plugins=plugins()).scenarios
    with pytest.raises(UsageError) as info:
        select_scenarios(scenarios, ("mock__cancel_order", "M2"), "mock__s")
    assert str(info.value) == (
        "no scenario matches both --scenarios 'mock__cancel_order,M2' and --domain 'mock__s'"
    )
    many = ("M1",) * 7
    with pytest.raises(UsageError) as info:
        select_scenarios(scenarios, many, "mock__s")
    assert (
        str(info.value)
        == "no scenario matches both --scenarios 'M1,M1,M1,M1,M1,...' (7 names) and --domain 'mock__s'"
    )


def test_every_unknown_name_is_reported_at_once() -> None:
    """Before: the unknown names came one per run (fix one, rerun, get the next)."""
    scenarios = load_domain(*SHOP, plugins=plugins()).scenarios
    with pytest.raises(UsageError) as info:
        select_scenarios(
            scenarios, ("mock__cancel_ordr", "M1", "zzz", "mock__cancel_ordr", "mock__shiped"), None
        )
    assert str(info.value) == (
        "3 names match no scenario: 'mock__cancel_ordr' (did you mean 'mock__cancel_order', record "
        "'M1'?), 'zzz', 'mock__shiped' (did you mean 'mock__shipped_refusal', record 'M3'?)"
    )
    unknown = tuple(f"zz{n}" for n in range(12))
    with pytest.raises(UsageError) as info:
        select_scenarios(scenarios, unknown, "mock__")  # an unknown name is reported before the prefix
    assert str(info.value) == "12 names match no scenario: 'zz0', 'zz1', 'zz2', 'zz3', 'zz4' and 7 more"


def test_every_unknown_task_id_is_reported_at_once() -> None:
    """Before: the unknown --task-ids came one per run (fix one, rerun, get the next)."""
    loaded = load_domain(*SHOP, plugins=plugins())
    with pytest.raises(UsageError) as info:
        select_tasks(loaded.scenarios, loaded, TaskSelection(("M1", "M9", "zzz", "M9", "m2")))
    assert str(info.value) == (
        "--task-ids: 3 ids match no task in the selection: 'M9' (nearest: 'M3', scenario "
        "mock__shipped_refusal), 'zzz', 'm2' (nearest: 'M2', scenario mock__late_delivery_credit)"
    )
    with pytest.raises(UsageError) as info:
        select_tasks(loaded.scenarios, loaded, TaskSelection(tuple(f"zz{n}" for n in range(12))))
    assert str(info.value) == (
        "--task-ids: 12 ids match no task in the selection: 'zz0', 'zz1', 'zz2', 'zz3', 'zz4' and 7 more"
    )
    with pytest.raises(UsageError) as info:  # one alone: the message it always had
        select_tasks(loaded.scenarios, loaded, TaskSelection(("M1", "M4")))
    assert (
        str(info.value)
        == "--task-ids: no task 'M4' in the selection (nearest: 'M3', scenario mock__shipped_refusal)"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--scenarios", "mock__nope"], "evalctl: no scenario named 'mock__nope'"),
        (
            ["--agent", "gpt-4"],
            "evalctl: unknown backend 'gpt-4': expected replay, noop, openai:MODEL, ws://host:port, "
            "rtvi+ws://host:port, python:FILE.py:FACTORY, pipecat:FILE.py:FACTORY or livekit:FILE.py:FACTORY",
        ),
        (  # the same --output-dir as --resume (another one is refused: test_run_dir.py)
            ["--resume", "/nonexistent/run", "--output-dir", "/nonexistent/run"],
            "evalctl: --resume: no run directory at /nonexistent/run",
        ),
        (  # a task of the spec that --scenarios left out: named as such, not as a missing task
            ["--scenarios", "mock__cancel_order", "--task-ids", "M3,M9"],
            "evalctl: --task-ids: 'M3' (mock__shipped_refusal) is not among the 1 scenario chosen by "
            "--scenarios / --domain; and no task 'M9' in the spec",
        ),
        (
            ["--agent", "openai:m", "--api-key-env", "EVALCTL_NO_SUCH_VAR"],
            "evalctl: environment variable EVALCTL_NO_SUCH_VAR is not set",
        ),
    ],
)
def test_run_user_errors_are_one_line(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    code = cli.main([*SHOP_RUN, "--output-dir", str(out), *args])
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip() == message or err.startswith(message)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not out.exists()  # nothing was written


def test_run_verb_prints_the_summary_and_honours_fail_under(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = [*SHOP_RUN, "--no-progress", "--fail-under", "1"]
    ok = cli.main([*base, "--scenarios", "mock__cancel_order", "--output-dir", str(tmp_path / "a")])
    out = capsys.readouterr().out
    assert ok == 0
    assert (
        "Overall Success Rate: 100.0% (1/1 scenarios; 0 errors)" in out
        and f"results: {tmp_path / 'a'}" in out
    )
    # a gold conversation of two agent turns: the stalled threshold is min(3, 2), so it passes
    root = tmp_path / "data"
    shutil.copytree(MOCK_DATA_ROOT, root)
    dataset = root / "mock_shop" / "dataset.json"
    records = json.loads(dataset.read_text(encoding="utf-8"))
    short = next(r for r in records if r["id"] == "M3")
    short["trace"] = [
        e
        for e in short["trace"]
        if e.get("utterance") not in ("Oh well. Thanks.", "You are welcome. Anything else?")
    ]
    assert [e["event_type"] for e in short["trace"]].count("user_utterance") == 2
    dataset.write_text(json.dumps(records), encoding="utf-8")
    short_run = ["run", str(MOCK_SPEC_DIR), "--data-root", str(root), "--no-progress", "--fail-under", "1"]
    assert (
        cli.main([*short_run, "--scenarios", "mock__shipped_refusal", "--output-dir", str(tmp_path / "b")])
        == 0
    )
    metrics = json.loads((tmp_path / "b" / "mock__shipped_refusal" / "metrics.json").read_text())
    assert metrics["min_agent_turns"] == 2 and metrics["stalled"] is False and metrics["agent_turns"] == 2


async def test_trials_and_resume(tmp_path: Path) -> None:
    names = ("mock__cancel_order", "mock__shipped_refusal")
    opts = run_options(*SHOP, scenarios=names, trials=2, output_dir=tmp_path, progress=False)
    first = await run(opts)
    assert sorted((r.scenario_name, r.trial) for r, _ in first.results()) == [
        (n, k) for n in names for k in (1, 2)
    ]
    assert (tmp_path / "mock__shipped_refusal" / "trial_2" / "metrics.json").is_file()
    (tmp_path / "mock__cancel_order" / "trial_2" / "metrics.json").unlink()
    again = await run(run_options(*SHOP, scenarios=names, trials=2, resume=tmp_path, progress=False))
    assert again.skipped == 3
    assert [(r.scenario_name, r.trial) for r, _ in again.results()] == [("mock__cancel_order", 2)]
    assert again.summary is not None and again.summary.results == 4


#: Sessions of the interrupted runs: the three mock scenarios, ten trials each (replay latency 0.05 s:
#: about a second of work, so a signal lands mid-run).
TRIALS = 10
SESSIONS = 3 * TRIALS


def _cli(*args: str) -> list[str]:
    return [sys.executable, str(REPO / "cli.py"), *args]


def _sigint_default() -> None:
    """Give the child the default SIGINT action: a suite started in the background (``cmd &``,
    nohup, some CI runners) ignores SIGINT, and an ignored signal stays ignored across exec."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupted_run(out: Path) -> subprocess.Popen[str]:
    """A run of the shop's sessions into ``out`` (slowed by a replay latency), sent Ctrl-C once its
    first session has finished (its progress line read from stderr)."""
    args = [*SHOP_RUN, "--output-dir", str(out), "--no-progress", "--trials", str(TRIALS)]
    proc = subprocess.Popen(
        _cli(*args, "--concurrency", "2", "--replay-latency", "0.05"),
        cwd=REPO,
        preexec_fn=_sigint_default,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        if re.match(rf"\[\d+/{SESSIONS} ", line):
            break
    proc.send_signal(signal.SIGINT)
    return proc


def test_ctrl_c_keeps_finished_results_and_resume_completes(tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = _interrupted_run(out)
    _, stderr = proc.communicate(timeout=90)  # a safety net: a loaded machine is slow, never wrong
    assert proc.returncode == 130, stderr
    assert "interrupted; finished results kept in" in stderr and "Traceback" not in stderr
    summary = json.loads((out / "summary.json").read_text())
    done = summary["results"]
    assert summary["interrupted"] is True and 1 <= done < SESSIONS
    assert len(list(out.glob("*/trial_*/metrics.json"))) == done
    assert "Run was interrupted" in (out / "all_summary.txt").read_text()
    resumed = subprocess.run(
        _cli(*SHOP_RUN, "--resume", str(out), "--no-progress"),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert f"{done} already complete (skipped)" in resumed.stdout
    final = json.loads((out / "summary.json").read_text())
    assert final["results"] == SESSIONS and final["interrupted"] is False
    assert final["stop_reasons"] == {"exit": SESSIONS}  # every mock gold conversation ends the call


def test_ctrl_c_twice_still_writes_the_summary(tmp_path: Path) -> None:
    """An impatient second Ctrl-C (sent once the first one was seen) no longer quits without the
    summary: whenever it lands, the run still ends with exit 130 and summary.json (before, a second
    Ctrl-C while the writes finished left neither summary nor resume hint)."""
    from engine.run.runner import CtrlC

    out = tmp_path / "run"
    proc = _interrupted_run(out)
    assert proc.stderr is not None
    said = ""
    for line in proc.stderr:
        said = line.strip()
        if said == f"evalctl: {CtrlC.FIRST}":
            break
    assert said == f"evalctl: {CtrlC.FIRST}"  # the first Ctrl-C is answered at once
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=90)  # a safety net: a loaded machine is slow, never wrong
    assert proc.returncode == 130, stderr
    assert "interrupted; finished results kept in" in stderr and "Traceback" not in stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] is True
    assert summary["results"] == len(list(out.glob("*/trial_*/metrics.json")))


async def test_repeated_ctrl_c_cancels_then_warns_then_quits(capsys: pytest.CaptureFixture[str]) -> None:
    from engine.run.runner import CtrlC

    task = asyncio.get_running_loop().create_future()  # stands for the run's task: cancel() is all it needs
    ctrl_c = CtrlC(task)  # type: ignore[arg-type]
    ctrl_c.press()
    assert task.cancelled() and capsys.readouterr().err == f"evalctl: {CtrlC.FIRST}\n"
    ctrl_c.press()
    assert capsys.readouterr().err == f"evalctl: {CtrlC.SECOND}\n"
    with pytest.raises(KeyboardInterrupt):
        ctrl_c.press()


async def test_the_first_ctrl_c_says_when_no_session_is_in_flight(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every planned session reported (``RunReport.all_reported``): the first press says it cuts
    the end-of-run wait; before that (or with nothing planned: one process) it says it cuts the
    sessions in flight."""
    from engine.core.model import SessionResult
    from engine.results.outcomes import outcome
    from engine.results.run_report import RunReport
    from engine.run.runner import CtrlC

    report = RunReport(tmp_path)
    cases = ((None, 1, CtrlC.FIRST), (2, 1, CtrlC.FIRST), (2, 2, CtrlC.FIRST_REPORTED))
    for planned, reported, line in cases:
        report.planned = planned
        report.outcomes = [outcome(SessionResult("s", n, "exit"), None) for n in range(reported)]
        task = asyncio.get_running_loop().create_future()
        ctrl_c = CtrlC(task)  # type: ignore[arg-type]
        ctrl_c.watch(report)
        ctrl_c.press()
        assert task.cancelled() and capsys.readouterr().err == f"evalctl: {line}\n", (planned, reported)


def test_ctrl_c_while_the_outcome_is_printed_keeps_the_resume_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A second Ctrl-C that lands after the run's loop ended, while the table of an interrupted
    run is printed, only says the rest is coming (before, the default handler quit there: no table,
    no `interrupted; finished results kept in` hint, which is what a second press must not lose)."""
    from engine.commands import run as run_verb
    from engine.run.runner import CtrlC

    real_run_cli, real_print = run_verb.run_cli, run_verb.print_outcome

    def interrupted_run(opts):  # type: ignore[no-untyped-def]
        report = real_run_cli(opts)
        report.interrupted, report.ctrl_c_presses = True, 1  # as if the first Ctrl-C stopped it
        return report

    def pressed_while_printing(*args, **kwargs):  # type: ignore[no-untyped-def]
        signal.raise_signal(signal.SIGINT)  # the second press
        return real_print(*args, **kwargs)

    monkeypatch.setattr(run_verb, "run_cli", interrupted_run)
    monkeypatch.setattr(run_verb, "print_outcome", pressed_while_printing)
    opts = run_options(*SHOP, output_dir=tmp_path / "run", progress=False, quiet=True)
    try:
        code = run_verb.run(opts)
    except KeyboardInterrupt:
        pytest.fail("the second Ctrl-C quit while the outcome was printed")
    assert code == 130
    err = capsys.readouterr().err
    assert f"evalctl: {CtrlC.SECOND}" in err
    assert f"interrupted; finished results kept in {tmp_path / 'run'}" in err
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


async def test_serve_runs_a_built_in_side_as_its_own_process(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        _cli(
            "serve",
            "agent",
            "--port",
            "0",
            "--spec-dir",
            str(MOCK_SPEC_DIR),
            "--data-root",
            str(MOCK_DATA_ROOT),
        ),
        cwd=REPO,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        preexec_fn=_sigint_default,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        match = re.search(r"serving the agent side \(replay\) on (ws://127\.0\.0\.1:\d+)", line)
        assert match, line
        names = ("mock__cancel_order", "mock__shipped_refusal")
        opts = run_options(*SHOP, scenarios=names, agent=match.group(1), output_dir=tmp_path, progress=False)
        report = await run(opts)
        assert sorted(r.scenario_name for r, _ in report.results()) == list(names)
        assert [r.stop_reason for r, _ in report.results()] == ["exit", "exit"]
        assert all(m and m.signals.db_state_match is True for _, m in report.results())
        assert all(r.agent_backend == "replay" for r, _ in report.results())
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    assert proc.returncode == 0


def test_run_json_records_every_option(tmp_path: Path) -> None:
    out = tmp_path / "run"
    argv = [*SHOP_RUN, "--no-progress", "--output-dir", str(out),
            "--scenarios", "mock__cancel_order", "--strict-match", "--max-tool-calls", "7",
            "--judge-threshold", "0.5"]  # fmt: skip
    assert cli.main(argv) == 0
    args = json.loads((out / "run.json").read_text())["args"]
    assert args["max_tool_calls_per_turn"] == 7 and args["scenarios"] == ["mock__cancel_order"]
    assert args["scoring"]["strict_match"] is True and args["scoring"]["judge_threshold"] == 0.5
    assert args["output_dir"] == str(out) and args["api_key_env"] == "OPENAI_API_KEY"


async def test_resume_with_scenarios_narrows_the_work_not_the_plan(tmp_path: Path) -> None:
    names = ("mock__cancel_order", "mock__shipped_refusal")
    await run(run_options(*SHOP, scenarios=names, output_dir=tmp_path, progress=False))
    for name in names:
        (tmp_path / name / "metrics.json").unlink()
    again = await run(run_options(*SHOP, scenarios=names[:1], resume=tmp_path, progress=False))
    assert [r.scenario_name for r, _ in again.results()] == ["mock__cancel_order"]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["missing"] == ["mock__shipped_refusal"] and summary["results"] == 1
    with pytest.raises(UsageError, match="mock__late_delivery_credit is not part of the run"):
        await run(run_options(*SHOP, scenarios=("mock__late_delivery_credit",), resume=tmp_path,
                             progress=False))  # fmt: skip


async def test_resume_with_scenarios_outside_the_run_names_them(tmp_path: Path) -> None:
    """Before: the first one was named and the rest counted ('(2 such scenario(s))')."""
    await run(run_options(*SHOP, scenarios=("M1",), output_dir=tmp_path, progress=False))
    with pytest.raises(UsageError) as info:
        await run(run_options(*SHOP, domain_prefix="mock__", resume=tmp_path, progress=False))
    assert str(info.value) == (
        f"--resume: 2 scenarios are not part of the run in {tmp_path}: mock__late_delivery_credit, "
        "mock__shipped_refusal; a resumed run keeps its own selection"
    )


async def test_resume_with_another_spec_dir_names_the_runs_own(tmp_path: Path) -> None:
    out = tmp_path / "run"
    await run(run_options(*SHOP, scenarios=("mock__cancel_order",), output_dir=out, progress=False))
    other = tmp_path / "other_spec"
    shutil.copytree(MOCK_SPEC_DIR, other)
    (other / "scenarios" / "cancel.yaml").unlink()  # another spec dir without the run's scenario
    with pytest.raises(
        UsageError, match=r"was made from .*tests/mock_domain/spec.*resume it with that spec dir"
    ):
        await run(run_options(other, MOCK_DATA_ROOT, resume=out, progress=False))


def test_a_judge_without_its_key_is_refused_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NO_SUCH_JUDGE_KEY", raising=False)
    out = tmp_path / "run"
    code = cli.main([*SHOP_RUN, "--output-dir", str(out),
                     "--judge-model", "j1", "--api-key-env", "NO_SUCH_JUDGE_KEY"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "NO_SUCH_JUDGE_KEY is not set" in err and "judge j1" in err
    assert not out.exists()


@pytest.mark.parametrize("value", ["", " , "], ids=["empty", "only_commas"])
def test_empty_scenarios_option_is_a_usage_error_not_a_full_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    out = tmp_path / "run"
    args = [*SHOP_RUN, "--output-dir", str(out)]
    code = cli.main([*args, "--scenarios", value])
    assert code == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        f"evalctl: --scenarios {value!r} names no scenario (leave it out to run all)"
    ]
    assert not out.exists()


ONE = "mock__cancel_order"


def _run(*args: str) -> int:
    spec = ["run", str(MOCK_SPEC_DIR), "--data-root", str(MOCK_DATA_ROOT)]
    return cli.main([*spec, "--scenarios", ONE, *args])


@pytest.mark.parametrize("url", ["not a url", "127.0.0.1:8000/v1", "ws://127.0.0.1:1"])
def test_base_url_that_is_not_http_is_a_usage_error_before_the_run(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    url: str,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    out = tmp_path / "run"
    args = ["--agent", "openai:some-model", "--base-url", url, "--output-dir", str(out)]
    assert _run(*args) == 2
    assert capsys.readouterr().err.strip() == f"evalctl: --base-url {url!r} is not an http:// or https:// URL"
    assert not out.exists()


def test_sigterm_stops_like_ctrl_c_and_keeps_the_summary(tmp_path: Path) -> None:
    from engine.run.runner import CtrlC

    out = tmp_path / "run"
    argv = [str(REPO / ".venv/bin/evalctl"), *SHOP_RUN, "--trials", str(TRIALS)]
    argv += ["--output-dir", str(out), "--replay-latency", "0.3", "--no-progress", "--concurrency", "2"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not list(out.glob("*/trial_*/metrics.json")):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=90)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert f"evalctl: interrupted; finished results kept in {out}" in err
    # the first Ctrl-C's line (before: a SIGTERM printed only the closing ``interrupted``)
    assert err.splitlines().count(f"evalctl: {CtrlC.FIRST}") == 1, err
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["interrupted"] is True and summary["missing"]


SPINNING_AGENT = """
from pathlib import Path


def make(session, tools):
    async def turn(line):
        Path(__file__).with_suffix(".spinning").touch()
        while True:  # never awaits: the event loop is stuck in here
            pass

    return turn
"""


def test_three_ctrl_c_quit_a_run_whose_agent_never_yields(tmp_path: Path) -> None:
    """Before: the presses went through the event loop, which an in-process agent spinning without
    awaiting never lets turn: neither Ctrl-C nor --turn-timeout stopped the run (only kill -9)."""
    import queue
    import subprocess
    import sys
    import threading

    from engine.run.runner import CtrlC
    from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR, REPO

    agent = tmp_path / "spin.py"
    agent.write_text(SPINNING_AGENT)
    proc = subprocess.Popen(
        [sys.executable, str(REPO / "cli.py"), "run", str(MOCK_SPEC_DIR), "--data-root", str(MOCK_DATA_ROOT),
         "--agent", f"python:{agent}:make", "--output-dir", str(tmp_path / "run"), "--no-progress",
         "--workers", "1"],
        cwd=REPO, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        marker = agent.with_suffix(".spinning")
        for _ in range(1200):  # the agent says when it is stuck (no timing: its file)
            if marker.exists() or proc.poll() is not None:
                break
            time.sleep(0.05)
        assert marker.exists(), "the agent never ran"
        assert proc.stderr is not None
        lines: queue.Queue[str] = queue.Queue()
        reader = threading.Thread(target=lambda: [lines.put(x) for x in proc.stderr], daemon=True)  # type: ignore[union-attr]
        reader.start()
        for expected in (CtrlC.FIRST, CtrlC.SECOND):
            proc.send_signal(signal.SIGINT)
            line = ""
            while line.strip() != f"evalctl: {expected}":
                line = lines.get(timeout=60)  # a generous bound on an answer that takes milliseconds
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
        reader.join(timeout=10)
        rest = "".join(lines.queue)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130 and f"evalctl: {CtrlC.QUIT}" in rest
