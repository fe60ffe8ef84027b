"""Fixtures of the tau2 airline/retail tests: the real upstream files (loaded once per session) and
the oracle of what tau2's own code computes for every gold action.

Data come from the data root (``$EVAL_DATA_ROOT`` or ./data, filled by ``make data``). The oracle
is a test expectation only: ``$EVAL_TAU2_ORACLE``, else ``tau2-17e07b1-gold.json`` in an
``oracles/`` folder next to the data root or next to the repository, else in /work/shared/oracles.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from engine.domains import tau2_airline, tau2_retail

REPO = Path(__file__).resolve().parents[3]
RELEASE = "tau2-17e07b1"
ORACLE_NAME = "tau2-17e07b1-gold.json"
PACKAGES: dict[str, ModuleType] = {"airline": tau2_airline, "retail": tau2_retail}


@dataclass(frozen=True)
class Tau2Domain:
    """One domain's upstream data. ``db`` is shared by every test: never change it (replay through
    ``engine.domains.tau2_common.Session``, which copies what a tool writes)."""

    name: str
    package: ModuleType
    db: dict[str, Any]
    tasks: dict[str, dict[str, Any]]
    base: list[str]
    db_path: Path

    def actions(self, task_id: str) -> list[dict[str, Any]]:
        """The task's gold actions (``evaluation_criteria.actions``; empty when null)."""
        return self.tasks[task_id]["evaluation_criteria"]["actions"] or []


def _load(root: Path, name: str) -> Tau2Domain:
    folder = root / RELEASE / "data" / "tau2" / "domains" / name
    assert folder.is_dir(), f"no tau2 data under {root}: run `make data`"
    tasks = json.loads((folder / "tasks.json").read_text(encoding="utf-8"))
    base = json.loads((folder / "split_tasks.json").read_text(encoding="utf-8"))["base"]
    db = json.loads((folder / "db.json").read_text(encoding="utf-8"))
    return Tau2Domain(name, PACKAGES[name], db, {t["id"]: t for t in tasks}, base, folder / "db.json")


@pytest.fixture(scope="session")
def tau2(data_root: Path) -> dict[str, Tau2Domain]:
    """``{"airline": ..., "retail": ...}``, each DB parsed once for the whole session."""
    return {name: _load(data_root, name) for name in PACKAGES}


def oracle_path(data_root: Path) -> Path:
    """Where the oracle file is (see the module docstring). Raises FileNotFoundError."""
    explicit = os.environ.get("EVAL_TAU2_ORACLE")
    candidates = [Path(explicit)] if explicit else []
    candidates += [
        folder / ORACLE_NAME
        for folder in (
            data_root.parent / "oracles",
            data_root.parent / "shared" / "oracles",
            REPO.parent / "shared" / "oracles",
            Path("/work/shared/oracles"),
        )
    ]
    for path in candidates:
        if path.is_file():
            return path
    raise FileNotFoundError(f"{ORACLE_NAME} not found (tried {', '.join(map(str, candidates))})")


@pytest.fixture(scope="session")
def tau2_oracle(data_root: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """``{domain: {task id: oracle entry}}`` for airline and retail."""
    domains = json.loads(oracle_path(data_root).read_text(encoding="utf-8"))["domains"]
    return {name: {t["id"]: t for t in domains[name]["tasks"]} for name in PACKAGES}


def run(session: Any, domain: Tau2Domain, name: str, **args: Any) -> tuple[bool, str]:
    """Call tool ``name`` in ``session`` (an ``engine.domains.tau2_common.Session``); returns tau2's
    (error flag, text) of the result."""
    result = session.call(domain.package.HANDLERS, domain.package.WRITES, name, args)
    failed = result["status"] == "error"
    return failed, result["message"] if failed else result["content"]


def shares_records(db: dict[str, Any], base: dict[str, Any], tables: tuple[str, ...] = ()) -> bool:
    """Whether every record of ``tables`` (default all) in a session DB is the base DB's own object
    (nothing was written there: the session still shares it)."""
    for table in tables or tuple(base):
        if db[table].keys() != base[table].keys() or any(
            db[table][k] is not v for k, v in base[table].items()
        ):
            return False
    return True
