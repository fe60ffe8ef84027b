"""scripts/ci_gate.sh, the steps of action.yml, run locally on eva_airline with the agent served by
a fake OpenAI-compatible endpoint on loopback: the JUnit file parses (junitparser), the Markdown
summary is written, and the script exits as docs/cli.md says (1 below the threshold, 2 bad input)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from junitparser import Failure, JUnitXml

from engine.util.errors import BAD_INPUT_EXIT, BELOW_BAR_EXIT
from tests.conftest import REPO, SPEC_DIR
from tests.runtime_helpers import ScriptedOpenAI, Step, completion

SCRIPT = REPO / "scripts" / "ci_gate.sh"
SCENARIOS = "eva_airline__3_1_5,eva_airline__7_4_1"


def _gate(env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("EVALCTL_", "GITHUB_"))}
    base["EVALCTL"] = f"{sys.executable} {REPO / 'cli.py'}"
    base["PYTHONPATH"] = str(REPO)
    return subprocess.run(
        ["bash", str(SCRIPT)], env={**base, **env}, cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_the_gate_on_eva_with_a_fake_agent_endpoint(data_root: Path, tmp_path: Path) -> None:
    answer = Step(completion("I am sorry, I cannot help with that. Goodbye."))
    with ScriptedOpenAI([answer]) as server:
        done = _gate(
            {
                "EVALCTL_SPEC_DIR": str(SPEC_DIR),
                "EVALCTL_OUT": str(tmp_path / "out"),
                "EVALCTL_AGENT": "openai:fake-agent",
                "EVALCTL_FAIL_UNDER": "0.9",
                "EVALCTL_ARGS": f"--scenarios {SCENARIOS} --data-root {data_root} "
                f"--base-url {server.base_url} --api-key-env EVALCTL_TEST_KEY --min-agent-turns 1",
                "EVALCTL_TEST_KEY": "sk-test",
                "GITHUB_STEP_SUMMARY": str(tmp_path / "step_summary.md"),
            },
            tmp_path,
        )
        assert server.requests, "the agent never asked the fake endpoint"
    assert done.returncode == BELOW_BAR_EXIT, done.stderr[-2000:]
    assert "below --fail-under 90.0%" in done.stderr
    out = tmp_path / "out"
    xml = JUnitXml.fromfile(str(out / "junit.xml"))
    cases = {case.name: case for suite in xml for case in suite}
    assert set(cases) == set(SCENARIOS.split(","))
    failed = [n for n, c in cases.items() if any(isinstance(r, Failure) for r in c.result)]
    assert "eva_airline__3_1_5" in failed  # no tool call: the booking is never changed
    assert cases["eva_airline__3_1_5"].result[0].message.startswith("db_state_match")
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert summary.startswith("### evalctl: ") and "| Strict success (errors count as failures) |" in summary
    assert (tmp_path / "step_summary.md").read_text(encoding="utf-8") == summary
    assert (out / "report.html").stat().st_size > 10_000


def test_the_gate_without_a_spec_dir_is_bad_input(tmp_path: Path) -> None:
    done = _gate({}, tmp_path)
    assert done.returncode == BAD_INPUT_EXIT
    assert done.stderr.strip() == "ci_gate: set EVALCTL_SPEC_DIR to the spec folder to run"
