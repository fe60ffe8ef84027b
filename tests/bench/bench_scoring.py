"""Scoring benchmark: finish_session for the 50 eva scenarios (score + every artifact, atomic
writes with fsync), finish_run over them, `evalctl diff` over 50 failures, and the scoring stage
of a run with a judge that takes 1 s per answer at --concurrency 8 (target: under 10 s, i.e. the
judge requests run at once, not one or two at a time).

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

from engine.core.dataroot import resolve_data_root
from engine.core.model import REPO_ROOT, SessionResult
from engine.core.options import ScoringOptions
from engine.domains.registry import plugins
from engine.results.diff import diff_run, render_text
from engine.results.scoring_stage import finish_run, finish_session
from engine.spec.loader import load_domain


def _broken(db: dict) -> dict:
    db = copy.deepcopy(db)
    res = next(iter(db["reservations"].values()))
    res["status"] = "bench_changed"
    return db


def run() -> None:
    loaded = load_domain(REPO_ROOT / "specs" / "eva_airline", resolve_data_root(None), plugins=plugins())
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
    _bench_judged_scoring(scenarios, sessions)
    _bench_pathological_judge_replies()


def _bench_judged_scoring(scenarios: list, sessions: list[SessionResult]) -> None:
    """The scoring stage (``engine.results.scorer.Scorer``) of 50 stored sessions with a judge on loopback
    that answers each request after 1 s, at concurrency 8: ceil(50 / 8) = 7 rounds, about 7 s."""
    from engine.results.scorer import Scorer
    from tests.mock_domain.judge_server import scripted_judge

    verdict = {"score": 1.0, "reason": "bench", "nl_assertion_verdicts": []}

    def slow_judge(body: dict) -> dict:
        time.sleep(1.0)
        return verdict

    with scripted_judge([slow_judge]) as (url, server), tempfile.TemporaryDirectory() as tmp:
        options = ScoringOptions(judge_model="bench-judge", judge_base_url=url)

        async def score_all() -> tuple[float, int]:
            scorer = Scorer(Path(tmp), 1, options, concurrency=8, invocation="bench")
            try:
                for s, r in zip(scenarios, sessions, strict=True):
                    await scorer.store(s, r)
                t0 = time.perf_counter()
                scored = await asyncio.gather(
                    *(scorer.score(s, r) for s, r in zip(scenarios, sessions, strict=True))
                )
                judged = sum(1 for m in scored if m.signals.judge_score is not None)
                return time.perf_counter() - t0, judged
            finally:
                await scorer.aclose()

        elapsed, judged = asyncio.run(score_all())
    print(
        f"scoring stage with a judge answering in 1 s: {len(sessions)} scenarios at --concurrency 8 in "
        f"{elapsed:.1f} s (target < 10 s; {judged} judged, {len(server.requests)} judge requests)"
    )


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
