"""The LLM judge: ``judge_passed`` / ``judge_score`` and the per-claim ``nl_assertion`` verdicts.

Off unless ``ScoringOptions.judge_model`` is set. Talks to any OpenAI-compatible chat-completions
endpoint through the official ``openai`` client (base URL from ``judge_base_url``, key from the
environment variable ``judge_api_key_env``; a local server needs no real key). The prompt is
``templates/judge.md.j2`` rendered in a sandbox with StrictUndefined; its SHA-256 is recorded.

A judge failure (transport error, bad JSON, missing score) is retried ``judge_retries`` times and
then recorded as not applicable with the error: it is never scored as an agent failure.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import os
import re
from dataclasses import asdict, dataclass, field
from functools import cache
from typing import Any

import jinja2
from jinja2.sandbox import SandboxedEnvironment

from engine.backends import token_count
from engine.model import TEMPLATE_DIR, Scenario, SessionResult
from engine.options import ScoringOptions
from engine.protocol import clip
from engine.render import BoundedSandbox, render

JUDGE_TEMPLATE = "judge.md.j2"


@dataclass
class JudgeOutcome:
    """What the judge said about one session.

    ``score`` in 0–1 (None when the judge failed); ``passed`` = ``score >= threshold``;
    ``nl_assertion_verdicts`` ``[{index (1-based), assertion, passed, reason}]``;
    ``nl_assertion_pass_rate`` passes / assertions (None without assertions or on error);
    ``error`` the last failure message after retries; ``prompt_sha256`` SHA-256 hex of the prompt;
    ``usage`` ``{model, prompt_tokens, completion_tokens, calls}``.
    """

    model: str
    base_url: str | None
    threshold: float
    prompt: str
    prompt_sha256: str
    score: float | None = None
    passed: bool | None = None
    reason: str = ""
    nl_assertion_verdicts: list[dict[str, Any]] = field(default_factory=list)
    nl_assertion_pass_rate: float | None = None
    error: str | None = None
    attempts: int = 0
    raw_response: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The ``judge_result.json`` body (the verbatim prompt included as ``judge_input``)."""
        body = asdict(self)
        body["judge_input"] = body.pop("prompt")
        return body


@cache
def _env() -> SandboxedEnvironment:
    return BoundedSandbox(
        loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )


def _spoken_turns(result: SessionResult) -> list[dict[str, str]]:
    return [
        {"role": str(ev.get("role")), "content": str(ev.get("content"))}
        for ev in result.transcript
        if ev.get("role") in ("user", "agent") and isinstance(ev.get("content"), str) and ev.get("content")
    ]


#: At most this many tool calls are shown to the judge (the first ones; the rest are counted).
MAX_JUDGE_TOOL_CALLS = 100
#: Each call's arguments and result are shown as JSON text cut to this many characters.
MAX_JUDGE_TOOL_TEXT = 2000


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    if len(text) <= MAX_JUDGE_TOOL_TEXT:
        return text
    return f"{text[:MAX_JUDGE_TOOL_TEXT]}... ({len(text)} chars)"


def _tool_calls(result: SessionResult) -> list[dict[str, str]]:
    """Every tool call of the session in order, reads included, as ``{side, name, arguments,
    result}`` texts (arguments as the side sent them; JSON cut to MAX_JUDGE_TOOL_TEXT)."""
    return [
        {
            "side": str(call.get("side", "agent")),
            "name": str(call.get("name")),
            "arguments": _shown(call.get("arguments")),
            "result": _shown(call.get("result")),
        }
        for call in result.tool_calls[:MAX_JUDGE_TOOL_CALLS]
    ]


def render_judge_prompt(scenario: Scenario, result: SessionResult) -> str:
    """Render the domain's judge template (``templates.judge`` in the domain spec, looked up like
    the agent and user templates), else the repository's ``templates/judge.md.j2``.

    The reference shown is ``scenario.judge_reference`` when the scenario has one, else its
    ``reference_answer``. ``tool_calls`` lists every call with its result (the first
    MAX_JUDGE_TOOL_CALLS; ``tool_calls_omitted`` counts the rest): a session without tool calls
    renders the same prompt as before they were shown.
    Raises SpecError or jinja2 errors on a broken template (the caller records the judge as N/A).
    """
    reference = scenario.judge_reference
    if reference is None:
        reference = scenario.reference_answer
    variables = {
        "scenario_name": scenario.name,
        "description": scenario.description,
        "user_goal": scenario.user.goal,
        "reference": json.dumps(reference, indent=2, ensure_ascii=False) if reference is not None else "",
        "actions": json.dumps(result.actions, indent=2, ensure_ascii=False, default=str),
        "tool_calls": _tool_calls(result),
        "tool_calls_omitted": max(0, len(result.tool_calls) - MAX_JUDGE_TOOL_CALLS),
        "transcript": _spoken_turns(result),
        "nl_assertions": list(scenario.nl_assertions),
    }
    if scenario.domain.templates.get("judge"):
        return render(scenario, "judge", **variables)
    return _env().get_template(JUDGE_TEMPLATE).render(**variables)


_OBJECT_START = re.compile(r'\{\s*["}]')


