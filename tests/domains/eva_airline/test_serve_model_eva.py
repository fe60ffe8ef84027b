"""``evalctl serve model``: the gold model of eva_airline on loopback, the way the docs say to dry-run
an agent's wiring without a key (found missing by a new-user pass). The example ``python:`` agent
(examples/python_agent.py, the ``openai`` client), the pipecat bot and the LiveKit agent (the real
packages) pointed at it pass the scenarios run, each in its supervised worker; a
request for a scenario the spec does not hold gets the gold model's "did not follow"."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

from tests.conftest import REPO, SPEC_DIR

NAMES = "eva_airline__1_1_3,eva_airline__1_1_4,eva_airline__7_2_2"


def test_the_example_agent_on_the_gold_model_passes(tmp_path: Path, data_root: Path) -> None:
    server = subprocess.Popen(
        [sys.executable, str(REPO / "cli.py"), "serve", "model", "--spec-dir", str(SPEC_DIR),
         "--data-root", str(data_root), "--port", "0"],
        cwd=REPO, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert server.stderr is not None
        line = server.stderr.readline()
        match = re.search(
            r"serving the gold model of 50 scenario\(s\) of eva_airline on (http://\S+/v1)", line
        )
        assert match, line
        base = match.group(1)
        request = urllib.request.Request(
            f"{base}/chat/completions",
            json.dumps(
                {"model": "any", "messages": [{"role": "user", "content": "not a scenario"}]}
            ).encode(),
            {"content-type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            said = json.loads(answer.read())["choices"][0]["message"]["content"]
        assert said == "I am sorry, I did not follow."
        env = {**os.environ, "OPENAI_BASE_URL": base, "OPENAI_API_KEY": "local"}
        # each adapter on the real package, in the supervised worker of a fresh `evalctl run`
        for agent in (
            "python:examples/python_agent.py:make_agent",
            "pipecat:examples/pipecat_bot.py:make_pipeline",
            "livekit:examples/livekit_bot.py:make_agent",
        ):
            out = tmp_path / agent.split(":")[0]
            done = subprocess.run(
                [sys.executable, str(REPO / "cli.py"), "run", str(SPEC_DIR), "--data-root", str(data_root),
                 "--scenarios", NAMES, "--agent", agent, "--output-dir", str(out)],
                cwd=REPO, env=env, capture_output=True, text=True, timeout=180,
            )  # fmt: skip
            assert done.returncode == 0, (agent, done.stderr[-2000:])
            assert "runs in this process" not in done.stderr  # it ran in its worker
            summary = json.loads((out / "summary.json").read_text())
            assert summary["results"] == 3 and summary["overall"]["passed"] == 3 and summary["errors"] == 0
    finally:
        server.send_signal(signal.SIGINT)
        server.communicate(timeout=10)
    assert server.returncode == 0
