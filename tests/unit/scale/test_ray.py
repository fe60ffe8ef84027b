"""``--ray ADDRESS``: shards as Ray tasks on a local cluster (loopback), merged into the run one
process makes; the core install never imports Ray."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import cli
from engine.util.errors import UsageError
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR, REPO
from tests.runtime_helpers import run_options
from tests.unit.scale.helpers import SHOP_RUN, hashes, verdicts


def test_the_core_never_imports_ray() -> None:
    code = ("import sys, cli, engine.run.runner, engine.commands.run, engine.run.workers, "
            "engine.results.merge; "
            "cli.main(['run', '--help']); print('ray' in sys.modules)")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False"


def test_a_missing_ray_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from engine.run.ray_run import run_on_ray

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    message = r"^--ray needs Ray, which is not installed: pip install 'evalctl\[ray\]'$"
    with pytest.raises(UsageError, match=message):
        run_on_ray(run_options(MOCK_SPEC_DIR, output_dir=tmp_path / "out"), "local")


def test_an_unreachable_ray_cluster_is_exit_3_at_once(tmp_path: Path) -> None:
    # Before, ray.init retried a closed address for minutes (over 5 min with --ray 127.0.0.1:PORT).
    pytest.importorskip("ray")
    from engine.run.ray_run import run_on_ray
    from engine.util.errors import InfrastructureError

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    message = rf"^--ray 127.0.0.1:{port}: cannot connect to the Ray cluster"
    with pytest.raises(InfrastructureError, match=message):
        opts = run_options(MOCK_SPEC_DIR, MOCK_DATA_ROOT, output_dir=tmp_path / "out")
        run_on_ray(opts, f"127.0.0.1:{port}")
    assert InfrastructureError.exit_code == 3


def test_ray_shards_merge_into_one_runs_summary(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    pytest.importorskip("ray")  # installed by `make setup` (the dev extra)
    base = [*SHOP_RUN, "--trials", "2", "--no-progress"]
    single = tmp_path / "single"
    assert cli.main([*base, "--output-dir", str(single), "--workers", "1"]) == 0
    merged = tmp_path / "ray"
    # the run's temporary folder (short: Ray's socket paths go 62 characters further down), to see
    # what `--ray local` leaves there
    scratch = Path(tempfile.mkdtemp(prefix="t", dir="/tmp"))
    request.addfinalizer(lambda: shutil.rmtree(scratch, ignore_errors=True))
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0", "TMPDIR": str(scratch)}
    done = subprocess.run(
        [sys.executable, str(REPO / "cli.py"), *base, "--output-dir", str(merged), "--ray", "local",
         "--workers", "2"],
        cwd=REPO, capture_output=True, text=True, timeout=180, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "[ray] shard 1/2 done" in done.stderr and "[ray] shard 2/2 done" in done.stderr
    assert verdicts(merged) == verdicts(single)
    assert hashes(merged) == hashes(single) and len(hashes(merged)) == 6
    record = json.loads((merged / "run.json").read_text())
    assert record["invocations"][-1]["args"]["sources"] == ["ray:local shard 1/2", "ray:local shard 2/2"]
    assert [i["args"]["shard"] for i in record["invocations"][:-1]] == ["1/2", "2/2"]
    # before: each `--ray local` run left its session folder (logs, about 200 KB) in /tmp/ray
    assert [p.name for p in scratch.iterdir()] == []