def _reply_object(text: str) -> dict[str, Any]:
    """The first JSON object in ``text`` that has a ``score`` key, else the first JSON object.

    Each ``{`` is tried as the start of an object (``json.JSONDecoder.raw_decode``), so chatter
    holding braces before or after the object does not hide it. Raises ValueError when none parses.
    """
    decoder = json.JSONDecoder()
    first: dict[str, Any] | None = None
    error: str | None = None
    # only a '{' that opens a key or an empty object can start one; at most 200 tries, so a reply
    # of 200k '{' costs milliseconds, not seconds (each failed decode scans the text for its line)
    for found in itertools.islice(_OBJECT_START.finditer(text), 200):
        try:
            body, _ = decoder.raw_decode(text, found.start())
        except (json.JSONDecodeError, RecursionError) as exc:
            error = error or str(exc)
            continue
        if isinstance(body, dict):
            if "score" in body:
                return body
            first = first if first is not None else body
    if first is not None:
        return first
    if error is None:
        raise ValueError("judge reply holds no JSON object")
    raise ValueError(f"judge reply is not valid JSON: {error}")


def parse_judge_reply(text: str, n_assertions: int) -> tuple[float, str, list[dict[str, Any]]]:
    """Parse the judge's JSON reply (code fences and chatter around it tolerated).

    Returns ``(score, reason, verdicts)``; raises ValueError when the score is missing or out of
    0–1, when assertions were asked for and a verdict is missing, or when one claim got two
    different verdicts.
    """
    body = _reply_object(text or "")
    score = body.get("score")
    if isinstance(score, bool) or not isinstance(score, int | float) or not 0.0 <= score <= 1.0:
        raise ValueError(f"judge score {score!r} is not a number in 0..1")
    verdicts: dict[int, dict[str, Any]] = {}
    for item in body.get("nl_assertion_verdicts") or []:
        index = item.get("index") if isinstance(item, dict) else None
        if isinstance(index, int) and not isinstance(index, bool) and isinstance(item.get("passed"), bool):
            if index in verdicts and verdicts[index]["passed"] != item["passed"]:
                raise ValueError(f"judge gave claim {index} two different verdicts")
            verdicts[index] = {"passed": item["passed"], "reason": str(item.get("reason", ""))}
    missing = [i for i in range(1, n_assertions + 1) if i not in verdicts]
    if missing:
        raise ValueError(f"judge gave no verdict for claim(s) {missing}")
    ordered = [{"index": i, **verdicts[i]} for i in range(1, n_assertions + 1)]
    return float(score), str(body.get("reason", "")), ordered


async def run_judge(scenario: Scenario, result: SessionResult, options: ScoringOptions) -> JudgeOutcome:
    """Ask the judge about one session; never raises (failures end up in ``outcome.error``)."""
    from openai import AsyncOpenAI  # imported here: runs without a judge never pay for it

    model = str(options.judge_model)
    try:
        prompt = render_judge_prompt(scenario, result)
    except Exception as exc:  # a broken template is the judge's failure, never the agent's
        return JudgeOutcome(
            model=model,
            base_url=options.judge_base_url,
            threshold=options.judge_threshold,
            prompt="",
            prompt_sha256="",
            error=f"judge prompt did not render: {exc}",
        )
    outcome = JudgeOutcome(
        model=model,
        base_url=options.judge_base_url,
        threshold=options.judge_threshold,
        prompt=prompt,
        prompt_sha256=hashlib.sha256(prompt.encode("utf-8")).hexdigest(),
        usage={"model": model, "prompt_tokens": 0, "completion_tokens": 0, "calls": 0},
    )
    client = AsyncOpenAI(
        base_url=options.judge_base_url,
        api_key=os.environ.get(options.judge_api_key_env) or "unused",
        timeout=options.judge_timeout_s,
        max_retries=0,
    )
    claims = list(scenario.nl_assertions)
    try:
        for attempt in range(1, options.judge_retries + 2):
            outcome.attempts = attempt
            try:
                reply = await client.chat.completions.create(
                    model=model, temperature=0, messages=[{"role": "user", "content": prompt}]
                )
                outcome.usage["calls"] += 1
                if isinstance(reply, str | bytes | list | dict):  # the client could not parse it
                    raise ValueError(f"the reply is not a chat completion: {str(reply)[:200]!r}")
                usage = reply.usage  # odd token counts must not throw away a valid verdict
                outcome.usage["prompt_tokens"] += token_count(getattr(usage, "prompt_tokens", 0))
                outcome.usage["completion_tokens"] += token_count(getattr(usage, "completion_tokens", 0))
                outcome.raw_response = reply.choices[0].message.content if reply.choices else None
                score, reason, verdicts = parse_judge_reply(outcome.raw_response or "", len(claims))
            except Exception as exc:  # transport, HTTP status, bad reply: retry, then record
                outcome.error = clip(f"{type(exc).__name__}: {exc}")  # one line, bounded
                if attempt <= options.judge_retries:
                    await asyncio.sleep(options.judge_retry_delay_s * attempt)
                continue
            outcome.error = None
            outcome.score, outcome.reason = score, reason
            outcome.passed = score >= options.judge_threshold
            outcome.nl_assertion_verdicts = [
                {
                    "index": v["index"],
                    "assertion": claims[v["index"] - 1],
                    "passed": v["passed"],
                    "reason": v["reason"],
                }
                for v in verdicts
            ]
            if claims:
                outcome.nl_assertion_pass_rate = sum(v["passed"] for v in verdicts) / len(claims)
            break
    finally:
        await client.close()
    return outcome
