#!/usr/bin/env bash
# Fresh-clone check: clone this repository's committed HEAD into a temporary folder, run the
# README's set-up command there, then the main job on a few scenarios, and check the results.
# A missing install step or an untracked file the code depends on fails here, not for a user.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
# The upstream data: the same local source `make data` uses, resolved from the repository.
src="${EVA_SOURCE:-$repo/../shared}"
[ -d "$src/eva-0.1.3" ] || src="$repo/data"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
git clone --quiet "$repo" "$tmp/evalctl"
cd "$tmp/evalctl"
make setup EVA_SOURCE="$src"
scenarios="eva_airline__voluntary_date_change,eva_airline__irrops_cancellation,eva_airline__escalation_edge_case"
.venv/bin/evalctl run specs/eva_airline --scenarios "$scenarios" --output-dir "$tmp/run"
python3 - "$tmp/run" <<'PY'
import json, pathlib, sys
run = pathlib.Path(sys.argv[1])
summary = json.loads((run / "summary.json").read_text())
metrics = sorted(run.glob("*/metrics.json"))
assert len(metrics) == 3, f"expected 3 scenario results, found {len(metrics)}"
for m in metrics:
    data = json.loads(m.read_text())
    assert data["is_successful"] is True, f"{m.parent.name}: not successful: {data.get('success_breakdown')}"
    assert data["stop_reason"] in ("exit", "transfer"), data["stop_reason"]
assert (run / "all_summary.txt").is_file()
print(f"fresh-clone check: 3/3 scenarios successful in a clean clone ({run})")
PY
