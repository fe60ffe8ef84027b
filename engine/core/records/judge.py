"""``judge_result.json``: what the LLM judge said about one session (written by
``engine.results.scoring_stage.finish_session`` from ``engine.scoring.judge.JudgeOutcome.to_json``).

``score`` 0–1 and ``passed`` (score >= ``threshold``) are None when the judge failed (``error``
its last failure); ``reason`` the judge's own words; ``nl_assertion_verdicts`` one object per
claim (``index``, ``assertion``, ``passed``, ``reason``); ``judge_input`` the verbatim prompt;
``raw_response`` the model's reply text; ``usage`` its tokens; ``dropped_parameters`` the request
parameters the endpoint refused and the verdict was asked without (written since evalctl read the
verdict by its schema; an older file has none).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.core.records.fields import RecordError, exact_keys, get, objects, strings

_KEYS = (
    "model",
    "base_url",
    "threshold",
    "score",
    "passed",
    "reason",
    "nl_assertion_verdicts",
    "nl_assertion_pass_rate",
    "error",
    "attempts",
    "raw_response",
    "usage",
    "prompt_sha256",
    "judge_input",
)


@dataclass(frozen=True)
class JudgeRecord:
    """The parts of ``judge_result.json`` a reader shows (see the module docstring)."""

    model: str
    threshold: float
    score: float | None
    passed: bool | None
    reason: str
    nl_assertion_verdicts: tuple[dict[str, Any], ...]
    error: str | None
    attempts: int
    raw_response: str | None
    dropped_parameters: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, body: Any) -> JudgeRecord:
        """Parse a ``judge_result.json`` body; RecordError for a missing or unknown key or a
        value of the wrong type."""
        if not isinstance(body, dict):
            raise RecordError(f"not a judge result: JSON {type(body).__name__}, not an object")
        exact_keys(body, _KEYS, "judge_result", ("dropped_parameters",))
        get(body, "base_url", str, None)
        get(body, "prompt_sha256", str)
        get(body, "judge_input", str)
        get(body, "usage", dict)
        get(body, "nl_assertion_pass_rate", int, float, None)
        return cls(
            model=get(body, "model", str),
            threshold=get(body, "threshold", int, float),
            score=get(body, "score", int, float, None),
            passed=get(body, "passed", bool, None),
            reason=get(body, "reason", str),
            nl_assertion_verdicts=objects(body, "nl_assertion_verdicts"),
            error=get(body, "error", str, None),
            attempts=get(body, "attempts", int),
            raw_response=get(body, "raw_response", str, None),
            dropped_parameters=strings(body, "dropped_parameters") if "dropped_parameters" in body else (),
        )
