"""Where tau2's telecom files sit under the data root, and reading them.

Paths are relative to the data root (``engine.core.dataroot.resolve_data_root``): the DBs, policy
texts and tool schemas from the ``tau2-17e07b1`` release, the 114 ``base`` tasks from
``tau2-v0.2.0`` (content-identical to 17e07b1's, which only ships the 2,285-task file).
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

DOMAIN_DIR = "tau2-17e07b1/data/tau2/domains/telecom"
AGENT_DB_FILE = f"{DOMAIN_DIR}/db.toml"
USER_DB_FILE = f"{DOMAIN_DIR}/user_db.toml"
TASKS_FILE = "tau2-v0.2.0/data/tau2/domains/telecom/tasks.json"
TOOL_SCHEMAS_FILE = "tau2-17e07b1/derived/tool_schemas.json"


def read_toml(path: Path) -> dict[str, Any]:
    """A TOML file as plain data (the telecom DBs keep their dates as strings)."""
    with path.open("rb") as fh:
        return tomllib.load(fh)


def load_agent_db(root: Path) -> dict[str, Any]:
    """The carrier DB as tau2 ships it (raw; ``environment.initialise`` normalises it)."""
    return read_toml(root / AGENT_DB_FILE)


def load_user_db(root: Path) -> dict[str, Any]:
    """The phone DB as tau2 ships it (raw; no ``surroundings`` block until normalised)."""
    return read_toml(root / USER_DB_FILE)


def load_tasks(root: Path) -> list[dict[str, Any]]:
    """The 114 base tasks, in file order."""
    tasks = json.loads((root / TASKS_FILE).read_text(encoding="utf-8"))
    return tasks["tasks"] if isinstance(tasks, dict) else tasks


def load_tool_schemas(root: Path) -> dict[str, list[dict[str, Any]]]:
    """tau2's OpenAI tool schemas: ``{"agent": [13], "user": [30]}`` (``telecom``, ``telecom_user``)."""
    domains = json.loads((root / TOOL_SCHEMAS_FILE).read_text(encoding="utf-8"))["domains"]
    return {"agent": domains["telecom"], "user": domains["telecom_user"]}
