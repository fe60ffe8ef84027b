"""Tool calls on a big shared DB (issue #12 §6): the per-call overhead of the runtime (argument
check + copy-on-write of what the tool declares it writes + rollback bookkeeping) on tau2's 7 MB
airline DB, for a read and for a write, next to what a whole-DB copy per call cost before tools
declared their writes. Targets: under 1 ms for reads, under 5 ms for writes."""

from __future__ import annotations

import json
import time
from pathlib import Path

from engine.core.dataroot import resolve_data_root
from engine.core.toolruntime import ToolRuntime
from engine.core.tools.writeset import json_copy
from engine.domains.registry import plugins
from engine.spec.loader import load_domain

SPEC_DIR = Path(__file__).resolve().parent.parent.parent / "specs" / "tau2_airline"
READ = ("get_reservation_details", {"reservation_id": "4WQ150"})
WRITE = (
    "update_reservation_baggages",
    {  # a gold action of tau2 airline task 12
        "reservation_id": "YAX4DR",
        "total_baggages": 2,
        "nonfree_baggages": 0,
        "payment_id": "credit_card_4938634",
    },
)


def _per_call(runtime_factory, name: str, args: dict, n: int) -> float:
    best = float("inf")
    for _ in range(3):
        runtimes = [runtime_factory() for _ in range(n)]  # a fresh session each: every write is a first write
        start = time.perf_counter()
        for rt in runtimes:
            rt.call(name, dict(args))
        best = min(best, (time.perf_counter() - start) / n)
    return best


def run() -> None:
    loaded = load_domain(SPEC_DIR, resolve_data_root(None), plugins=plugins())
    scenario = loaded.scenarios[0]
    tools = scenario.tools
    size = len(json.dumps(scenario.initial_db)) / 2**20

    def fresh() -> ToolRuntime:
        return ToolRuntime(tools, scenario.session_db())

    probe = fresh().call(*READ)
    assert probe.result["status"] == "success", probe.result
    wrote = fresh().call(WRITE[0], dict(WRITE[1]))
    assert wrote.result["status"] == "success", wrote.result
    read_s = _per_call(fresh, READ[0], READ[1], 200)
    write_s = _per_call(fresh, WRITE[0], WRITE[1], 50)
    handler = tools.get(READ[0]).run
    from engine.core.tools.context import CallContext

    db = scenario.session_db()
    start = time.perf_counter()
    for _ in range(200):
        handler(db, READ[1], CallContext(tool=READ[0]))
    bare = (time.perf_counter() - start) / 200
    start = time.perf_counter()
    json_copy(scenario.initial_db)
    copy_s = time.perf_counter() - start
    print(f"tau2 airline DB: {size:.1f} MB as compact JSON (7 MB file), shared by every session")
    print(
        f"  read ({READ[0]}): {read_s * 1e3:.3f} ms per call, handler alone {bare * 1e3:.3f} ms "
        f"(overhead {(read_s - bare) * 1e3:.3f} ms; target < 1 ms)"
    )
    print(f"  write ({WRITE[0]}): {write_s * 1e3:.3f} ms per call (target < 5 ms)")
    print(f"  a whole-DB copy, what every call paid before 'writes' declarations: {copy_s * 1e3:.1f} ms")


if __name__ == "__main__":
    run()
