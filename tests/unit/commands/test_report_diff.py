"""The report and diff verbs on damaged run directories and on text that is not markup: one clear
line, never a traceback. Each case pins the behaviour after a fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import cli
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR

ONE = "mock__cancel_order"


def _run(*args: str) -> int:
    spec = ["run", str(MOCK_SPEC_DIR), "--data-root", str(MOCK_DATA_ROOT)]
    return cli.main([*spec, "--scenarios", ONE, *args])


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("[]", "not an evalctl summary: JSON list, not an object"),
        ('{"unit": "scenarios"}', "not an evalctl summary: no failed, results, scenarios, signals"),
        ('{"unit": ', "unreadable (Expecting value"),
    ],
    ids=["list", "missing_keys", "torn"],
)
def test_report_on_a_damaged_summary_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, expected: str
) -> None:
    out = tmp_path / "run"
    assert _run("--output-dir", str(out), "--no-progress") == 0
    (out / "summary.json").write_text(content, encoding="utf-8")
    capsys.readouterr()
    assert cli.main(["report", str(out)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"evalctl: {out / 'summary.json'}: ") and expected in line, line


def test_diff_with_a_damaged_final_db_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    assert _run("--output-dir", str(out), "--no-progress") == 0
    (out / ONE / "final_db.json").write_text('{"reservations": ', encoding="utf-8")
    capsys.readouterr()
    assert cli.main(["diff", str(out), ONE]) == 0
    text = capsys.readouterr().out
    assert "DB: final_db.json unreadable (damaged file?); no DB diff" in text
    assert "never reached the tools" not in text


def test_report_prints_server_text_and_paths_verbatim(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from engine.commands.report import report
    from engine.scoring.summary import build_summary
    from engine.util.artifacts import write_json
    from tests.record_helpers import metrics_row

    run_dir = tmp_path / "runs [nightly]"
    error = "openai:m: HTTP 400: Error code: 400 - unexpected [/INST] token"
    row = metrics_row(
        "eva_airline__3_1_5",
        1,
        False,
        success_signals=("clean_exit",),
        stop_reason="error",
        error=f"agent side reported backend_error: {error}",
        signals={"judge_error": f"APIStatusError: {error}"},
    )
    summary = build_summary([row], {"trials": 1, "scenarios": ["eva_airline__3_1_5", "x"]}, str(run_dir))
    write_json(run_dir / "summary.json", summary.to_json())
    # before: MarkupError traceback ('[/INST]' read as a closing tag) and 'openai:m:' printed as 'openaiⓂ'
    report(run_dir)
    text = capsys.readouterr().out
    assert f"first: APIStatusError: {error}" in text
    assert f"stop=error: agent side reported backend_error: {error}" in text
    assert "runs [nightly]" in text and "Ⓜ" not in text


def test_pass_hat_k_lines_when_trials_lack_verdicts() -> None:
    from dataclasses import replace

    from rich.console import Console

    from engine.commands.report import summary_table
    from engine.scoring.summary import build_summary, render_summary_text
    from tests.record_helpers import metrics_row

    rows = [
        metrics_row(name, t, verdict)
        for name, verdicts in (("a", (True, True)), ("b", (True, "N/A")))
        for t, verdict in enumerate(verdicts, 1)
    ]
    summary = build_summary(rows, {"trials": 2})
    console = Console(width=200, record=True)
    console.print(summary_table(summary))
    # pass^2 rests on scenario a alone (b has one trial with a verdict); before: '2 scenarios'
    shown = console.export_text()
    lines = {line.split("│")[1].strip(): line for line in shown.splitlines() if "│" in line}
    assert "1 scenarios" in lines["pass^2"] and "2 scenarios" in lines["pass^1"]
    # pass^k in percent like every rate beside it (before: 1.000 next to 100.0-100.0%); the table
    # says which unit its intervals resample (before: "150/150 sessions" beside a 50-scenario CI)
    assert lines["pass^1"].split("│")[2].strip() == "100.0%"
    text = " ".join(shown.split())
    assert (
        "95% CI: by scenario (each of the 2 scenarios is one unit: its 2 trials are not independent draws)"
        in text
    )
    none = build_summary([replace(rows[3], trial=t) for t in (1, 2)], {"trials": 2})
    assert "pass^k over 2 trials: n/a (no trial had a verdict)" in render_summary_text(none)


def test_diff_and_html_report_cope_with_deeply_nested_call_arguments(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # before: `evalctl diff` and `evalctl report --html` died with RecursionError (json.loads in
    # engine/results/diff.py _args, reached from _left_gold_path) on arguments a side nested 100,000 deep
    from engine.domains.registry import plugins
    from engine.results.session_files import gold_path
    from engine.spec.loader import load_domain
    from engine.util.artifacts import read_json, write_json

    out = tmp_path / "run"
    assert _run("--output-dir", str(out), "--no-progress") == 0
    sdir = out / ONE
    write_json(
        sdir / "scenario_config" / "gold_path.json",
        gold_path(load_domain(MOCK_SPEC_DIR, MOCK_DATA_ROOT, plugins=plugins()).scenario(ONE)),
    )
    nested = "[" * 100_000 + "]" * 100_000
    calls = read_json(sdir / "tool_calls.json")
    calls[0]["arguments"] = nested
    write_json(sdir / "tool_calls.json", calls)
    capsys.readouterr()
    assert cli.main(["diff", str(out), ONE]) == 0
    text = capsys.readouterr().out
    assert f"got {calls[0]['name']}([[[[" in text and "... (200000 chars)" in text
    html = tmp_path / "r.html"
    assert cli.main(["report", str(out), "--html", str(html)]) == 0
    assert html.stat().st_size > 0


def test_diff_counts_turns_from_one_and_says_whose_turn_it_names(tmp_path: Path) -> None:
    """A divergence names the agent's own turn when the agent made a call there, and the gold's
    turn when it made none; turns are counted from 1 (tool_calls.json and gold_path.json count
    from 0)."""
    from engine.domains.registry import plugins
    from engine.results.diff import _left_gold_path
    from engine.results.session_files import gold_path
    from engine.spec.loader import load_domain
    from engine.util.artifacts import read_json, write_json

    out = tmp_path / "run"
    assert _run("--output-dir", str(out), "--no-progress") == 0
    sdir = out / ONE
    gold = gold_path(load_domain(MOCK_SPEC_DIR, MOCK_DATA_ROOT, plugins=plugins()).scenario(ONE))
    write_json(sdir / "scenario_config" / "gold_path.json", gold)
    assert _left_gold_path(sdir) == "followed the gold path (every gold tool call, in order)"
    calls = read_json(sdir / "tool_calls.json")
    first = gold["tool_calls"][0]
    calls[0]["arguments"] = '{"order_id": "O-999"}'
    write_json(sdir / "tool_calls.json", calls)
    said = _left_gold_path(sdir)
    assert said is not None and said.startswith(
        f"left the gold path at tool call 1 (the agent's turn {calls[0]['turn'] + 1}): gold {first['name']}("
    )
    write_json(sdir / "tool_calls.json", [])  # the agent made no call at all
    said = _left_gold_path(sdir)
    assert said is not None and said.startswith(
        f"left the gold path at tool call 1 (the gold makes it in agent turn {first['turn'] + 1}): "
    )
    assert "got no call" in said


def test_diff_of_an_unfinished_run_says_results_are_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run killed before some sessions: "no failed scenarios" must not read as "all passed"."""
    out = tmp_path / "run"
    every = ["run", str(MOCK_SPEC_DIR), "--data-root", str(MOCK_DATA_ROOT), "--output-dir", str(out)]
    assert cli.main([*every, "--no-progress"]) == 0
    assert cli.main(["diff", str(out)]) == 0
    finished = capsys.readouterr()
    assert "note:" not in finished.err
    (out / ONE / "metrics.json").unlink()  # what a kill leaves: the folder never completed
    (out / ONE / "session.json").unlink()
    assert cli.main(["diff", str(out)]) == 0
    said = capsys.readouterr()
    assert said.err.strip() == (
        f"note: 1 planned result is missing (the run did not finish); "
        f"`evalctl run {MOCK_SPEC_DIR} --resume {out}` completes it"  # the run's own spec folder
    )
    assert cli.main(["diff", str(out), "--json"]) == 0
    said = capsys.readouterr()
    assert json.loads(said.out) is not None and "1 planned result is missing" in said.err


