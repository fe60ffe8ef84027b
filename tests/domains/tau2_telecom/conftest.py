"""Fixtures of the tau2 telecom tests: the real upstream files, the oracle, and replays of every task.

Files are found through the data root (``engine.core.dataroot.resolve_data_root``). The oracle
(``tau2-17e07b1-gold.json``, what tau2's own code computed) is a test expectation only.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from engine.core.dataroot import ENV_VAR, resolve_data_root
from engine.domains.registry import plugins
from engine.domains.tau2_telecom import data
from engine.domains.tau2_telecom.gold import Replay, replay_gold
from engine.spec.loader import LoadedDomain, load_domain

REPO = Path(__file__).resolve().parents[3]
SHARED = Path("/work/shared")
ORACLE_NAME = "tau2-17e07b1-gold.json"


@dataclass(frozen=True)
class Telecom:
    """The upstream telecom data: raw DBs, the 114 tasks, the oracle's task entries by id."""

    root: Path
    agent_db: dict[str, Any]
    user_db: dict[str, Any]
    tasks: list[dict[str, Any]]
    oracle: dict[str, dict[str, Any]]


def _oracle_path(root: Path) -> Path:
    # TODO(lead): point this at wherever the merged set-up keeps the oracle (or its derived gold hashes).
    for folder in (root / "oracles", REPO.parent / "shared" / "oracles", SHARED / "oracles"):
        if (folder / ORACLE_NAME).is_file():
            return folder / ORACLE_NAME
    raise FileNotFoundError(f"{ORACLE_NAME} not found next to the data root {root} or in {SHARED}/oracles")


@pytest.fixture(scope="package")
def telecom() -> Iterator[Telecom]:
    """The telecom files from the data root; package-scoped, so the fallback below never leaks
    into other test packages."""
    with pytest.MonkeyPatch.context() as patch:
        root = resolve_data_root(None)
        if not (root / "tau2-17e07b1").is_dir():
            # TODO(lead): remove this fallback once `make data` installs tau2-17e07b1 and tau2-v0.2.0.
            patch.setenv(ENV_VAR, str(SHARED))
            root = resolve_data_root(None)
        entries = json.loads(_oracle_path(root).read_text(encoding="utf-8"))["domains"]["telecom"]["tasks"]
        yield Telecom(
            root=root,
            agent_db=data.load_agent_db(root),
            user_db=data.load_user_db(root),
            tasks=data.load_tasks(root),
            oracle={entry["id"]: entry for entry in entries},
        )


@pytest.fixture(scope="package")
def evaluator_replays(telecom: Telecom) -> dict[str, Replay]:
    """Every task replayed the way tau2's evaluator builds its gold environment."""
    return {t["id"]: replay_gold(t, telecom.agent_db, telecom.user_db, "evaluator") for t in telecom.tasks}


@pytest.fixture(scope="package")
def live_replays(telecom: Telecom) -> dict[str, Replay]:
    """Every task replayed with a sync after each call, as in a tau2 conversation."""
    return {t["id"]: replay_gold(t, telecom.agent_db, telecom.user_db, "live") for t in telecom.tasks}


@dataclass(frozen=True)
class Specs:
    """Both telecom spec folders loaded with the registered plugins (``manual``: specs/tau2_telecom,
    ``workflow``: specs/tau2_telecom_workflow)."""

    manual: LoadedDomain
    workflow: LoadedDomain


MANUAL_SPEC = REPO / "specs" / "tau2_telecom"
WORKFLOW_SPEC = REPO / "specs" / "tau2_telecom_workflow"


@pytest.fixture(scope="package")
def specs(telecom: Telecom) -> Specs:
    """specs/tau2_telecom and its workflow variant, loaded once for the package."""
    return Specs(
        load_domain(MANUAL_SPEC, telecom.root, plugins=plugins()),
        load_domain(WORKFLOW_SPEC, telecom.root, plugins=plugins()),
    )
