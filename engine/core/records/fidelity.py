"""Two records of ``metrics.json`` (version 4): the caller's fidelity and a failure's attribution.

- :class:`UserFidelity` (``user_fidelity``): what the caller-fidelity checks found in one session
  (``engine.scoring.fidelity``): each check's outcome, the findings citing turns, and the attempts
  a regeneration replaced.
- :class:`Attribution` (``attribution``): the most likely cause of a FAIL, with its evidence
  (``engine.scoring.attribution``); null for a pass, an error or a not-applicable result.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from engine.core.records.fields import RecordError, get

#: The causes a FAIL is attributed to, in the order the summary lists them.
CAUSES: tuple[str, ...] = ("agent", "user_simulator", "speech", "data", "infrastructure")
Cause = Literal["agent", "user_simulator", "speech", "data", "infrastructure"]

#: The prefix of the ``error_cause.message`` of a result whose caller broke its instructions (the
#: runner regenerates exactly those).
FIDELITY_ERROR = "caller fidelity: "


@dataclass(frozen=True)
class Finding:
    """One thing the caller did that its instructions do not allow: ``check`` the check's name,
    ``turn`` the 0-based index of the caller's turn (among its spoken turns), ``text`` the words
    concerned (clipped), ``detail`` one line saying what is wrong."""

    check: str
    turn: int
    detail: str
    text: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"check": self.check, "turn": self.turn, "detail": self.detail, "text": self.text}

    @classmethod
    def from_json(cls, body: Any) -> Finding:
        if not isinstance(body, dict):
            raise RecordError("user_fidelity.findings: an entry is not an object")
        return cls(
            get(body, "check", str), get(body, "turn", int), get(body, "detail", str), get(body, "text", str)
        )

    def line(self) -> str:
        """``caller turn N: detail`` (N 1-based, as the transcript is read)."""
        return f"caller turn {self.turn + 1}: {self.detail}"


@dataclass(frozen=True)
class UserFidelity:
    """``user_fidelity``: ``checks`` maps each check to True (held), False (broken) or None (not
    applicable: nothing to check); ``findings`` what broke, in turn order; ``turns`` the caller
    turns checked; ``enforced`` False when the caller cannot be regenerated (the replay caller,
    which plays the gold lines: its findings are reported, never an error); ``judged`` the judge's
    rubric (``engine.scoring.rubric``) answered: its checks are in ``checks`` and its findings
    among ``findings``; ``attempt`` 0 for the first session, k for the k-th regeneration;
    ``replaced`` the reasons (first finding's check) of the attempts this one replaced, in order;
    ``dropped`` the rubric's findings left out because they cited no caller turn (or no rubric
    check); ``judge_error`` why the rubric was not answered (None: answered, or not asked), the
    session then checked by the deterministic checks alone. The last two are written since
    metrics version 5 (0 and None when read from version 4)."""

    checks: Mapping[str, bool | None]
    findings: tuple[Finding, ...]
    turns: int
    enforced: bool = True
    judged: bool = False
    attempt: int = 0
    replaced: tuple[str, ...] = ()
    dropped: int = 0
    judge_error: str | None = None

    @property
    def broken(self) -> bool:
        """A check failed (or a judge finding exists)."""
        return bool(self.findings)

    @property
    def reason(self) -> str | None:
        """The first finding's check, None when the caller held."""
        return self.findings[0].check if self.findings else None

    def to_json(self) -> dict[str, Any]:
        return {
            "checks": dict(self.checks),
            "findings": [f.to_json() for f in self.findings],
            "turns": self.turns,
            "enforced": self.enforced,
            "judged": self.judged,
            "attempt": self.attempt,
            "replaced": list(self.replaced),
            "dropped": self.dropped,
            "judge_error": self.judge_error,
        }

    @classmethod
    def from_json(cls, body: Any) -> UserFidelity:
        if not isinstance(body, dict):
            raise RecordError("user_fidelity: not an object")
        checks = get(body, "checks", dict)
        for name, value in checks.items():
            if value is not None and not isinstance(value, bool):
                raise RecordError(f"user_fidelity.checks.{name}: not true, false or null")
        replaced = get(body, "replaced", list)
        if not all(isinstance(r, str) for r in replaced):
            raise RecordError("user_fidelity.replaced: not a list of strings")
        return cls(
            checks=checks,
            findings=tuple(Finding.from_json(f) for f in get(body, "findings", list)),
            turns=get(body, "turns", int),
            enforced=get(body, "enforced", bool),
            judged=get(body, "judged", bool),
            attempt=get(body, "attempt", int),
            replaced=tuple(replaced),
            dropped=get(body, "dropped", int) if "dropped" in body else 0,
            judge_error=get(body, "judge_error", str, None) if "judge_error" in body else None,
        )


@dataclass(frozen=True)
class Attribution:
    """``attribution``: ``cause`` one of :data:`CAUSES`; ``turn`` the 0-based transcript event
    index where the session first left what the gold and the persona allow (None when no single
    event shows it: a wrong end state only); ``evidence`` one line saying what happened there."""

    cause: str
    evidence: str
    turn: int | None = None

    def __post_init__(self) -> None:
        if self.cause not in CAUSES:
            raise ValueError(f"attribution cause {self.cause!r} is not one of {', '.join(CAUSES)}")

    def to_json(self) -> dict[str, Any]:
        return {"cause": self.cause, "turn": self.turn, "evidence": self.evidence}

    @classmethod
    def from_json(cls, body: Any) -> Attribution:
        if not isinstance(body, dict):
            raise RecordError("attribution: not an object")
        cause = get(body, "cause", str)
        if cause not in CAUSES:
            raise RecordError(f"attribution.cause: {cause!r} is not one of {', '.join(CAUSES)}")
        return cls(cause, get(body, "evidence", str), get(body, "turn", int, None))
