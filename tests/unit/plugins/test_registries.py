"""A signal and a backend added by a package of their own, through entry points, end to end.

The package is docs/authoring.md's ("Adding a success signal", "Adding a backend": the blocks
marked ``registry``), written into a temporary folder with a ``*.dist-info`` holding its
entry points, as ``pip install`` leaves it; every evalctl command runs in a subprocess with that
folder on PYTHONPATH, so the test process's registries never see it and no engine file changes.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR, REPO
from tests.project.test_docs import GUIDE, marked_blocks

LONG_LINE = "Thank you so much for calling our little shop today, " * 3  # 162 characters
SCENARIOS = ("mock__cancel_order", "mock__late_delivery_credit", "mock__shipped_refusal")
#: The scenario that keeps the domain's success signals (the other two name their own).
GATED = "mock__shipped_refusal"


def _install(root: Path) -> Path:
    """Write the guide's package under ``root`` and its dist-info; returns the site folder."""
    blocks = [b for b in marked_blocks(GUIDE.read_text(encoding="utf-8")) if b.kind == "registry"]
    assert len(blocks) == 4, [b.arg for b in blocks]
    for block in blocks:
        target = root / block.arg
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(block.body, encoding="utf-8")
    package = root / "concise-plugin"
    project = tomllib.loads((package / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    info = root / "site" / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(
        "\n".join(
            f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items())
            for group, eps in project["entry-points"].items()
        ),
        encoding="utf-8",
    )
    return root / "site"


@pytest.fixture(scope="module")
def plugin_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("registries")
    site = _install(root)
    # the test session's own path first entries (the repository, the mock shop's registration) stay
    path = [str(site), str(root / "concise-plugin"), os.environ.get("PYTHONPATH", str(REPO))]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(path)}


