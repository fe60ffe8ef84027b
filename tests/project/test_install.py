"""The install layout: ``pip install evalctl`` is what running needs, the optional features are
extras, ``make setup`` installs them all, and a wheel carries the schemas and templates.

The plain-install test builds this checkout's wheel, installs it into a venv that holds only the
core dependencies (no system site packages, no extras; the venv is cached per dependency list
under ``~/.cache/evalctl-tests``), runs one eva scenario with it and checks stderr has nothing but
the progress line. Creating the venv downloads the core dependencies, so it runs when
``EVALCTL_TEST_INSTALL=1`` or the cached venv exists (then about 15 s: the wheel is rebuilt)."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import REPO, SPEC_DIR

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
EXTRAS = {"dev", "ray", "report-tests", "voice", "pipecat", "livekit", "otel"}


def test_the_extras_and_make_setup() -> None:
    extras = set(PYPROJECT["project"]["optional-dependencies"])
    assert extras >= EXTRAS
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    listed = re.search(r"^DEV_EXTRAS \?= (.+)$", makefile, re.M)
    assert listed, "the Makefile has no DEV_EXTRAS"
    assert set(listed.group(1).split(",")) == extras
    assert "pip install --quiet -e '.[$(DEV_EXTRAS)]'" in makefile
    core = " ".join(PYPROJECT["project"]["dependencies"])
    for heavy in ("ray", "selenium", "hypothesis", "pytest", "opentelemetry", "pipecat", "livekit"):
        assert heavy not in core, heavy


def test_a_wheel_carries_every_schema_and_template_folder() -> None:
    data_files = PYPROJECT["tool"]["setuptools"]["data-files"]
    for top in ("schemas", "templates"):
        for folder in [REPO / top, *(p for p in (REPO / top).rglob("*") if p.is_dir())]:
            rel = folder.relative_to(REPO).as_posix()
            files = [p for p in folder.iterdir() if p.is_file()]
            if not files:
                continue
            globs = data_files.get(f"share/evalctl/{rel}")
            assert globs, f"pyproject [tool.setuptools.data-files] does not list {rel}/"
            matched = {p for g in globs for p in REPO.glob(g)}
            assert set(files) <= matched, f"{rel}/: {sorted(p.name for p in set(files) - matched)}"


def _plain_venv() -> Path:
    deps = "\n".join(PYPROJECT["project"]["dependencies"])
    key = hashlib.sha256(f"{sys.version}\n{deps}".encode()).hexdigest()[:16]
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "evalctl-tests" / f"plain-{key}"


def test_a_plain_install_runs_without_warnings(data_root: Path, tmp_path: Path) -> None:
    venv = _plain_venv()
    if not (venv / "bin" / "python").exists() and os.environ.get("EVALCTL_TEST_INSTALL") != "1":
        pytest.skip(f"no cached plain venv at {venv}; EVALCTL_TEST_INSTALL=1 builds it (downloads)")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    run = {"check": True, "capture_output": True, "text": True, "env": env, "timeout": 900}
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(REPO), "-w", str(wheels)], **run
    )
    (wheel,) = wheels.glob("evalctl-*.whl")
    if not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], **run)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(wheel)], **run)
    else:  # the core dependencies are there: only this checkout's evalctl changes
        subprocess.run(
            [str(venv / "bin" / "pip"), "install", "-q", "--no-deps", "--force-reinstall", str(wheel)], **run
        )
    listed = subprocess.run([str(venv / "bin" / "pip"), "list", "--format=freeze"], **run).stdout.lower()
    for extra in ("ray", "selenium", "pytest", "opentelemetry-sdk", "hypothesis"):
        assert f"\n{extra}==" not in f"\n{listed}", extra
    done = subprocess.run(
        [str(venv / "bin" / "evalctl"), "run", str(SPEC_DIR), "--scenarios", "eva_airline__3_1_5",
         "--data-root", str(data_root), "--output-dir", str(tmp_path / "run"), "--no-progress"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Overall Success Rate: 100.0% (1/1" in done.stdout
    # the progress line alone; the replay caller's note (a conformance check, docs/scoring.md) is
    # said once, in the summary on stdout
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "PASS eva_airline__3_1_5" in lines[0], done.stderr
    assert done.stdout.count("NOTE: replay caller: this run is a conformance check") == 1, done.stdout
    assert "warning" not in done.stderr.lower()
    missing = subprocess.run(
        [str(venv / "bin" / "evalctl"), "run", str(SPEC_DIR), "--trace-file", str(tmp_path / "t.jsonl")],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert missing.returncode == 2
    assert (
        missing.stderr.strip()
        == "evalctl: --otel / --trace-file need OpenTelemetry: pip install 'evalctl[otel]'"
    )
