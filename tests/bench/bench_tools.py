"""Tool-table speed: replaying all 50 gold traces and hashing the results (target < 0.5 s), and the
per-call overhead of argument validation + dispatch + snapshot (µs)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from engine.dataroot import resolve_data_root
from engine.dbhash import db_hash
from engine.domains.registry import load_domain
from engine.model import ToolTable
from engine.replay import replay_trace
from engine.toolruntime import ToolRuntime, checker_for, json_copy

SPEC_DIR = Path(__file__).resolve().parent.parent.parent / "specs" / "eva_airline"


def _best(fn: Any, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def run() -> None:
    loaded = load_domain(SPEC_DIR, resolve_data_root(None))
    scenarios = loaded.scenarios
    rules = loaded.domain.hash_rules
    calls = sum(len(s.gold_trace.tool_calls()) for s in scenarios if s.gold_trace)

    def replay_all() -> None:
        for s in scenarios:
            run = replay_trace(s.tools, s.initial_db, s.gold_trace)
            assert db_hash(run.db, rules) == db_hash(s.expected_db or {}, rules)

    total = _best(replay_all, 5)
    print(
        f"replay + hash of {len(scenarios)} gold traces ({calls} tool calls): {total:.3f} s (target < 0.5 s)"
    )

    s = next(x for x in scenarios if x.eva_id == "1.1.2")
    table: ToolTable = s.tools
    args = {"confirmation_number": "ZK3FFW", "last_name": "Rodriguez"}
    spec = table.get("get_reservation")
    assert spec is not None
    n = 2000
    runtime = ToolRuntime(table, s.fresh_db())

    def calls_full() -> None:
        for _ in range(n):
            runtime.call("get_reservation", args)

    def calls_handler_only() -> None:
        from engine.tools.context import CallContext

        ctx = CallContext(tool="get_reservation")
        db = runtime.db
        handler = spec.run
        for _ in range(n):
            handler(db, args, ctx)

    def validation_only() -> None:
        checker = checker_for(spec)
        for _ in range(n):
            checker.check(args)

    def snapshot_only() -> None:  # what every call paid before tools declared their writes
        db = runtime.db
        for _ in range(n):
            json_copy(db)

    full, bare = _best(calls_full, 3) / n * 1e6, _best(calls_handler_only, 3) / n * 1e6
    print(
        f"get_reservation via ToolRuntime.call: {full:.1f} µs; handler alone: {bare:.1f} µs; "
        f"overhead {full - bare:.1f} µs per call"
    )
    print(
        f"  of which argument validation {_best(validation_only, 3) / n * 1e6:.1f} µs, "
        "a whole-DB copy (paid per call before 'writes' declarations) "
        f"{_best(snapshot_only, 3) / n * 1e6:.1f} µs"
    )


if __name__ == "__main__":
    run()
