"""Regression tests for inputs found to break evalctl (hostile specs, bad data, bad tool calls).

Each test pins the behaviour after a fix: a clear ``file:line`` problem or a structured error
result, never a hang, a traceback or a corrupted DB.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import websockets

import cli
from engine.backends.replay import ReplayFactory
from engine.dbhash import db_hash
from engine.domains.registry import load_domain
from engine.errors import SpecError
from engine.model import Scenario
from engine.protocol import ProtocolError, decode
from engine.runner import session_setup
from engine.session import SessionLimits, run_session
from engine.sides import builtin_side
from engine.toolruntime import ToolRuntime
from engine.yamlload import YamlSyntaxError, load_yaml, parse_yaml
from tests.conftest import REPO, SPEC_DIR

BOMB = "\n".join(
    [
        'a: &a ["x","x","x","x","x","x","x","x","x"]',
        *(f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]" for p, c in zip("abcdefgh", "bcdefghi", strict=True)),
    ]
)


def test_yaml_alias_bomb_is_refused_quickly() -> None:
    started = time.perf_counter()
    with pytest.raises(YamlSyntaxError) as info:
        parse_yaml(BOMB, "bomb.yaml")
    assert time.perf_counter() - started < 5
    assert "alias bomb" in info.value.problem.message
    assert info.value.problem.file == "bomb.yaml"


@pytest.mark.parametrize("text", ["name: &a [*a]\n", "a: &a\n  b: *a\n"], ids=["list", "mapping"])
def test_yaml_recursive_alias_is_a_problem_not_a_recursion_error(text: str) -> None:
    with pytest.raises(YamlSyntaxError) as info:
        parse_yaml(text, "rec.yaml")
    assert "recursive alias" in info.value.problem.message
    assert info.value.problem.line == 1


def test_yaml_aliases_in_moderation_still_work() -> None:
    doc = parse_yaml("base: &b {x: 1}\nother: *b\n", "ok.yaml")
    assert doc.data == {"base": {"x": 1}, "other": {"x": 1}}


def _spec_copy(tmp_path: Path) -> Path:
    target = tmp_path / "spec"
    shutil.copytree(SPEC_DIR, target)
    return target


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("{% for i in range(10**9) %}{% endfor %}", "Range too big"),
        ("{{ 1 // 0 }}", "by zero"),
        ("{{ {}['missing_key'].x }}", "no attribute 'missing_key'"),
        ("{{ ''.__class__.__mro__ }}", "unsafe"),
        ("{{ 'x' * 10**10 }}", "repetition over"),
        ("{{ [1, 2] * 10**9 }}", "repetition over"),
        ("{{ 7 ** 100000000 }}", "exponent over"),
    ],
    ids=[
        "huge_range",
        "zero_division",
        "missing_key",
        "sandbox_escape",
        "string_bomb",
        "list_bomb",
        "power_bomb",
    ],
)
def test_template_runtime_error_is_a_spec_problem(
    tmp_path: Path, data_root: Path, line: str, expected: str
) -> None:
    spec = _spec_copy(tmp_path)
    template = (REPO / "templates" / "agent.md.j2").read_text(encoding="utf-8")
    (spec / "agent.md.j2").write_text(template + line + "\n", encoding="utf-8")
    with pytest.raises(SpecError) as info:
        load_domain(spec, data_root)
    lines = [str(p) for p in info.value.problems]
    assert any("agent.md.j2:" in s and expected in s for s in lines), lines


def _data_copy(tmp_path: Path, data_root: Path) -> Path:
    target = tmp_path / "data"
    shutil.copytree(data_root, target)
    return target


AGENT_CONFIG = "eva-0.1.3/configs/agents/airline_agent.yaml"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("- just\n- a list\n", "holds a list, not a mapping with a 'tools' list"),
        ("tools: [\n", "is not valid YAML: while parsing"),
    ],
    ids=["config_is_a_list", "config_bad_yaml"],
)
def test_agent_config_of_the_wrong_shape_is_one_line_problem(
    tmp_path: Path, data_root: Path, content: str, expected: str
) -> None:
    root = _data_copy(tmp_path, data_root)
    (root / AGENT_CONFIG).write_text(content, encoding="utf-8")
    with pytest.raises(SpecError) as info:
        load_domain(SPEC_DIR, root)
    lines = [str(p) for p in info.value.problems]
    assert any("tools.yaml:" in s and "$.tool_descriptions_from" in s and expected in s for s in lines), lines
    assert all("\n" not in s for s in lines)


def test_truncated_jsonl_dataset_names_json_and_the_line(tmp_path: Path, data_root: Path) -> None:
    root = _data_copy(tmp_path, data_root)
    dataset = root / "eva-0.1.3/data/airline_dataset.jsonl"
    lines = dataset.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[2] = lines[2][: len(lines[2]) // 2] + "\n"
    dataset.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(SpecError) as info:
        load_domain(SPEC_DIR, root)
    (problem,) = [str(p) for p in info.value.problems if "$.dataset.path" in str(p)]
    assert "is not valid JSON: " in problem and "line 3 column" in problem, problem


@pytest.fixture(scope="module")
def scenario_112(data_root: Path) -> Scenario:
    return next(s for s in load_domain(SPEC_DIR, data_root).scenarios if s.eva_id == "1.1.2")


CREDIT = (
    '{"confirmation_number": "ZK3FFW", "passenger_id": "PAX001", "amount": %s, "credit_reason": "goodwill"}'
)


@pytest.mark.parametrize("amount", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_non_finite_amount_is_refused_and_db_unchanged(scenario_112: Scenario, amount: str) -> None:
    db = scenario_112.fresh_db()
    before = db_hash(db, scenario_112.domain.hash_rules)
    runtime = ToolRuntime(scenario_112.tools, db)
    outcome = runtime.call("issue_travel_credit", CREDIT % amount)
    assert outcome.result == {
        "status": "error",
        "error_type": "invalid_parameter",
        "message": "Invalid or missing parameter 'amount': Input should be a finite number",
    }
    assert db_hash(db, scenario_112.domain.hash_rules) == before
    assert runtime.actions == []
    json.dumps(db, allow_nan=False)  # the DB stays strict JSON


def test_finite_amount_still_issues_credit(scenario_112: Scenario) -> None:
    runtime = ToolRuntime(scenario_112.tools, scenario_112.fresh_db())
    assert runtime.call("issue_travel_credit", CREDIT % "25").result["status"] == "success"


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("get_reservation", {"confirmation_number": "A" * 1_000_000, "last_name": "Rodriguez"}),
        ("get_reservation", {"last_name": "B" * 1_000_000}),
        ("x" * 1_000_000, {}),
    ],
    ids=["bad_value", "missing_with_huge_other", "huge_tool_name"],
)
def test_huge_inputs_are_not_echoed_whole(scenario_112: Scenario, name: str, arguments: dict) -> None:
    outcome = ToolRuntime(scenario_112.tools, scenario_112.fresh_db()).call(name, arguments)
    assert outcome.result["status"] == "error"
    assert len(outcome.result["message"]) < 1000
    assert "chars)" in outcome.result["message"]


@pytest.mark.parametrize("raw", ["[" * 100_000 + "]" * 100_000, '{"a":' * 5000 + "1" + "}" * 5000])
def test_deeply_nested_arguments_are_invalid_arguments(scenario_112: Scenario, raw: str) -> None:
    outcome = ToolRuntime(scenario_112.tools, scenario_112.fresh_db()).call("get_reservation", raw)
    assert outcome.result == {
        "status": "error",
        "error_type": "invalid_arguments",
        "message": "Tool arguments are nested too deeply",
    }


# --- sides that misbehave over the WebSocket ----------------------------------------------------


@pytest.mark.parametrize(
    ("frame", "code", "needle"),
    [
        ("[" * 100_000 + "]" * 100_000, "bad_json", "nested too deeply"),
        (
            json.dumps(
                {
                    "v": 1,
                    "type": "tool.call",
                    "id": "a",
                    "reply_to": "e",
                    "call_id": "c",
                    "name": "x",
                    "arguments": {"k": "v" * 1_000_000},
                }
            ),
            "bad_message",
            "chars)",
        ),
    ],
    ids=["deep_json", "schema_error_quoting_a_huge_value"],
)
def test_bad_frames_give_short_typed_errors(frame: str, code: str, needle: str) -> None:
    with pytest.raises(ProtocolError) as info:
        decode(frame)
    assert info.value.code == code and needle in info.value.message
    assert len(info.value.message) < 2100


def _agent_sending(frame: str) -> Callable[[Any], Awaitable[None]]:
    async def handler(ws: Any) -> None:
        with contextlib.suppress(websockets.ConnectionClosed):
            start = json.loads(await ws.recv())
            ready = {"v": 1, "type": "session.ready", "id": "a0", "reply_to": start["id"]}
            await ws.send(json.dumps(ready))
            await ws.recv()  # turn.request
            await ws.send(frame)
            await ws.recv()

    return handler


HUGE_ERROR = json.dumps(
    {"v": 1, "type": "error", "id": "z", "code": "backend_error", "message": "E" * 3_000_000}
)


@pytest.mark.parametrize(
    ("frame", "expected"),
    [
        (
            "[" * 100_000 + "]" * 100_000,
            "agent side broke the protocol: bad_json: frame is nested too deeply",
        ),
        (HUGE_ERROR, "agent side reported backend_error: EEEE"),
    ],
    ids=["deep_json", "huge_error_message"],
)
async def test_misbehaving_agent_ends_its_session_with_a_short_error(
    scenario_112: Scenario, frame: str, expected: str
) -> None:
    async with websockets.serve(_agent_sending(frame), "127.0.0.1", 0, max_size=None) as server:
        port = server.sockets[0].getsockname()[1]
        async with builtin_side(ReplayFactory({scenario_112.name: scenario_112})) as user_uri:
            result = await run_session(
                scenario_112,
                session_setup(scenario_112),
                f"ws://127.0.0.1:{port}",
                user_uri,
                SessionLimits(max_duration_s=30, turn_timeout_s=5),
            )
    assert result.stop_reason == "error"
    assert (result.error or "").startswith(expected), result.error
    assert len(result.error or "") < 2100
    assert result.final_db == scenario_112.fresh_db()


# --- CLI misuse ---------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["", " , "], ids=["empty", "only_commas"])
def test_empty_scenarios_option_is_a_usage_error_not_a_full_run(
    tmp_path: Path, data_root: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    out = tmp_path / "run"
    args = ["run", str(SPEC_DIR), "--data-root", str(data_root), "--output-dir", str(out)]
    code = cli.main([*args, "--scenarios", value])
    assert code == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        f"evalctl: --scenarios {value!r} names no scenario (leave it out to run all)"
    ]
    assert not out.exists()


# --- run directories that would mix or lose results ---------------------------------------------

ONE = "eva_airline__1_1_3"


def _run(data_root: Path, *args: str) -> int:
    return cli.main(["run", str(SPEC_DIR), "--data-root", str(data_root), "--scenarios", ONE, *args])


def test_second_run_into_the_same_output_dir_is_refused(
    tmp_path: Path, data_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    assert _run(data_root, "--output-dir", str(out), "--no-progress") == 0
    metrics = (out / ONE / "metrics.json").read_bytes()
    capsys.readouterr()
    assert _run(data_root, "--output-dir", str(out), "--agent", "ws://127.0.0.1:1", "--no-progress") == 2
    assert capsys.readouterr().err.strip() == (
        f"evalctl: {out} already holds a run; complete it with --resume {out}, or give another --output-dir"
    )
    assert (out / ONE / "metrics.json").read_bytes() == metrics  # the first run's result is intact


def test_resume_of_a_directory_that_is_not_a_run_writes_nothing(
    tmp_path: Path, data_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "notes.txt").write_text("mine\n", encoding="utf-8")
    assert _run(data_root, "--resume", str(tmp_path), "--no-progress") == 2
    assert "is not an evalctl run directory" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_resume_with_other_trials_is_refused(
    tmp_path: Path, data_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    assert _run(data_root, "--output-dir", str(out), "--trials", "2", "--no-progress") == 0
    capsys.readouterr()
    assert _run(data_root, "--resume", str(out), "--no-progress") == 2
    assert capsys.readouterr().err.strip() == (
        f"evalctl: --resume: {out} was run with --trials 2; resume it with --trials 2"
    )
    assert not (out / ONE / "metrics.json").exists()  # no single-trial result beside the trial ones
    assert _run(data_root, "--resume", str(out), "--trials", "2", "--no-progress") == 0
    assert "2 already complete (skipped)" in capsys.readouterr().out


def test_a_run_marks_its_directory_before_the_first_result(tmp_path: Path, data_root: Path) -> None:
    out = tmp_path / "run"
    assert _run(data_root, "--output-dir", str(out), "--no-progress") == 0
    invocations = json.loads((out / "run.json").read_text(encoding="utf-8"))["invocations"]
    assert len(invocations) == 1 and invocations[0]["finished_at"] and not invocations[0]["interrupted"]


def test_output_dir_that_cannot_be_created_is_one_line(
    tmp_path: Path, data_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("", encoding="utf-8")
    assert _run(data_root, "--output-dir", str(blocker / "run"), "--no-progress") == 1
    assert capsys.readouterr().err.strip() == (
        f"evalctl: cannot write the run directory {blocker / 'run'}: Not a directory"
    )


def test_disk_full_at_the_summary_is_one_line(
    tmp_path: Path, data_root: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(run_dir: Path, info: dict[str, Any]) -> dict[str, Any]:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("engine.results.finish_run", full)
    out = tmp_path / "run"
    assert _run(data_root, "--output-dir", str(out), "--no-progress") == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"evalctl: cannot write the run summary in {out}: No space left on device;")
    assert "Traceback" not in "\n".join(err)
    assert (out / ONE / "metrics.json").is_file()  # the session's own result was kept


@pytest.mark.parametrize("url", ["not a url", "127.0.0.1:8000/v1", "ws://127.0.0.1:1"])
def test_base_url_that_is_not_http_is_a_usage_error_before_the_run(
    tmp_path: Path,
    data_root: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    url: str,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    out = tmp_path / "run"
    args = ["--agent", "openai:some-model", "--base-url", url, "--output-dir", str(out)]
    assert _run(data_root, *args) == 2
    assert capsys.readouterr().err.strip() == f"evalctl: --base-url {url!r} is not an http:// or https:// URL"
    assert not out.exists()


@pytest.mark.parametrize(
    "moved", ["scenarios/1.1.2.yml", "scenarios/extra/1.1.2.yaml"], ids=["yml_suffix", "subfolder"]
)
def test_scenario_file_that_would_be_skipped_is_reported(tmp_path: Path, data_root: Path, moved: str) -> None:
    spec = _spec_copy(tmp_path)
    (spec / moved).parent.mkdir(parents=True, exist_ok=True)
    (spec / "scenarios/1.1.2.yaml").rename(spec / moved)
    with pytest.raises(SpecError) as info:
        load_domain(spec, data_root)
    (problem,) = info.value.problems
    assert problem.file.endswith(moved) and "not loaded" in problem.message


def test_spec_file_that_is_a_fifo_or_a_device_is_refused_not_read(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    zero = tmp_path / "zero.yaml"
    zero.symlink_to("/dev/zero")
    for path in (fifo, zero):
        with pytest.raises(YamlSyntaxError) as info:
            load_yaml(path)  # would block (FIFO) or fill memory (/dev/zero) if read
        assert info.value.problem.message == "cannot read file: not a regular file"


def test_oversized_spec_file_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    with big.open("wb") as fh:
        fh.truncate(11 * 1024 * 1024)
    with pytest.raises(YamlSyntaxError) as info:
        load_yaml(big)
    assert "over the 10485760 limit" in info.value.problem.message


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
    tmp_path: Path, data_root: Path, capsys: pytest.CaptureFixture[str], content: str, expected: str
) -> None:
    out = tmp_path / "run"
    assert _run(data_root, "--output-dir", str(out), "--no-progress") == 0
    (out / "summary.json").write_text(content, encoding="utf-8")
    capsys.readouterr()
    assert cli.main(["report", str(out)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"evalctl: {out / 'summary.json'}: ") and expected in line, line


def test_diff_with_a_damaged_final_db_says_so(
    tmp_path: Path, data_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    assert _run(data_root, "--output-dir", str(out), "--no-progress") == 0
    (out / ONE / "final_db.json").write_text('{"reservations": ', encoding="utf-8")
    capsys.readouterr()
    assert cli.main(["diff", str(out), ONE]) == 0
    text = capsys.readouterr().out
    assert "DB: final_db.json unreadable (damaged file?); no DB diff" in text
    assert "never reached the tools" not in text


def test_resume_keeps_the_original_selection(
    tmp_path: Path, data_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    assert _run(data_root, "--output-dir", str(out), "--no-progress") == 0
    capsys.readouterr()
    resume = ["run", str(SPEC_DIR), "--data-root", str(data_root), "--resume", str(out), "--no-progress"]
    assert cli.main(resume) == 0  # no --scenarios: the run's own selection, not all 50
    assert "1 already complete (skipped)" in capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["results"] == 1 and not summary["missing"]
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == [ONE]


def test_data_root_that_is_a_file_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a_file = tmp_path / "data.tar"
    a_file.write_bytes(b"")
    assert cli.main(["validate", str(SPEC_DIR), "--data-root", str(a_file)]) == 1
    assert capsys.readouterr().err.strip() == (
        f"evalctl: data root {a_file} (from --data-root) is not a directory; "
        "run `make data` or pass --data-root DIR"
    )


def test_sigterm_stops_like_ctrl_c_and_keeps_the_summary(tmp_path: Path, data_root: Path) -> None:
    out = tmp_path / "run"
    argv = [str(REPO / ".venv/bin/evalctl"), "run", str(SPEC_DIR), "--data-root", str(data_root)]
    argv += ["--output-dir", str(out), "--replay-latency", "0.3", "--no-progress", "--concurrency", "2"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not list(out.glob("*/metrics.json")):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert f"evalctl: interrupted; finished results kept in {out}" in err
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["interrupted"] is True and summary["missing"]


def test_runs_started_in_the_same_second_get_their_own_default_dirs(
    tmp_path: Path, data_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    stamp = "20260101-000000"

    class Frozen(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> datetime:
            return datetime(2026, 1, 1, tzinfo=tz)

    monkeypatch.setattr("engine.rundir.datetime", Frozen)
    assert _run(data_root, "--no-progress") == 0
    assert _run(data_root, "--no-progress") == 0
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == [stamp, f"{stamp}-2"]
    for name in (stamp, f"{stamp}-2"):
        assert (tmp_path / "runs" / name / ONE / "metrics.json").is_file()


def test_carry_over_field_typo_is_a_spec_problem(tmp_path: Path, data_root: Path) -> None:
    # the gold traces restore bags and meals themselves, so gold replay cannot catch this typo
    spec = _spec_copy(tmp_path)
    tools = spec / "tools.yaml"
    text = tools.read_text(encoding="utf-8")
    tools.write_text(
        text.replace("[bags_checked, meal_request]", "[bag_checked, meal_request]"), encoding="utf-8"
    )
    with pytest.raises(SpecError) as info:
        load_domain(spec, data_root)
    (problem,) = info.value.problems
    assert problem.json_path == "$.tools[rebook_flight].options.carry_over_fields[0]"
    assert "'bag_checked' is not one of ['seat', 'bags_checked', 'meal_request']" in problem.message


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf"])
def test_non_finite_number_in_a_spec_is_a_problem(value: str) -> None:
    doc = parse_yaml(f"name: x\nmax_duration: {value}\n", "domain.yaml")
    (problem,) = doc.problems
    assert (problem.line, problem.json_path) == (2, "$.max_duration")
    assert problem.message == f"{value!r} is not a finite number"


def test_nan_max_duration_fails_validation(tmp_path: Path, data_root: Path) -> None:
    # max_duration .nan passed the schema (NaN <= 0 is false) and timed out every session at once
    spec = _spec_copy(tmp_path)
    domain = spec / "domain.yaml"
    domain.write_text(domain.read_text(encoding="utf-8").replace("max_duration: 900", "max_duration: .nan"))
    with pytest.raises(SpecError) as info:
        load_domain(spec, data_root)
    assert [p.json_path for p in info.value.problems] == ["$.max_duration"]


def test_language_without_person_values_is_a_spec_problem(tmp_path: Path, data_root: Path) -> None:
    # the gold trace would keep <LAST_NAME> placeholders and replay/user sides would say them
    spec = _spec_copy(tmp_path)
    domain = spec / "domain.yaml"
    domain.write_text(domain.read_text(encoding="utf-8").replace("language: en", "language: xx"))
    with pytest.raises(SpecError) as info:
        load_domain(spec, data_root)
    (problem,) = info.value.problems
    assert problem.json_path == "$.language" and problem.file.endswith("domain.yaml")
    assert problem.message == "language 'xx' has no person values in the gold dataset (en, fr, fr-CA)"


def test_french_is_a_language_of_the_dataset(tmp_path: Path, data_root: Path) -> None:
    spec = _spec_copy(tmp_path)
    domain = spec / "domain.yaml"
    domain.write_text(domain.read_text(encoding="utf-8").replace("language: en", "language: fr"))
    assert len(load_domain(spec, data_root).scenarios) == 50


def test_non_utf8_spec_names_the_line(tmp_path: Path) -> None:
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b'name: x\neva_id: "1.1.2"\ndescription: caf\xe9\n')
    with pytest.raises(YamlSyntaxError) as info:
        load_yaml(latin)
    assert info.value.problem.line == 3
    assert (
        info.value.problem.message
        == "not UTF-8: byte 0xe9 (invalid continuation byte); save the file as UTF-8"
    )
