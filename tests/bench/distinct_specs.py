"""A spec folder and data root of N *distinct* eva_airline scenarios, for the memory benches.

Scenario k is eva scenario ``k mod 50`` copied under its own name and its own record id
(``<eva id>-<k // 50>``), with its own initial DB file and its own dataset records (eva 0.1.3's
record and eva 2.1.0's, with the gold trace, in two JSON Lines files holding all N): nothing is shared
between two scenarios but the domain (policy, tool table, templates). Every copy replays and
scores as its original does.

``python -m tests.bench.distinct_specs N OUT`` writes ``OUT/spec`` and ``OUT/data``.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import yaml

from engine.core.dataroot import resolve_data_root

REPO = Path(__file__).resolve().parents[2]
EVA_SPEC = REPO / "specs" / "eva_airline"
RELEASE = "eva-distinct"


def _records(root: Path) -> list[tuple[dict[str, object], dict[str, object]]]:
    """The 50 eva 0.1.3 records (in the dataset's order), each with its eva 2.1.0 record (the gold)."""
    gold = {r["id"]: r for r in json.loads((root / "eva-2.1.0/data/airline_dataset.json").read_text())}
    lines = (root / "eva-0.1.3/data/airline_dataset.jsonl").read_text().splitlines()
    return [(r, gold[r["id"]]) for r in (json.loads(line) for line in lines if line.strip())]


def write(count: int, out: Path, data_root: Path | None = None) -> tuple[Path, Path]:
    """Write ``count`` distinct scenarios: returns ``(spec folder, data root)`` under ``out``."""
    root = resolve_data_root(data_root)
    spec, data = out / "spec", out / "data"
    (spec / "scenarios").mkdir(parents=True, exist_ok=True)
    dbs = data / RELEASE / "airline_scenarios"
    dbs.mkdir(parents=True, exist_ok=True)
    shutil.copy(root / "eva-0.1.3/configs/agents/airline_agent.yaml", data / RELEASE / "airline_agent.yaml")
    shutil.copy(EVA_SPEC / "rtvi.yaml", spec / "rtvi.yaml")
    tools = (EVA_SPEC / "tools.yaml").read_text()
    (spec / "tools.yaml").write_text(tools.replace("eva-0.1.3/configs/agents/", f"{RELEASE}/"))
    domain = yaml.safe_load((EVA_SPEC / "domain.yaml").read_text())
    domain.pop("languages", None)
    domain["dataset"] = {"path": f"{RELEASE}/dataset.jsonl", "key": "id"}
    domain["initial_db"] = {"file": f"{RELEASE}/airline_scenarios/{{eva_id}}.json"}
    domain["gold_trace"]["dataset"] = {"path": f"{RELEASE}/gold.jsonl", "key": "id"}
    domain["policy"]["file"] = f"{RELEASE}/airline_agent.yaml"
    (spec / "domain.yaml").write_text(yaml.safe_dump(domain, sort_keys=False))
    originals = {
        str(doc["eva_id"]): doc
        for doc in (yaml.safe_load(p.read_text()) for p in sorted((EVA_SPEC / "scenarios").glob("*.yaml")))
    }
    records = _records(root)
    with (
        (data / RELEASE / "dataset.jsonl").open("w", encoding="utf-8") as dataset,
        (data / RELEASE / "gold.jsonl").open("w", encoding="utf-8") as golds,
    ):
        for k in range(count):
            record, gold = records[k % len(records)]
            base = str(record["id"])
            rid = f"{base}-{k // len(records)}"
            dataset.write(json.dumps({**record, "id": rid}) + "\n")
            golds.write(json.dumps({**gold, "id": rid}) + "\n")
            shutil.copy(root / f"eva-0.1.3/data/airline_scenarios/{base}.json", dbs / f"{rid}.json")
            doc = {**originals[base], "eva_id": rid, "name": f"{originals[base]['name']}_{k // len(records)}"}
            (spec / "scenarios" / f"{rid}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return spec, data


if __name__ == "__main__":
    print(*write(int(sys.argv[1]), Path(sys.argv[2])))
