"""``session.json``: what one conversation produced, written as soon as it ends (before scoring).

With ``final_db.json``, ``final_user_db.json``, ``actions.json``, ``tool_calls.json`` and
``transcript.jsonl`` it is everything scoring reads, so a result can be scored again (``evalctl
rescore``, or ``--resume`` after a crash during judging) without running the conversation again.
It is written last of those files: its presence marks the session's artifacts complete.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine.core.records.common import ErrorCause, SpentUsage, Usage, usage_table
from engine.core.records.fields import RecordError, exact_keys, get

SESSION_SCHEMA = "evalctl.session/1"


@dataclass(frozen=True)
class SessionRecord:
    """One (scenario, trial) conversation.

    ``invocation`` the id of the ``evalctl run`` invocation that ran it (``run.json``
    ``invocations[].id``); ``stop_reason`` as in metrics.json; ``error`` the session's error
    message, ``error_cause`` set when that error is infrastructure's, not the agent's;
    ``final_db`` / ``user_db`` whether ``final_db.json`` / ``final_user_db.json`` were written;
    ``started_at`` / ``ended_at`` ISO 8601 UTC (milliseconds); ``duration_s`` / ``engine_time_s``
    seconds; ``usage`` per role (agent, user); ``superseded_usage`` the model use of earlier
    attempts of this result that this one replaced.
    """

    scenario_name: str
    trial: int
    invocation: str
    stop_reason: str
    error: str | None
    error_cause: ErrorCause | None
    agent_turns: int
    user_turns: int
    final_db: bool
    user_db: bool
    started_at: str
    ended_at: str
    duration_s: float
    engine_time_s: float
    agent_backend: str
    user_backend: str
    usage: Mapping[str, Usage]
    superseded_usage: tuple[SpentUsage, ...] = ()

    KEYS = (
        "schema",
        "scenario_name",
        "trial",
        "invocation",
        "stop_reason",
        "error",
        "error_cause",
        "agent_turns",
        "user_turns",
        "final_db",
        "user_db",
        "started_at",
        "ended_at",
        "duration_s",
        "engine_time_s",
        "agent_backend",
        "user_backend",
        "usage",
        "superseded_usage",
    )

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"schema": SESSION_SCHEMA}
        for key in self.KEYS[1:]:
            body[key] = getattr(self, key)
        body["error_cause"] = None if self.error_cause is None else self.error_cause.to_json()
        body["usage"] = {role: u.to_json() for role, u in self.usage.items()}
        body["superseded_usage"] = [s.to_json() for s in self.superseded_usage]
        return body

    @classmethod
    def from_json(cls, body: Any) -> SessionRecord:
        """Parse a ``session.json`` body; raises RecordError for anything :meth:`to_json` would not
        write."""
        if not isinstance(body, dict) or "schema" not in body or body["schema"] != SESSION_SCHEMA:
            raise RecordError(f"not an evalctl session record: schema is not {SESSION_SCHEMA}")
        exact_keys(body, cls.KEYS, "session")
        seconds = (int, float)
        return cls(
            scenario_name=get(body, "scenario_name", str),
            trial=get(body, "trial", int),
            invocation=get(body, "invocation", str),
            stop_reason=get(body, "stop_reason", str),
            error=get(body, "error", str, None),
            error_cause=ErrorCause.from_json(get(body, "error_cause", dict, None)),
            agent_turns=get(body, "agent_turns", int),
            user_turns=get(body, "user_turns", int),
            final_db=get(body, "final_db", bool),
            user_db=get(body, "user_db", bool),
            started_at=get(body, "started_at", str),
            ended_at=get(body, "ended_at", str),
            duration_s=get(body, "duration_s", *seconds),
            engine_time_s=get(body, "engine_time_s", *seconds),
            agent_backend=get(body, "agent_backend", str),
            user_backend=get(body, "user_backend", str),
            usage=usage_table(get(body, "usage", dict)),
            superseded_usage=tuple(SpentUsage.from_json(e) for e in get(body, "superseded_usage", list)),
        )