def _evalctl(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(REPO / "cli.py"), *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def gated_spec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test shop with the package's signal among the domain's success signals."""
    spec = tmp_path_factory.mktemp("spec") / "mock"
    shutil.copytree(MOCK_SPEC_DIR, spec)
    domain = spec / "domain.yaml"
    text = domain.read_text(encoding="utf-8")
    old = "success_signals: [db_state_match, clean_exit]"
    assert old in text
    domain.write_text(text.replace(old, "success_signals: [db_state_match, concise_agent, clean_exit]"))
    return spec


@pytest.fixture(scope="module")
def scripted_run(
    plugin_env: dict[str, str], gated_spec: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    out = tmp_path_factory.mktemp("runs") / "scripted"
    proc = _evalctl(
        plugin_env,
        *("run", str(gated_spec), "--data-root", str(MOCK_DATA_ROOT), "--output-dir", str(out)),
        *("--agent", f"scripted:{LONG_LINE}", "--no-progress"),
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    (out.parent / "stdout.txt").write_text(proc.stdout, encoding="utf-8")
    return out


def test_the_backend_plays_the_agent_side(scripted_run: Path) -> None:
    for name in SCENARIOS:
        metrics = json.loads((scripted_run / name / "metrics.json").read_text(encoding="utf-8"))
        assert metrics["agent_backend"] == f"scripted:{LONG_LINE.strip()}"
        lines = [
            json.loads(line) for line in (scripted_run / name / "transcript.jsonl").open(encoding="utf-8")
        ]
        said = [e["content"] for e in lines if e["role"] == "agent" and e["type"] == "utterance"]
        assert said == [LONG_LINE.strip()] * 3 + ["Goodbye."], name
        assert metrics["stop_reason"] == "exit" and metrics["agent_turns"] == 4


def test_the_signal_is_in_metrics_and_gates(scripted_run: Path) -> None:
    for name in SCENARIOS:
        metrics = json.loads((scripted_run / name / "metrics.json").read_text(encoding="utf-8"))
        assert metrics["extra_signals"] == {
            "concise_agent": {"value": False, "role": "gating", "longest_agent_line": len(LONG_LINE.strip())}
        }
        where = "failed" if name == GATED else "excluded"
        assert "concise_agent" in metrics["success_breakdown"][where], name
        assert metrics["is_successful"] is False
        assert "concise_agent" not in metrics  # not a top-level key: those are the six's


def test_the_signal_is_in_the_summary(scripted_run: Path) -> None:
    summary = json.loads((scripted_run / "summary.json").read_text(encoding="utf-8"))
    row = summary["signals"]["concise_agent"]
    assert (row["passed"], row["total"], row["rate"], row["role"]) == (0, 3, 0.0, "gating")
    assert list(summary["signals"])[:7] == [
        "is_action_match",
        "db_state_match",
        "db_state_assertion",
        "nl_assertion",
        "judge_passed",
        "clean_exit",
        "concise_agent",
    ]
    printed = (scripted_run.parent / "stdout.txt").read_text(encoding="utf-8")  # the run's own table
    row_re = r"│ concise_agent +│ +0\.0% │ +0\.0-56\.1% │ +0/3 scenarios │ gating +│"
    assert re.search(row_re, printed), printed
    text = (scripted_run / "all_summary.txt").read_text(encoding="utf-8")
    assert "  concise_agent: 0.0% (0/3 scenarios) [95% CI 0.0-56.1%] [gating]\n" in text
    assert f"  {GATED}: concise_agent\n" in text  # its DB is right: only the signal failed


def test_diff_names_the_failing_signal(plugin_env: dict[str, str], scripted_run: Path) -> None:
    proc = _evalctl(plugin_env, "diff", str(scripted_run), GATED)
    assert proc.returncode == 0, proc.stderr
    assert "failing signals: concise_agent" in proc.stdout
    as_json = json.loads(_evalctl(plugin_env, "diff", str(scripted_run), "--json").stdout)
    failed = {d["scenario"]: d["failed_signals"] for d in as_json}
    assert failed[GATED] == ["concise_agent"] and len(failed) == 3


def test_the_html_report_shows_the_signal(
    plugin_env: dict[str, str], scripted_run: Path, tmp_path: Path
) -> None:
    page = tmp_path / "report.html"
    proc = _evalctl(plugin_env, "report", str(scripted_run), "--html", str(page))
    assert proc.returncode == 0, proc.stderr
    html = page.read_text(encoding="utf-8")
    assert '<option value="concise_agent">concise_agent</option>' in html  # the "signal failed" filter
    assert html.count("concise_agent") >= 3 + 1


def test_records_read_without_the_package(scripted_run: Path) -> None:
    # the package uninstalled: the run's report still shows its signal (the record says what it is)
    proc = subprocess.run(
        [sys.executable, str(REPO / "cli.py"), "report", str(scripted_run)],
        cwd=REPO,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "concise_agent" in proc.stdout


def test_a_spec_naming_an_unknown_signal_gets_did_you_mean(
    plugin_env: dict[str, str], gated_spec: Path, tmp_path: Path
) -> None:
    spec = tmp_path / "mock"
    shutil.copytree(gated_spec, spec)
    domain = spec / "domain.yaml"
    domain.write_text(domain.read_text(encoding="utf-8").replace("concise_agent", "concise_agnt"))
    proc = _evalctl(plugin_env, "validate", str(spec), "--data-root", str(MOCK_DATA_ROOT), "--no-replay")
    assert proc.returncode == 1
    assert "'concise_agnt' is not one of" in proc.stdout and "(did you mean 'concise_agent'?)" in proc.stdout
    # without the package the signal is unknown too, and the gated spec fails validation
    bare = dict(os.environ)
    proc = _evalctl(bare, "validate", str(gated_spec), "--data-root", str(MOCK_DATA_ROOT), "--no-replay")
    assert proc.returncode == 1 and "'concise_agent' is not one of" in proc.stdout


def test_an_unknown_scheme_is_bad_input_with_did_you_mean(plugin_env: dict[str, str], tmp_path: Path) -> None:
    proc = _evalctl(
        plugin_env,
        *("run", str(MOCK_SPEC_DIR), "--data-root", str(MOCK_DATA_ROOT), "--output-dir", str(tmp_path / "x")),
        *("--agent", "scriptd:Hello"),
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "evalctl: unknown backend 'scriptd:Hello': expected replay, noop, openai:MODEL, ws://host:port, "
        "rtvi+ws://host:port, python:FILE.py:FACTORY, pipecat:FILE.py:FACTORY, livekit:FILE.py:FACTORY or "
        "scripted:LINE (did you mean 'scripted'?)"
    ]
    assert not (tmp_path / "x").exists()
