"""Record what tau2-bench's own environment code does with mutated gold action sequences.

Not part of evalctl and never imported by it: run once, by hand, to write the oracle that
``tests/domains/tau2/test_tau2_mutation_oracle.py`` (airline, retail) and
``tests/domains/tau2_telecom/test_telecom_mutation_oracle.py`` replay through evalctl. It needs

- tau2-bench's sources at commit 17e07b1 (``git archive 17e07b1 src/tau2`` of a checkout), with
  ``src/tau2/__init__.py`` emptied (it imports the whole runner and its model clients);
- a throwaway venv with tau2's light dependencies: ``pydantic loguru docstring-parser deepdiff
  python-dotenv typing_extensions toml pyyaml addict``;
- the data release ``tau2-17e07b1/`` (the data root or /work/shared).

::

    PYTHONPATH=/tmp/tau2src/src /tmp/tau2venv/bin/python tools/tau2_oracle/record_mutations.py \\
        --data /work/shared/tau2-17e07b1 --tasks-data /work/shared/tau2-v0.2.0 \\
        --out tests/domains/tau2/data/tau2_mutation_oracle.json.gz

For each of airline, retail and telecom, ``--per-domain`` (300 each; airline's 7 MB DB costs about
1.5 s a sequence in tau2, a copy and a hash) sequences are made from the ``base`` split's gold actions
with ``random.Random(f"{seed}:{domain}")`` (mutation kinds: drop, double, swap, undeclared, missing,
wrong_type, convertible; see :func:`mutate`), so a domain's first N sequences do not depend on N or
on the other domains. Each is run on a fresh environment with ``Environment.get_response`` (tau2's
own path for a model's tool call). Telecom's tasks come from ``--tasks-data`` (v0.2.0's 114 base
tasks; 17e07b1 ships only its 2,285-task file), both sides' gold calls are mutated (a phone call
keeps ``requestor: user``), the task's ``initial_state`` is set with tau2's ``set_state`` first, and
each sequence also records the phone DB's hash and the task's env assertions as tau2's evaluator
runs them. The file holds each sequence's calls, each call's error flag and text (the text in full
for an error, as SHA-256 and length for a success, whose records can be long), and tau2's DB
hash(es) at the end; an ``--out`` ending in ``.gz`` is gzipped (with no name or timestamp in the header,
so the bytes are reproducible).
"""

from __future__ import annotations

import argparse
import copy
import gzip
import hashlib
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

KINDS = ("drop", "double", "swap", "undeclared", "missing", "wrong_type", "convertible")


def _call(action: dict[str, Any]) -> dict[str, Any]:
    call = {"name": action["name"], "arguments": copy.deepcopy(action.get("arguments") or {})}
    if action.get("requestor", "assistant") != "assistant":
        call["requestor"] = action["requestor"]  # telecom's phone tools
    return call


def mutate(actions: list[dict[str, Any]], kind: str, rng: random.Random) -> list[dict[str, Any]] | None:
    """One mutated copy of ``actions`` (``{name, arguments}`` each, plus ``requestor`` for a phone
    call), or None when ``kind`` cannot apply (too few calls, no argument of the needed type)."""
    calls = [_call(a) for a in actions]
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

    if domain == "telecom":
        from tau2.domains.telecom.environment import TelecomEnvironment
        from tau2.domains.telecom.tools import TelecomTools
        from tau2.domains.telecom.user_tools import TelecomUserTools

        agent_db, user_db = db
        return TelecomEnvironment("telecom", "", TelecomTools(agent_db), TelecomUserTools(user_db))

    if domain == "airline":
        from tau2.domains.airline.tools import AirlineTools

        return Environment(domain_name="airline", policy="", tools=AirlineTools(db))
    from tau2.domains.retail.tools import RetailTools

    return Environment(domain_name="retail", policy="", tools=RetailTools(db))


def _load_db(domain: str, path: Path) -> Any:
    if domain == "telecom":
        from tau2.domains.telecom.data_model import TelecomDB
        from tau2.domains.telecom.user_data_model import TelecomUserDB

        return TelecomDB.load(str(path / "db.toml")), TelecomUserDB.load(str(path / "user_db.toml"))
    if domain == "airline":
        from tau2.domains.airline.data_model import FlightDB

        return FlightDB.load(str(path))
    from tau2.domains.retail.data_model import RetailDB

    return RetailDB.load(str(path))


