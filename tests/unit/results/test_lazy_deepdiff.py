"""``deepdiff`` (and the pydantic it pulls in, ~80 ms) is imported only when a DB diff is made:
a replay run and a gold replay that pass never import it; a replay whose end state differs does.
Each check runs in a fresh interpreter (this one may have imported it already)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR, REPO


def _imports_deepdiff(code: str, tmp_path: Path) -> bool:
    prelude = (
        "import sys, asyncio\n"
        "from pathlib import Path\n"
        f"SPEC, DATA = Path({str(MOCK_SPEC_DIR)!r}), Path({str(MOCK_DATA_ROOT)!r})\n"
        f"TMP = Path({str(tmp_path)!r})\n"
    )
    # the repository first, then what the session put there (the mock shop's distribution)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-c", prelude + code + "\nprint('deepdiff' in sys.modules)"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1] == "True"


def test_a_passing_replay_run_does_not_import_deepdiff(tmp_path: Path) -> None:
    code = (
        "from engine.run import runner\n"
        "from tests.runtime_helpers import run_options\n"
        "opts = run_options(SPEC, DATA, scenarios=('mock__cancel_order', 'mock__late_delivery_credit'),\n"
        "                   output_dir=TMP / 'run', quiet=True)\n"
        "report = asyncio.run(runner.run(opts))\n"
        "assert report.summary is not None and report.summary.overall.passed == 2\n"
    )
    assert _imports_deepdiff(code, tmp_path) is False


def test_a_gold_replay_imports_deepdiff_only_for_a_mismatch(tmp_path: Path) -> None:
    replay = (
        "from dataclasses import replace\n"
        "from engine.domains.registry import plugins\nfrom engine.spec.loader import load_domain\n"
        "from engine.spec.gold_replay import replay_gold\n"
        "scenario = load_domain(SPEC, DATA, plugins=plugins()).scenario('mock__cancel_order')\n"
    )
    passing = replay + "assert replay_gold(scenario).ok\n"
    assert _imports_deepdiff(passing, tmp_path) is False
    failing = replay + (
        "wrong = {**scenario.expected_db, 'refunds': {'R': {'amount': 1}}}\n"
        "scenario = replace(scenario, expected_db=wrong)\n"
        "outcome = replay_gold(scenario)\n"
        "assert not outcome.ok and any('refunds' in line.path for line in outcome.lines)\n"
    )
    assert _imports_deepdiff(failing, tmp_path) is True
