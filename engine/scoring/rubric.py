"""The judged caller-fidelity rubric: what text matching cannot decide about the caller.

With a judge (``--judge-model``), every session played by a model caller (never the replay or
noop callers, whose words are the gold's or none) gets one more judge request: the rubric
``templates/user_rubric.md.j2`` (the caller's goal and its prompt exactly as it was given, with
its persona, rules and facts, and the call with every spoken turn numbered) asks whether the
caller kept to its persona, gave its facts as the persona says, pursued its goal, ended the call
by its rules and never spoke as the agent (:data:`RUBRIC_CHECKS`), answering JSON
``{"findings": [{check, turn, detail}]}`` (schema :data:`RUBRIC_SCHEMA`, sent as the response
format as the verdict's is).

Each finding must cite an existing caller turn: a finding whose ``turn`` is not the number of one
of the caller's spoken turns (turn 99 of a 7-turn call, an agent turn), or whose ``check`` is not
one of the rubric's, is dropped and counted (``user_fidelity.dropped``). Kept findings join the
deterministic ones in ``user_fidelity.findings`` (``turn`` the 0-based index among the caller's
turns, as theirs) and ``user_fidelity.judged`` is true: a judged finding makes the caller broken
exactly as a deterministic one does (``engine.results.scoring_stage.fidelity_error``).

A rubric request that fails (transport, HTTP status, a reply that holds no findings list; retried
``judge_retries`` times as the verdict is) never decides a verdict: its message is
``user_fidelity.judge_error`` and the session is scored on the deterministic checks alone.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, replace
from functools import cache
from typing import Any

import jinja2

from engine.core.model import TEMPLATE_DIR, Scenario, SessionResult
from engine.core.protocol import clip
from engine.core.records.fidelity import Finding, UserFidelity
from engine.core.render import BoundedSandbox, render_user_prompt
from engine.scoring.fidelity import UNENFORCED_CALLERS, spoken_lines
from engine.scoring.judge import Judge, clip_utterance, reply_objects

RUBRIC_TEMPLATE = "user_rubric.md.j2"
#: The response format's name in the request.
RUBRIC_FORMAT = "caller_rubric"

#: The rubric's checks (the ``check`` of a judged finding) and the question each asks.
RUBRIC_CHECKS: dict[str, str] = {
    "persona_adherence": "Did the caller stay in its persona (who it is, its situation, its manner)?",
    "facts_as_given": "Did every fact the caller gave (names, codes, numbers, dates, details) match "
    "its facts, as the persona states them?",
    "goal_pursued": "Did the caller pursue its goal, without asking for things outside it or "
    "giving it up unprompted?",
    "ended_by_rules": "Did the caller end the call (or keep it going) as its rules say?",
    "never_the_agent": "Did the caller never speak as the agent (offering help, reporting actions "
    "taken, role labels, tool calls)?",
}

#: The answer the rubric asks for, sent as the request's JSON-schema response format.
RUBRIC_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "findings": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "check": {"type": "string", "enum": list(RUBRIC_CHECKS)},
                    "turn": {"type": "integer"},
                    "detail": {"type": "string"},
                },
                "required": ["check", "turn", "detail"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["findings"],
    "additionalProperties": False,
}
_CLIP = 160


@dataclass
class RubricOutcome:
    """What the rubric found in one session: ``findings`` (kept, caller turns 0-based),
    ``dropped`` the findings that cited no caller turn or no rubric check, ``error`` the last
    failure after retries (None: answered), ``prompt_sha256`` SHA-256 hex of the prompt,
    ``usage`` ``{model, prompt_tokens, completion_tokens, calls}``."""

    model: str
    prompt: str
    prompt_sha256: str
    findings: list[Finding] = field(default_factory=list)
    dropped: int = 0
    error: str | None = None
    attempts: int = 0
    raw_response: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The ``user_rubric.json`` body (the verbatim prompt as ``judge_input``)."""
        body = asdict(self)
        body["judge_input"] = body.pop("prompt")
        body["findings"] = [f.to_json() for f in self.findings]
        return body


def rubric_applies(result: SessionResult) -> bool:
    """A model played the caller: not the replay or noop callers."""
    return result.user_backend.split(":")[0] not in UNENFORCED_CALLERS


@cache
def _env() -> jinja2.Environment:
    return BoundedSandbox(
        loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )


def numbered_turns(result: SessionResult) -> tuple[list[dict[str, Any]], dict[int, int]]:
    """``(turns, caller)``: every spoken turn as ``{number (1-based), role, content}`` in call
    order, and the caller's turn numbers mapped to their 0-based index among the caller's turns."""
    lines = sorted(
        [(i, "caller", t) for i, t in spoken_lines(result, "user")]
        + [(i, "agent", t) for i, t in spoken_lines(result, "agent")]
    )
    turns: list[dict[str, Any]] = []
    caller: dict[int, int] = {}
    for number, (_, role, text) in enumerate(lines, start=1):
        if role == "caller":
            caller[number] = len(caller)
        turns.append({"number": number, "role": role, "content": clip_utterance(text)})
    return turns, caller


