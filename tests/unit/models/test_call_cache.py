"""The model-call cache (issue 29 item 2): a cached run twice makes no model request the second
time and reproduces every verdict and DB hash; a changed setting misses; the judge's calls are
cached too; ``evalctl cache stats|clear``; the key never holds the API key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli import main
from engine.core.options import ScoringOptions
from engine.run.runner import run
from engine.util.callcache import CallCache, call_key
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR
from tests.runtime_helpers import ScriptedOpenAI, Step, completion, run_options

SCENARIOS = ("mock__cancel_order", "mock__shipped_refusal")


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALCTL_TEST_KEY", "sk-secret-test")


def _steps() -> list[Step]:
    return [
        Step(completion("Let me look.", [("c1", "get_order", '{"order_id": "O-1"}')])),
        Step(completion("Goodbye.", [("c2", "end_conversation", "{}")])),
    ]


def _route(body: dict) -> Step:
    """The first agent step, then the goodbye once a tool result is in the chat (any scenario)."""
    seen_tool = any(m.get("role") == "tool" for m in body["messages"])
    return _steps()[1 if seen_tool else 0]


async def _run(server: ScriptedOpenAI, out: Path, cache: Path, **kwargs: object):
    kwargs.setdefault("scenarios", SCENARIOS)
    opts = run_options(
        MOCK_SPEC_DIR,
        MOCK_DATA_ROOT,
        agent="openai:scripted-model",
        base_url=server.base_url,
        api_key_env="EVALCTL_TEST_KEY",
        output_dir=out,
        progress=False,
        cache_dir=str(cache),
        **kwargs,
    )
    return await run(opts)


def _outcome(run_dir: Path) -> dict[str, tuple]:
    out = {}
    for name in SCENARIOS:
        metrics = json.loads((run_dir / name / "metrics.json").read_text())
        db_hash = (run_dir / name / "final_scenario_db_hash.txt").read_text()
        out[name] = (metrics["is_successful"], metrics["stop_reason"], metrics["success_breakdown"], db_hash)
    return out


async def test_a_cached_run_twice_asks_no_model_the_second_time(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    with ScriptedOpenAI([], route=_route) as server:
        await _run(server, tmp_path / "first", cache)
        first_requests = len(server.requests)
        await _run(server, tmp_path / "second", cache)
        assert first_requests == 4  # two sessions, two model steps each
        assert len(server.requests) == first_requests  # the second run sent nothing
        assert _outcome(tmp_path / "first") == _outcome(tmp_path / "second")
        first = json.loads((tmp_path / "first" / "summary.json").read_text())
        second = json.loads((tmp_path / "second" / "summary.json").read_text())
        for key in ("overall", "strict", "task", "signals", "stop_reasons", "errors", "usage", "failed"):
            assert first[key] == second[key], key
        # one sampling setting changed: every request misses
        third = {"agent_args": {"temperature": 0.5}, "scenarios": SCENARIOS[:1]}
        await _run(server, tmp_path / "third", cache, **third)
        assert len(server.requests) == first_requests + 2
        assert all(body.get("temperature") == 0.5 for _, body in server.requests[first_requests:])
    stored = (cache / "calls.sqlite3").read_bytes()
    assert b"sk-secret-test" not in stored  # the key is never stored


def test_the_key_covers_url_model_messages_tools_and_settings() -> None:
    base = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": [], "seed": 1}
    key = call_key("http://a/v1/", base)
    assert key == call_key("http://a/v1", dict(reversed(base.items())))  # key order, trailing slash
    for changed in (
        {**base, "model": "n"},
        {**base, "messages": [{"role": "user", "content": "hi!"}]},
        {**base, "tools": [{"type": "function", "function": {"name": "f"}}]},
        {**base, "seed": 2},
        {**base, "extra_body": {"top_k": 1}},
    ):
        assert call_key("http://a/v1", changed) != key
    assert call_key("http://b/v1", base) != key


def test_cache_stats_and_clear(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache = CallCache(tmp_path)
    cache.put("k1", "http://a/v1/", "m", {"choices": []})
    cache.put("k1", "http://a/v1/", "m", {"choices": ["second answer ignored"]})
    cache.put("k2", "http://b/v1", "n", {"choices": []})
    assert cache.get("k1") == {"choices": []} and cache.get("nope") is None
    assert (cache.hits, cache.misses) == (1, 1)
    cache.close()
    assert main(["cache", "stats", str(tmp_path), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["entries"] == 2 and stats["models"] == {"http://a/v1 m": 1, "http://b/v1 n": 1}
    assert main(["cache", "clear", str(tmp_path)]) == 0
    assert "2 entries removed" in capsys.readouterr().out
    assert CallCache(tmp_path).stats()["entries"] == 0
    assert main(["cache", "stats", str(tmp_path / "none")]) == 2
    assert "holds no model-call cache" in capsys.readouterr().err


async def test_the_judges_calls_are_cached(tmp_path: Path) -> None:
    from engine.scoring.judge import Judge

    verdict = completion(json.dumps({"score": 1.0, "reason": "ok", "nl_assertion_verdicts": []}))
    with ScriptedOpenAI([Step(verdict)]) as server:
        options = ScoringOptions(
            judge_model="judge-m",
            judge_base_url=server.base_url,
            judge_api_key_env="EVALCTL_TEST_KEY",
            judge_args={"seed": 3},
            cache_dir=str(tmp_path),
        )
        sent = Judge(options).request("prompt")
        assert sent["seed"] == 3 and sent["temperature"] == 0
        for _ in range(2):
            judge = Judge(options)
            reply = await judge.complete(sent)
            await judge.aclose()
            assert reply.choices[0].message.content == verdict["choices"][0]["message"]["content"]
        assert len(server.requests) == 1


def _fill(directory: str, worker: int) -> None:
    cache = CallCache(Path(directory))
    for i in range(100):
        cache.put(f"shared-{i}", "http://a/v1", "m", {"by": worker})  # the same keys from both
        cache.put(f"own-{worker}-{i}", "http://a/v1", "m", {"by": worker})
        assert cache.get(f"own-{worker}-{i}") == {"by": worker}
    cache.close()


def test_worker_processes_share_one_cache(tmp_path: Path) -> None:
    import multiprocessing

    context = multiprocessing.get_context("fork")
    CallCache(tmp_path).close()  # created first, as the run does before its workers start
    workers = [context.Process(target=_fill, args=(str(tmp_path), n)) for n in (1, 2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(30)
    assert [w.exitcode for w in workers] == [0, 0]
    cache = CallCache(tmp_path)
    assert cache.stats()["entries"] == 300  # 100 shared keys stored once, 100 of each worker
    assert cache.get("shared-7") in ({"by": 1}, {"by": 2})


def _foreign_cache(folder: Path) -> Path:
    import sqlite3

    folder.mkdir()
    conn = sqlite3.connect(folder / "calls.sqlite3")
    conn.execute("create table calls (x int)")
    conn.commit()
    conn.close()
    return folder


def test_cache_of_another_schema_is_one_line_exit_2_and_clear_removes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = _foreign_cache(tmp_path / "cache")
    says = f"--cache {cache}: not a usable cache folder ("
    run_args = ["run", str(MOCK_SPEC_DIR), "--data-root", str(MOCK_DATA_ROOT), "--scenarios", SCENARIOS[0]]
    # before: every result an `error` verdict with a traceback (no such column: response)
    code = main([*run_args, "--agent", "openai:m", "--base-url", "http://127.0.0.1:9/v1",
                 "--api-key-env", "EVALCTL_TEST_KEY", "--cache", str(cache),
                 "--output-dir", str(tmp_path / "run"), "--no-progress"])  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith(f"evalctl: {says}") and "another schema" in err
    assert not (tmp_path / "run" / SCENARIOS[0] / "metrics.json").exists()
    assert main(["cache", "stats", str(cache)]) == 2  # before: a traceback
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"evalctl: {says}") and "\n" not in err
    assert main(["cache", "clear", str(cache)]) == 0
    out = capsys.readouterr().out.strip()
    assert out.startswith(f"cache {cache}: not a usable cache (") and out.endswith("; removed calls.sqlite3")
    assert not (cache / "calls.sqlite3").exists()
