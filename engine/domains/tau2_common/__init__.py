"""Shared parts of the tau2-bench domains (airline, retail): mirrors tau2-bench 17e07b1.

- :mod:`.dbhash`: tau2's DB hash on a plain JSON DB, with a declared null-defaults table
  (``Tau2Hasher``: the same, reusing the text of records shared with a base DB).
- :mod:`.shapes`: declared record layouts, to show a record as tau2 does (model field order).
- :mod:`.results`: the handler result format and tau2's text for a value or an error.
- :mod:`.coerce`: the number conversions tau2's model constructors apply.
- :mod:`.generic`: ``calculate`` and ``transfer_to_human_agents``.
- :mod:`.replay`: replaying a task's gold actions with the handlers on a copy-on-write DB view.
"""

from engine.domains.tau2_common.dbhash import Tau2Hasher, tau2_db_hash, with_null_defaults
from engine.domains.tau2_common.gold import Replay, Session, replay_actions
from engine.domains.tau2_common.results import ToolFailure, fail, ok, tau2_tool

__all__ = [
    "Replay",
    "Session",
    "Tau2Hasher",
    "ToolFailure",
    "fail",
    "ok",
    "replay_actions",
    "tau2_db_hash",
    "tau2_tool",
    "with_null_defaults",
]