def _json(value: Any) -> str:
    return json.dumps(value or {}, indent=2, ensure_ascii=False, default=str)


def _instructions(scenario: Scenario) -> str:
    """The caller's prompt as the run rendered it (``scenario_config/user_prompt.md``); "" when it
    does not render (the rubric then shows the user record's fields)."""
    try:
        return render_user_prompt(scenario).strip()
    except Exception:  # a prompt that does not render is validate's problem, not the rubric's
        return ""


def render_rubric_prompt(scenario: Scenario, result: SessionResult) -> str:
    """The rubric for one session (``templates/user_rubric.md.j2``): the scenario's goal, the
    caller's prompt exactly as it was given (else its user record's fields), the checks and the
    call with every spoken turn numbered (:func:`numbered_turns`). Raises jinja2 errors on a
    broken template."""
    user = scenario.user
    return (
        _env()
        .get_template(RUBRIC_TEMPLATE)
        .render(
            scenario_name=scenario.name,
            caller_name=user.name,
            persona=user.persona,
            goal=user.goal,
            instructions=_instructions(scenario),
            starting_utterance=user.starting_utterance,
            decision_tree=_json(dict(user.decision_tree)),
            facts=_json(dict(user.extra)),
            checks=[{"name": k, "question": q} for k, q in RUBRIC_CHECKS.items()],
            turns=numbered_turns(result)[0],
        )
    )


def parse_rubric_reply(text: str, result: SessionResult) -> tuple[list[Finding], int]:
    """``(findings, dropped)`` from a rubric reply: the last JSON object in it holding a
    ``findings`` list. A finding is kept when its ``check`` is one of :data:`RUBRIC_CHECKS` and
    its ``turn`` the number of a caller turn (``turn`` becomes that turn's 0-based caller index,
    ``text`` its words clipped); any other entry is dropped and counted. Raises ValueError when no
    object holds a findings list."""
    bodies = [
        b for b in reply_objects(text or "") if isinstance(b, dict) and isinstance(b.get("findings"), list)
    ]
    if not bodies:
        raise ValueError("rubric reply holds no JSON object with a findings list")
    _, caller = numbered_turns(result)
    words = [t for _, t in spoken_lines(result, "user")]
    kept: list[Finding] = []
    dropped = 0
    for item in bodies[-1]["findings"]:
        number = item.get("turn") if isinstance(item, dict) else None
        check = item.get("check") if isinstance(item, dict) else None
        if (
            not isinstance(number, int)
            or isinstance(number, bool)
            or number not in caller
            or not isinstance(check, str)
            or check not in RUBRIC_CHECKS
        ):
            dropped += 1
            continue
        index = caller[number]
        detail = " ".join(str(item.get("detail") or "judged a breach").split())[:_CLIP]
        text_ = " ".join(words[index].split())
        kept.append(Finding(str(check), index, detail, text_ if len(text_) <= _CLIP else text_[:157] + "..."))
    return sorted(kept, key=lambda f: f.turn), dropped


async def ask_rubric(judge: Judge, scenario: Scenario, result: SessionResult) -> RubricOutcome | None:
    """Ask ``judge`` the rubric about one session; None when it does not apply (the replay or
    noop caller: no request). Never raises: failures end up in ``outcome.error`` after
    ``judge_retries`` retries; a request parameter the endpoint refuses is dropped as the verdict's
    is (``engine.scoring.judge.Judge.refused_parameter``)."""
    if not rubric_applies(result):
        return None
    try:
        prompt = render_rubric_prompt(scenario, result)
    except Exception as exc:  # a broken template is the judge's failure, never the caller's
        return RubricOutcome(judge.model, "", "", error=clip(f"rubric prompt did not render: {exc}"))
    outcome = RubricOutcome(
        judge.model,
        prompt,
        hashlib.sha256(prompt.encode("utf-8")).hexdigest(),
        usage={"model": judge.model, "prompt_tokens": 0, "completion_tokens": 0, "calls": 0},
    )
    parsed = await judge.judged_request(
        outcome,
        lambda: judge.request(prompt, RUBRIC_SCHEMA, RUBRIC_FORMAT),
        lambda text: parse_rubric_reply(text, result),
    )
    if parsed is not None:
        outcome.findings, outcome.dropped = parsed
    return outcome


def with_rubric(fidelity: UserFidelity, rubric: RubricOutcome | None) -> UserFidelity:
    """``fidelity`` with the rubric's outcome: its findings added (turn order kept), each rubric
    check in ``checks`` (False when it found something), ``judged`` true, ``dropped`` counted; a
    failed rubric only sets ``judge_error``. ``rubric`` None: ``fidelity`` unchanged."""
    if rubric is None:
        return fidelity
    if rubric.error is not None:
        return replace(fidelity, judge_error=rubric.error)
    found = {f.check for f in rubric.findings}
    checks = {**fidelity.checks, **{name: name not in found for name in RUBRIC_CHECKS}}
    findings = tuple(sorted((*fidelity.findings, *rubric.findings), key=lambda f: f.turn))
    return replace(fidelity, checks=checks, findings=findings, judged=True, dropped=rubric.dropped)