def test_diff_names_a_stored_session_whose_metrics_were_deleted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Found by a new-user pass: a result whose ``metrics.json`` was deleted (its session stored)
    was left out of ``diff`` without a warning of its own (the closing count was of unreadable
    records, or "1 planned result is missing (the run did not finish)"); ``diff RUN SCENARIO``
    said the scenario did not run."""
    out = tmp_path / "run"
    every = ["run", str(MOCK_SPEC_DIR), "--data-root", str(MOCK_DATA_ROOT), "--output-dir", str(out)]
    assert cli.main([*every, "--no-progress", "--trials", "2"]) == 0
    capsys.readouterr()
    (out / ONE / "trial_1" / "metrics.json").unlink()
    assert cli.main(["diff", str(out)]) == 0
    said = capsys.readouterr()
    hint = f"`evalctl rescore {out}` (or `evalctl run ... --resume {out}`) scores what was stored"
    assert said.err.splitlines() == [
        f"warning: {out / ONE / 'trial_1'}: {ONE} trial 1 has no metrics.json: not scored, left out"
    ]
    note = "note: 1 result not scored (no metrics.json, warned above): left out of this diff"
    assert f"{note}; {hint}" in said.out
    assert "unreadable" not in said.out + said.err and "planned result" not in said.out + said.err
    # the scenario asked for by name: its other trial is shown, the unscored one warned
    assert cli.main(["diff", str(out), ONE]) == 0
    said = capsys.readouterr()
    assert f"== {ONE} (trial 2): PASS" in said.out and f"{ONE} trial 1 has no metrics.json" in said.err
    # with every trial unscored, the scenario is named as not scored, not as one that did not run
    (out / ONE / "trial_2" / "metrics.json").unlink()
    assert cli.main(["diff", str(out), ONE]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{ONE} trial 1 ran but has no metrics.json (not scored); {hint}" in err
    # rescore scores it again: diff is clean
    assert cli.main(["rescore", str(out)]) in (0, 1)
    capsys.readouterr()
    assert cli.main(["diff", str(out)]) == 0
    said = capsys.readouterr()
    assert "not scored" not in said.out + said.err and "warning" not in said.err


def test_piped_tables_are_wide_enough_for_the_signal_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Off a terminal (a pipe, a CI log) rich's 80 columns wrapped the longer signal rows onto two
    lines; the verbs print 120 wide there, or $COLUMNS when set (eva's table:
    tests/domains/eva_airline/test_runs_eva.py)."""
    from engine.commands.console import PIPED_WIDTH, text_console

    monkeypatch.delenv("COLUMNS", raising=False)
    assert text_console().width == PIPED_WIDTH and text_console(stderr=True).width == PIPED_WIDTH
    monkeypatch.setenv("COLUMNS", "90")
    assert text_console().width == 90


@pytest.mark.parametrize("columns", ["0", "-5", "abc", ""])
def test_a_columns_value_that_is_no_width_is_ignored(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], columns: str
) -> None:
    """COLUMNS=0 (some CI shells) made rich print nothing: `evalctl run` showed no rates, no results
    folder and no error line; other values that are no width gave 80 columns."""
    from engine.commands.console import PIPED_WIDTH, text_console

    monkeypatch.setenv("COLUMNS", columns)
    for stderr in (False, True):
        console = text_console(stderr=stderr)
        assert console.width == PIPED_WIDTH
        console.print("results: runs/x", markup=False)
    said = capsys.readouterr()
    assert "results: runs/x" in said.out and "results: runs/x" in said.err
