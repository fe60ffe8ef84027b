"""Parts shared by the session and metrics records: model use (:class:`Usage`, :class:`SpentUsage`)
and the cause of an ``error`` verdict (:class:`ErrorCause`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from engine.core.records.fields import RecordError, exact_keys, get

#: The verdict of a result that could not be measured because of infrastructure (``is_successful``).
ERROR_VERDICT = "error"


class ErrorSource(StrEnum):
    """Where an infrastructure failure came from (``error_cause.source``): never the agent's own
    behaviour. ``agent_model``: the model endpoint of a built-in ``openai:`` agent side failed or
    did not answer; ``user_simulator``: the user side failed (its model, its protocol, its silence);
    ``transport``: a side could not be reached or its connection broke without a close frame;
    ``judge``: a gating judge signal could not be measured (unreachable, HTTP error, unreadable
    reply, template error); ``engine``: an engine bug or a crashed built-in side."""

    AGENT_MODEL = "agent_model"
    USER_SIMULATOR = "user_simulator"
    TRANSPORT = "transport"
    JUDGE = "judge"
    ENGINE = "engine"


@dataclass(frozen=True)
class ErrorCause:
    """Why a result has the verdict ``error``: ``source`` an :class:`ErrorSource` value, ``message``
    one line (the failure as reported)."""

    source: str
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "message": self.message}

    def __str__(self) -> str:
        return f"{self.source}: {self.message}"

    @classmethod
    def from_json(cls, body: Any) -> ErrorCause | None:
        if body is None:
            return None
        if not isinstance(body, dict):
            raise RecordError("error_cause: not an object")
        exact_keys(body, ("source", "message"), "error_cause")
        source = get(body, "source", str)
        if source not in tuple(ErrorSource):
            raise RecordError(f"error_cause.source: {source!r} is not one of {', '.join(ErrorSource)}")
        return cls(source, get(body, "message", str))


@dataclass(frozen=True)
class Usage:
    """Model use of one role (agent, user, judge): ``model`` (None when the side never named one),
    tokens as the server counted them, ``calls`` = model requests (retries excluded);
    ``unreported``: how many of those requests' tokens are unknown (an in-process framework that
    reported none: the token counts then cover only the others; written only when not 0, so
    records without it are unchanged). :attr:`tokens_known` is False when none was reported."""

    model: str | None
    prompt_tokens: int
    completion_tokens: int
    calls: int
    unreported: int = 0

    FIELDS = ("model", "prompt_tokens", "completion_tokens", "calls")
    OPTIONAL = ("unreported",)

    @property
    def tokens_known(self) -> bool:
        """Whether any request's tokens were reported (False: the counts are unknown, not 0)."""
        return self.unreported == 0 or self.unreported < self.calls

    def to_json(self) -> dict[str, Any]:
        body = {k: getattr(self, k) for k in self.FIELDS}
        if self.unreported:
            body["unreported"] = self.unreported
        return body

    @classmethod
    def from_json(cls, body: Any) -> Usage:
        if not isinstance(body, dict):
            raise RecordError("usage: not an object")
        exact_keys(body, cls.FIELDS, "usage", cls.OPTIONAL)
        return cls(
            get(body, "model", str, None),
            get(body, "prompt_tokens", int),
            get(body, "completion_tokens", int),
            get(body, "calls", int),
            get(body, "unreported", int) if "unreported" in body else 0,
        )


def usage_table(body: Any) -> dict[str, Usage]:
    """``{role: Usage}`` from ``{role: {model, prompt_tokens, completion_tokens, calls}}``."""
    if not isinstance(body, dict):
        raise RecordError("usage: not an object")
    return {str(role): Usage.from_json(u) for role, u in body.items()}


@dataclass(frozen=True)
class SpentUsage:
    """Model use of earlier attempts of one result that a later attempt replaced (a session rerun by
    ``--resume``, a judge verdict replaced by ``evalctl rescore``): still paid for, so the run's
    totals count it. One entry per (role, model)."""

    role: str
    usage: Usage

    def to_json(self) -> dict[str, Any]:
        return {"role": self.role, **self.usage.to_json()}

    @classmethod
    def from_json(cls, body: Any) -> SpentUsage:
        if not isinstance(body, dict):
            raise RecordError("superseded_usage: not a list of objects")
        exact_keys(body, ("role", *Usage.FIELDS), "superseded_usage", Usage.OPTIONAL)
        rest = {k: v for k, v in body.items() if k != "role"}
        return cls(get(body, "role", str), Usage.from_json(rest))


def spent(entries: Iterable[SpentUsage], *more: tuple[str, Usage]) -> tuple[SpentUsage, ...]:
    """``entries`` plus ``more`` (role, usage), summed per (role, model), first-seen order; entries
    without any call or token are dropped."""
    sums: dict[tuple[str, str | None], list[int]] = {}
    for role, u in [*((e.role, e.usage) for e in entries), *more]:
        acc = sums.setdefault((role, u.model), [0, 0, 0, 0])
        acc[0] += u.prompt_tokens
        acc[1] += u.completion_tokens
        acc[2] += u.calls
        acc[3] += u.unreported
    return tuple(SpentUsage(role, Usage(model, *acc)) for (role, model), acc in sums.items() if any(acc))


def usage_pairs(table: Mapping[str, Usage]) -> tuple[tuple[str, Usage], ...]:
    """``(role, usage)`` pairs of a usage table, for :func:`spent`."""
    return tuple(table.items())
