"""Record what tau2-bench's own environment code does with mutated gold action sequences.

Not part of evalctl and never imported by it: run once, by hand, to write the oracle that
``tests/domains/tau2/test_tau2_mutation_oracle.py`` replays through evalctl. It needs

- tau2-bench's sources at commit 17e07b1 (``git archive 17e07b1 src/tau2`` of a checkout), with
  ``src/tau2/__init__.py`` emptied (it imports the whole runner and its model clients);
- a throwaway venv with tau2's light dependencies: ``pydantic loguru docstring-parser deepdiff
  python-dotenv typing_extensions toml pyyaml addict``;
- the data release ``tau2-17e07b1/`` (the data root or /work/shared).

::

    PYTHONPATH=/tmp/tau2src/src /tmp/tau2venv/bin/python tools/tau2_oracle/record_mutations.py \\
        --data /work/shared/tau2-17e07b1 --out tests/domains/tau2/data/tau2_mutation_oracle.json

For each of airline and retail, ``--per-domain`` (300; the committed file has airline 150 and
retail 300: airline's 7 MB DB costs about 2 s a sequence in tau2, a copy and a hash) sequences
are made from the ``base`` split's gold actions with ``random.Random(seed)`` (mutation kinds: drop,
double, swap, undeclared, missing, wrong_type, convertible; see :func:`mutate`) and each is run
on a fresh environment with ``Environment.get_response`` (tau2's own path for a model's tool call). The file
holds each sequence's calls, each call's error flag and text (the text in full for an error, as
SHA-256 and length for a success, whose records can be long), and tau2's DB hash at the end.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

KINDS = ("drop", "double", "swap", "undeclared", "missing", "wrong_type", "convertible")


def mutate(actions: list[dict[str, Any]], kind: str, rng: random.Random) -> list[dict[str, Any]] | None:
    """One mutated copy of ``actions`` (``{name, arguments}`` each), or None when ``kind`` cannot
    apply (too few calls, no argument of the needed type)."""
    calls = [{"name": a["name"], "arguments": copy.deepcopy(a.get("arguments") or {})} for a in actions]
    if not calls:
        return None
    i = rng.randrange(len(calls))
    args = calls[i]["arguments"]
    if kind == "drop":
        del calls[i]
    elif kind == "double":
        calls.insert(i, copy.deepcopy(calls[i]))
    elif kind == "swap":
        if len(calls) < 2:
            return None
        j = rng.randrange(len(calls) - 1)
        calls[j], calls[j + 1] = calls[j + 1], calls[j]
    elif kind == "undeclared":
        args[rng.choice(["note", "confirm", "user_id_2"])] = rng.choice(["yes", 1, True])
    elif kind == "missing":
        if not args:
            return None
        del args[rng.choice(sorted(args))]
    elif kind == "wrong_type":
        keys = sorted(args)
        if not keys:
            return None
        key = rng.choice(keys)
        value = args[key]
        args[key] = 7 if isinstance(value, str) else "x"
    elif kind == "convertible":
        numbers = [k for k, v in args.items() if isinstance(v, int | float) and not isinstance(v, bool)]
        digits = [k for k, v in args.items() if isinstance(v, str) and v.isdigit()]
        if numbers:
            key = rng.choice(sorted(numbers))
            args[key] = rng.choice([str(args[key]), float(args[key])])
        elif digits:
            key = rng.choice(sorted(digits))
            args[key] = int(args[key])
        else:
            return None
    return calls


def _environment(domain: str, db: Any) -> Any:
    from tau2.environment.environment import Environment

    if domain == "airline":
        from tau2.domains.airline.tools import AirlineTools

        return Environment(domain_name="airline", policy="", tools=AirlineTools(db))
    from tau2.domains.retail.tools import RetailTools

    return Environment(domain_name="retail", policy="", tools=RetailTools(db))


def _load_db(domain: str, path: Path) -> Any:
    if domain == "airline":
        from tau2.domains.airline.data_model import FlightDB

        return FlightDB.load(str(path))
    from tau2.domains.retail.data_model import RetailDB

    return RetailDB.load(str(path))


def run_sequence(domain: str, base: Any, calls: list[dict[str, Any]]) -> dict[str, Any]:
    """Each call through tau2's ``get_response`` on a deep copy of ``base``."""
    from tau2.data_model.message import ToolCall

    env = _environment(domain, base.model_copy(deep=True))
    responses = []
    for n, call in enumerate(calls):
        message = env.get_response(ToolCall(id=f"c{n}", name=call["name"], arguments=call["arguments"]))
        text = message.content or ""
        entry: dict[str, Any] = {"error": bool(message.error)}
        if message.error:
            entry["content"] = text
        else:
            entry["sha256"] = hashlib.sha256(text.encode("utf-8")).hexdigest()
            entry["length"] = len(text)
        responses.append(entry)
    return {"responses": responses, "db_hash": env.get_db_hash()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data", type=Path, required=True, help="the tau2-17e07b1 release folder")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--per-domain", default="300", help="N, or per domain: airline=150,retail=300")
    parser.add_argument("--seed", type=int, default=30)
    parser.add_argument("--domains", default="airline,retail")
    opts = parser.parse_args(argv)
    from loguru import logger

    logger.remove()  # tau2 logs every response at DEBUG
    out: dict[str, Any] = {
        "source": "tau2-bench 17e07b1, Environment.get_response on a deep copy of the domain DB per sequence",
        "seed": opts.seed,
        "kinds": list(KINDS),
        "domains": {},
    }
    domains = opts.domains.split(",")
    if "=" in opts.per_domain:
        wanted = {k: int(v) for k, v in (p.split("=") for p in opts.per_domain.split(","))}
    else:
        wanted = dict.fromkeys(domains, int(opts.per_domain))
    for domain in domains:
        folder = opts.data / "data" / "tau2" / "domains" / domain
        tasks = {t["id"]: t for t in json.loads((folder / "tasks.json").read_text(encoding="utf-8"))}
        base_ids = json.loads((folder / "split_tasks.json").read_text(encoding="utf-8"))["base"]
        golds = {i: tasks[i]["evaluation_criteria"].get("actions") or [] for i in base_ids}
        golds = {i: a for i, a in golds.items() if a}
        base = _load_db(domain, folder / "db.json")
        rng = random.Random(f"{opts.seed}:{domain}")
        sequences: list[dict[str, Any]] = []
        started = time.monotonic()
        ids = sorted(golds, key=lambda s: (len(s), s))
        while len(sequences) < wanted[domain]:
            task = rng.choice(ids)
            kind = KINDS[len(sequences) % len(KINDS)]
            calls = mutate(golds[task], kind, rng)
            if calls is None:
                continue
            recorded = run_sequence(domain, base, calls)
            sequences.append({"task": task, "kind": kind, "calls": calls, **recorded})
            if len(sequences) % 25 == 0:
                print(f"{domain}: {len(sequences)} in {time.monotonic() - started:.0f} s", file=sys.stderr)
        out["domains"][domain] = {"sequences": sequences}
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    opts.out.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