def run_sequence(
    domain: str, base: Any, calls: list[dict[str, Any]], task: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Each call through tau2's ``get_response`` on a deep copy of ``base``. For telecom, ``base``
    is the (carrier, phone) DB pair, the task's ``initial_state`` is set first with tau2's
    ``Environment.set_state``, and the end holds the phone's hash and the task's env assertions
    as tau2's evaluator runs them on the predicted environment (``run_env_assertion``)."""
    from tau2.data_model.message import ToolCall

    if domain == "telecom":
        from tau2.data_model.tasks import Task

        assert task is not None
        env = _environment(domain, tuple(db.model_copy(deep=True) for db in base))
        state = Task.model_validate(task).initial_state
        if state is not None:
            env.set_state(
                state.initialization_data, state.initialization_actions, state.message_history or []
            )
    else:
        env = _environment(domain, base.model_copy(deep=True))
    responses = []
    for n, call in enumerate(calls):
        requestor = call.get("requestor", "assistant")
        tool_call = ToolCall(id=f"c{n}", name=call["name"], arguments=call["arguments"], requestor=requestor)
        message = env.get_response(tool_call)
        text = message.content or ""
        entry: dict[str, Any] = {"error": bool(message.error)}
        if message.error:
            entry["content"] = text
        else:
            entry["sha256"] = hashlib.sha256(text.encode("utf-8")).hexdigest()
            entry["length"] = len(text)
        responses.append(entry)
    out: dict[str, Any] = {"responses": responses, "db_hash": env.get_db_hash()}
    if domain == "telecom":
        from tau2.data_model.tasks import Task

        out["user_db_hash"] = env.get_user_db_hash()
        criteria = Task.model_validate(task).evaluation_criteria
        assertions = (criteria.env_assertions if criteria else None) or []
        out["env_assertions"] = [env.run_env_assertion(a, raise_assertion_error=False) for a in assertions]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data", type=Path, required=True, help="the tau2-17e07b1 release folder")
    parser.add_argument("--tasks-data", type=Path, help="the tau2-v0.2.0 release folder (telecom's tasks)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--per-domain", default="300", help="N, or per domain: airline=300,telecom=100")
    parser.add_argument("--seed", type=int, default=30)
    parser.add_argument("--domains", default="airline,retail,telecom")
    opts = parser.parse_args(argv)
    if "telecom" in opts.domains.split(",") and opts.tasks_data is None:
        parser.error("telecom needs --tasks-data (the tau2-v0.2.0 release folder)")
    from loguru import logger

    logger.remove()  # tau2 logs every response at DEBUG
    out: dict[str, Any] = {
        "source": (
            "tau2-bench 17e07b1, Environment.get_response on a deep copy of the domain DB(s) per sequence"
            " (telecom: TelecomEnvironment after the task's set_state)"
        ),
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
        task_file = folder / "tasks.json"
        if domain == "telecom":  # 17e07b1 ships only the 2,285-task file; v0.2.0's base tasks are the same
            task_file = opts.tasks_data / "data" / "tau2" / "domains" / domain / "tasks.json"
        tasks = {t["id"]: t for t in json.loads(task_file.read_text(encoding="utf-8"))}
        base_ids = json.loads((folder / "split_tasks.json").read_text(encoding="utf-8"))["base"]
        golds = {i: tasks[i]["evaluation_criteria"].get("actions") or [] for i in base_ids}
        golds = {i: a for i, a in golds.items() if a}
        base = _load_db(domain, folder if domain == "telecom" else folder / "db.json")
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
            recorded = run_sequence(domain, base, calls, tasks[task])
            sequences.append({"task": task, "kind": kind, "calls": calls, **recorded})
            if len(sequences) % 25 == 0:
                print(f"{domain}: {len(sequences)} in {time.monotonic() - started:.0f} s", file=sys.stderr)
        out["domains"][domain] = {"sequences": sequences}
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    text = (json.dumps(out, indent=1, sort_keys=True) + "\n").encode("utf-8")
    if opts.out.suffix == ".gz":
        with opts.out.open("wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as fh:
            fh.write(text)  # no name and no timestamp in the header: the same bytes every time
    else:
        opts.out.write_bytes(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
