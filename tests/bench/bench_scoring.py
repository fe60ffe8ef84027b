"""Scoring benchmark: finish_session for the 50 eva scenarios (score + every artifact, atomic
writes with fsync), finish_run over them, and `evalctl diff` over 50 failures.

Sessions are built from the real eva data: each final DB is the expected DB with one seat changed
(so all 50 fail db_state_match and the diff has something to explain).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import tempfile
import time
from pathlib import Path

from engine.dataroot import resolve_data_root
from engine.diff import diff_run, render_text
from engine.domains.registry import load_domain
from engine.model import REPO_ROOT, SessionResult
from engine.options import ScoringOptions
from engine.results import finish_run, finish_session


def _broken(db: dict) -> dict:
    db = copy.deepcopy(db)
    res = next(iter(db["reservations"].values()))
    res["status"] = "bench_changed"
    return db


def run() -> None:
    loaded = load_domain(REPO_ROOT / "specs" / "eva_airline", resolve_data_root(None))
    scenarios = loaded.scenarios
    sessions = [
        SessionResult(
            s.name,
            1,
            "exit",
            final_db=_broken(dict(s.expected_db or {})),
            agent_turns=4,
            actions=[{"action_type": "bench"}],
            duration_s=1.0,
        )
        for s in scenarios
    ]
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp)

        async def score_all() -> None:
            for s, r in zip(scenarios, sessions, strict=True):
                await finish_session(run_dir, s, r, 1, ScoringOptions())

        t0 = time.perf_counter()
        asyncio.run(score_all())
        t1 = time.perf_counter()
        summary = finish_run(run_dir, {"trials": 1})
        t2 = time.perf_counter()
        diffs = diff_run(run_dir)
        text = render_text(diffs, run_dir)
        t3 = time.perf_counter()
    n = len(scenarios)
    print(f"score + write artifacts: {n} scenarios in {t1 - t0:.3f} s ({1000 * (t1 - t0) / n:.1f} ms each)")
    print(
        f"finish_run (summary.json, all_summary.txt, run.json): {t2 - t1:.3f} s "
        f"({summary.overall.failed} failed of {summary.results})"
    )
    print(
        f"diff {len(diffs)} failures (DeepDiff + text): {t3 - t2:.3f} s "
        f"({1000 * (t3 - t2) / max(len(diffs), 1):.1f} ms each, {len(text.splitlines())} lines)"
    )
    _bench_pathological_judge_replies()


def _bench_pathological_judge_replies() -> None:
    """A hostile judge reply must fail fast (it once took ~10 s for 200k '{')."""
    from engine.scoring.judge import parse_judge_reply

    for label, reply in (("200k '{'", "{" * 200_000), ("object nested 20k deep", '{"a":' * 20_000)):
        t0 = time.perf_counter()
        with contextlib.suppress(ValueError):
            parse_judge_reply(reply, 0)
        print(f"judge reply parse, {label}: {1000 * (time.perf_counter() - t0):.1f} ms (target < 1000 ms)")


if __name__ == "__main__":
    run()
