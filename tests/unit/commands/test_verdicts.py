"""Issue #9 §1 and §3: an infrastructure failure gives the verdict ``error`` (never a pass, never the
agent's failure), the rates leave it out and say so, the exit code is 3; a resume keeps the run's
settings and runs again what has no verdict. Real runs of the mock shop domain (replay and
scripted model sides on loopback)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import scipy.stats

from cli import main
from engine.core.records.summary import SummaryRecord
from engine.run.runner import RunReport, run_cli
from engine.scoring.summary import build_summary, render_summary_text
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR, REPO
from tests.mock_domain.judge_server import scripted_judge
from tests.record_helpers import metrics_row
from tests.runtime_helpers import ScriptedOpenAI, Step, completion, run_options

SPEC, DATA = MOCK_SPEC_DIR, MOCK_DATA_ROOT
LATE = "mock__late_delivery_credit"  # gates on judge_passed, nl_assertion and clean_exit (and more)


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "local")


def _cli(out: Path, *extra: str) -> int:
    return main(
        ["run", str(SPEC), "--data-root", str(DATA), "--output-dir", str(out), "--no-progress", *extra]
    )


def _metrics(run_dir: Path) -> dict[str, dict[str, Any]]:
    return {p.parent.name: json.loads(p.read_text()) for p in run_dir.glob("*/metrics.json")}


def _summary(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "summary.json").read_text())


def test_a_gating_judge_that_fails_is_an_error_not_a_pass(tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "run"
    with scripted_judge([503]) as (url, _):  # reachable (its check passes), every request fails
        code = _cli(out, "--judge-model", "j", "--judge-base-url", url, "--fail-under", "1.0")
    err = capsys.readouterr().err
    # before: the late-delivery scenario (gated on judge_passed + clean_exit) scored PASS, exit 0;
    # then (issue #9) exit 3; now --fail-under judges the strict rate (the error counts as a
    # failure: 2/3 is below 1.0), and the error is still said
    assert code == 1
    assert "evalctl: strict success rate 66.7% is below --fail-under 100.0%" in err
    m = _metrics(out)
    assert m[LATE]["is_successful"] == "error" and m[LATE]["error_cause"]["source"] == "judge"
    assert "503" in m[LATE]["error_cause"]["message"]
    cancel = m["mock__cancel_order"]  # the judge does not gate it: its failure is only recorded
    assert cancel["is_successful"] is True and cancel["error_cause"] is None and cancel["judge_error"]
    summary = _summary(out)
    assert summary["errors"] == 1 and summary["first_error"].startswith(f"{LATE}: judge: ")
    assert summary["overall"] == {
        "passed": 2,
        "failed": 0,
        "not_applicable": 0,
        "errors": 1,
        "total": 2,
        "rate": 1.0,
        "ci": {"low": pytest.approx(0.3423802275), "high": 1.0, "method": "wilson"},  # Wilson of 2/2
    }
    assert summary["signals"]["db_state_match"]["errors_left_out"] == 1
    text = (out / "all_summary.txt").read_text()
    assert "Overall Success Rate: 100.0% (2/2 scenarios; 1 error left out)" in text
    assert "Strict Success Rate (errors count as failures): 66.7% (2/3 scenarios; 1 error)" in text
    strict = dict(summary["strict"])
    ci = strict.pop("ci")
    assert strict == {"passed": 2, "failed": 0, "errors": 1, "total": 3, "rate": 2 / 3}
    wilson = scipy.stats.binomtest(2, 3).proportion_ci(0.95, method="wilson")  # the error as a failure
    assert (ci["low"], ci["high"]) == pytest.approx((wilson.low, wilson.high))
    assert "ERRORS: 1 result(s) without a verdict" in text and f"first: {LATE}: judge: " in text
    assert f"{LATE}: ERROR judge: " in text
    assert "1 result(s) without a verdict (the judge failed" in err and "--allow-errors" in err
    assert "`evalctl rescore` the run" in err
    assert main(["diff", str(out)]) == 0
    shown = capsys.readouterr().out
    # before: the error result's unmet signals read "failing signals", as if the agent failed
    assert (
        f"== {LATE}: ERROR" in shown
        and "no verdict: judge: " in shown
        and "(the judge, not the agent" in shown
    )
    assert "signals not met (not a verdict): " in shown


def test_allow_errors_and_fail_under_decide_the_exit_code_over_results_with_a_verdict() -> None:
    rows = [metrics_row("a"), metrics_row("b", is_successful=False, failed=("clean_exit",))]
    err = metrics_row("c", is_successful="error", error_cause=_cause())
    report = RunReport(Path("x"), summary=build_summary([*rows, err], {"trials": 1}))
    assert report.exit_code() == 3 and report.exit_code(fail_under=0.1) == 3  # strict 1/3 meets 0.1
    # --fail-under judges the strict rate (errors count as failures: 1/3) unless --allow-errors;
    # a run below its bar that way is below it whatever its errors hide (before: exit 3)
    assert report.exit_code(fail_under=0.4) == 1
    assert report.exit_code(allow_errors=True) == 0
    assert report.exit_code(fail_under=0.5, allow_errors=True) == 0  # 1/2 with a verdict: 50%
    assert report.exit_code(fail_under=0.6, allow_errors=True) == 1
    assert RunReport(Path("x"), summary=build_summary(rows, {"trials": 1})).exit_code() == 0


def _cause() -> Any:
    from engine.core.records.common import ErrorCause

    return ErrorCause("user_simulator", "user side reported backend_error: HTTP 503")


def test_a_string_diagnostic_is_reported_and_counted_as_not_applicable() -> None:
    from engine.core.records.metrics import Breakdown

    labelled = [
        metrics_row(
            n, signals={"diagnostics": {"tier": v}}, success_breakdown=Breakdown((), (), (), ("tier",))
        )
        for n, v in (("a", "gold"), ("b", True), ("c", None))
    ]
    # before: a plugin diagnostic's string value raised TypeError in the summary
    summary = build_summary(labelled, {"trials": 1})
    assert summary.signals["tier"].passed == 1 and summary.signals["tier"].total == 1
    assert "tier: 100.0% (1/1 scenarios) [95% CI 20.7-100.0%] [diagnostic]" in render_summary_text(summary)


def _route(state: dict[str, Any]) -> Any:
    """Agent requests get a line (10 + 5 tokens); user requests (their tools hold end_call) fail
    with HTTP 503 until ``state["user_ok"]``, then ask for help and hang up on their fourth turn
    (the gold's number of caller turns: an earlier hang-up would break the caller's instructions,
    issue #26)."""

    def route(body: dict[str, Any]) -> Step:
        tools = [t["function"]["name"] for t in body.get("tools") or []]
        if "end_call" not in tools:
            return Step(completion("How can I help you today?"))
        if not state["user_ok"]:
            return Step(status=503)
        if sum(1 for m in body["messages"] if m["role"] == "assistant") < 3:
            return Step(completion("Please help me with my order.", usage=(3, 2)))
        return Step(completion("That is all, thanks.", [("u1", "end_call", "{}")], usage=(3, 2)))

    return route


def _model_run(out: Path, url: str, **changes: Any) -> RunReport:
    options = {
        "spec_dir": SPEC,
        "data_root": DATA,
        "output_dir": out,
        "agent": "openai:m",
        "user": "openai:m",
        "base_url": url,
        "max_retries": 0,
        "scenarios": ("mock__cancel_order", LATE),
        "progress": False,
        "quiet": True,
        **changes,
    }
    return run_cli(run_options(**options))


def test_a_failing_user_simulator_is_an_error_and_a_resume_runs_it_again(tmp_path: Path) -> None:
    out, state = tmp_path / "run", {"user_ok": False}
    with ScriptedOpenAI([], route=_route(state)) as server:
        first = _model_run(out, server.base_url)
        # before: both sessions were the agent's failures, "stalled", 0% overall, exit 0
        assert first.exit_code() == 3 and first.summary is not None
        assert first.summary.errors == 2 and first.summary.overall.total == 0
        for m in _metrics(out).values():
            assert m["is_successful"] == "error" and not m["stalled"]
            assert (
                m["error_cause"]["source"] == "user_simulator" and "HTTP 503" in m["error_cause"]["message"]
            )
        kept = _model_run(out, server.base_url, output_dir=None, resume=out, keep_errors=True)
        assert kept.skipped == 2 and not kept.outcomes and kept.exit_code() == 3
        state["user_ok"] = True
        asked = len(server.requests)
        resumed = run_cli(run_options(spec_dir=SPEC, data_root=DATA, resume=out, progress=False, quiet=True))
        assert len(server.requests) > asked  # the recorded openai sides answered, not replay
    assert resumed.exit_code() == 0 and resumed.summary is not None and resumed.summary.errors == 0
    assert {m["user_backend"] for m in _metrics(out).values()} == {"openai:m"}
    summary, metrics = _summary(out), _metrics(out).values()
    # every attempt's tokens: the failed attempts' agent requests (10 prompt tokens each) included
    now = sum(m["usage"]["agent"]["prompt_tokens"] for m in metrics)
    before = sum(e["prompt_tokens"] for m in metrics for e in m["superseded_usage"] if e["role"] == "agent")
    assert before == 20 and summary["usage"]["agent"]["prompt_tokens"] == now + before
    assert summary["invocations"] == 3
    run = json.loads((out / "run.json").read_text())
    walls = [i["wall_time_s"] for i in run["invocations"]]
    assert [i["command"] for i in run["invocations"]] == ["run", "resume", "resume"]
    assert summary["wall_time_s"] == pytest.approx(sum(walls), abs=0.002)


def test_a_resume_keeps_the_runs_agent_and_refuses_another_setting(tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "run"
    end = Step(completion("Goodbye.", [("c1", "end_conversation", "{}")]))
    with ScriptedOpenAI([end]) as server:
        assert _cli(out, "--agent", "openai:m", "--base-url", server.base_url) == 0
        for name in ("metrics.json", "session.json"):  # as if killed in the middle of that session
            (out / LATE / name).unlink()
        capsys.readouterr()
        for given in (["--agent", "replay"], ["--min-agent-turns", "5"], ["--base-url", "http://x/v1"]):
            assert main(["run", str(SPEC), "--data-root", str(DATA), "--resume", str(out), *given]) == 2
            line = capsys.readouterr().err.strip()
            assert line.startswith(f"evalctl: --resume: the run in {out} was made with {given[0]} ")
            assert f"this resume says {given[0]} {given[1]}" in line and "\n" not in line
        asked = len(server.requests)
        assert main(["run", str(SPEC), "--data-root", str(DATA), "--resume", str(out), "--no-progress"]) == 0
        # before: the resume finished the run with the built-in replay agent
        assert len(server.requests) == asked + 1
    late = _metrics(out)[LATE]
    assert late["agent_backend"] == "openai:m" and late["usage"]["agent"]["model"] == "openai:m"


def test_a_concurrency_the_open_file_limit_cannot_carry_is_refused_up_front(tmp_path: Path) -> None:
    out = tmp_path / "run"
    limited = (
        "import resource, sys; resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256)); "
        "import cli; sys.exit(cli.main(sys.argv[1:]))"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            limited,
            "run",
            str(SPEC),
            "--data-root",
            str(DATA),
            "--trials",
            "20",
            "--output-dir",
            str(out),
            "--concurrency",
            "500",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    # before: 0/500 "cannot connect" sessions scored as the agent's failures, tracebacks, exit 0
    from engine.util.oslimits import files_needed

    replay = {"agent": "replay", "user": "replay"}
    needed = files_needed(60, replay, judge=False)  # three scenarios, twenty trials: 60 sessions
    most = max(n for n in range(1, 60) if files_needed(n, replay, judge=False) <= 256)
    assert needed > 256 and most < 60
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.strip() == (
        f"evalctl: --concurrency 500 (60 sessions at once) needs about {needed} open files, over this "
        f"process's limit of 256 (ulimit -n); give --concurrency {most} or less, or raise the limit"
    )
    assert not out.exists()


def test_the_open_file_check_raises_the_soft_limit_when_the_hard_one_allows() -> None:
    from engine.util.oslimits import check_open_files, files_needed

    assert files_needed(8, {"agent": "replay", "user": "replay"}, judge=False) == 64 + 8 * 4
    assert files_needed(8, {"agent": "openai", "user": "external"}, judge=True) == 64 + 8 * 5
    assert check_open_files(96, 8, limits=(1024, 4096)) == 1024  # enough: left as it is
    assert check_open_files(2064, 500, limits=(1024, 4096)) == 2064  # raised toward the hard limit
    with pytest.raises(Exception, match=r"^--concurrency 500 needs about 2064 .* give --concurrency 48 or"):
        check_open_files(2064, 500, limits=(256, 256))


def test_summary_record_reads_back_error_fields() -> None:
    summary = build_summary(
        [metrics_row("a"), metrics_row("c", is_successful="error", error_cause=_cause())], {}
    )
    assert SummaryRecord.from_json(json.loads(json.dumps(summary.to_json()))) == summary
    [failed] = summary.failed
    assert failed.verdict == "error" and failed.error_cause == _cause()
