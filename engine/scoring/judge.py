"""The LLM judge: ``judge_passed`` / ``judge_score`` and the per-claim ``nl_assertion`` verdicts.

Off unless ``ScoringOptions.judge_model`` is set. Talks to any OpenAI-compatible chat-completions
endpoint through the official ``openai`` client (base URL from ``judge_base_url``, key from the
environment variable ``judge_api_key_env``; a local server needs no real key). The prompt is
``templates/judge.md.j2`` rendered in a sandbox with StrictUndefined; its SHA-256 is recorded.

The verdict is the JSON object the template asks for, requested as the endpoint's JSON-schema
response format (:data:`VERDICT_SCHEMA`) and checked against that schema when read
(:func:`parse_judge_reply`). A judge failure (transport error, HTTP error, a reply that is not a
verdict, a template that does not render) is retried ``judge_retries`` times and then recorded with
the error: it is never scored as an agent failure (a gating judge signal then gives the result the
verdict ``error``, see ``engine.results.scoring_stage``).
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
import os
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import cache
from typing import Any, TypeVar

import jinja2
from jinja2.sandbox import SandboxedEnvironment
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from engine.core.model import TEMPLATE_DIR, Scenario, SessionResult
from engine.core.model_args import request_kwargs
from engine.core.options import ScoringOptions
from engine.core.protocol import clip
from engine.core.records.metrics import Signal
from engine.core.render import BoundedSandbox, render
from engine.util.callcache import CallCache, call_key
from engine.util.untrusted import bounded_count

T = TypeVar("T")

JUDGE_TEMPLATE = "judge.md.j2"


def judge_gates(scenario: Scenario) -> bool:
    """True when the judge's verdict decides ``scenario``: ``judge_passed`` is one of its
    ``success_signals``, or ``nl_assertion`` is and the scenario has claims to check. Elsewhere a
    judge (``--judge-model``) only adds informational signals: the scenario is scored without one."""
    gates = set(scenario.success_signals)
    return Signal.JUDGE_PASSED in gates or (Signal.NL_ASSERTION in gates and bool(scenario.nl_assertions))


@dataclass
class JudgeOutcome:
    """What the judge said about one session.

    ``score`` in 0–1 (None when the judge failed); ``passed`` = ``score >= threshold``;
    ``nl_assertion_verdicts`` ``[{index (1-based), assertion, passed, reason}]``;
    ``nl_assertion_pass_rate`` passes / assertions (None without assertions or on error);
    ``error`` the last failure message after retries; ``prompt_sha256`` SHA-256 hex of the prompt;
    ``usage`` ``{model, prompt_tokens, completion_tokens, calls}``; ``dropped_parameters`` the
    optional request parameters the last request went without because the endpoint refused them.
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
    dropped_parameters: list[str] = field(default_factory=list)

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


#: Each spoken turn is shown to the judge cut to this many characters, with a visible marker: an
#: agent cannot make the judge's request fail (over its context length) by talking at length.
MAX_JUDGE_UTTERANCE = 4000


def clip_utterance(text: str, limit: int = MAX_JUDGE_UTTERANCE) -> str:
    """``text`` when at most ``limit`` characters, else its first ``limit`` and a marker saying
    how long it was."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]} [... clipped: {len(text)} characters in all]"


def _spoken_turns(result: SessionResult) -> list[dict[str, str]]:
    return [
        {"role": str(ev.get("role")), "content": clip_utterance(str(ev.get("content")))}
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
    renders the same prompt as before they were shown. Each spoken turn is cut to
    MAX_JUDGE_UTTERANCE characters (:func:`clip_utterance`).
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


#: The verdict the judge template asks for, sent as the request's JSON-schema response format
#: (structured outputs, strict: every property required and no other).
VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "score": {"type": "number"},
        "reason": {"type": "string"},
        "nl_assertion_verdicts": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "index": {"type": "integer"},
                    "passed": {"type": "boolean"},
                    "reason": {"type": "string"},
                },
                "required": ["index", "passed", "reason"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["score", "reason", "nl_assertion_verdicts"],
    "additionalProperties": False,
}


@cache
def reply_validators(n_assertions: int) -> tuple[Draft202012Validator, Draft202012Validator]:
    """``(whole, least)``: ``whole`` the object the template asks for (VERDICT_SCHEMA, the score
    in 0..1, claim numbers from 1); ``least`` what a verdict cannot do without (a score in 0..1 and,
    when there are claims, ``nl_assertion_verdicts`` items with ``index`` and ``passed``), reasons
    optional and other keys tolerated, for a model that answers without structured output."""
    whole = copy.deepcopy(VERDICT_SCHEMA)
    whole["properties"]["score"].update(minimum=0, maximum=1)
    whole["properties"]["nl_assertion_verdicts"]["items"]["properties"]["index"].update(minimum=1)
    least = copy.deepcopy(whole)
    item = least["properties"]["nl_assertion_verdicts"]["items"]
    item.pop("additionalProperties")
    item["required"] = ["index", "passed"]
    least.pop("additionalProperties")
    least["required"] = ["score", *(["nl_assertion_verdicts"] if n_assertions else [])]
    return Draft202012Validator(whole), Draft202012Validator(least)


_OBJECT_START = re.compile(r'\{\s*["}]')
_FENCE = re.compile(r"^```[A-Za-z]*\s*\n?(.*?)\n?```$", re.DOTALL)
#: At most this many failed attempts to read an object from a reply (each scans the text).
_MAX_DECODE_TRIES = 200


def _candidates(text: str) -> list[Any]:
    """The reply as one JSON value when it is one (inside a code fence or not); else every
    top-level JSON object in it, in order (an object inside another is part of that one)."""
    stripped = text.strip()
    fenced = _FENCE.match(stripped)
    try:
        return [json.loads(fenced.group(1) if fenced else stripped)]
    except (ValueError, RecursionError):
        pass
    decoder = json.JSONDecoder()
    found: list[Any] = []
    end, failures = 0, 0
    for match in _OBJECT_START.finditer(text):
        if match.start() < end:
            continue  # inside the object just read
        try:
            body, end = decoder.raw_decode(text, match.start())
        except (json.JSONDecodeError, RecursionError):
            failures += 1
            if failures >= _MAX_DECODE_TRIES:  # a reply of 200k '{' costs milliseconds, not seconds
                break
            continue
        if isinstance(body, dict):
            found.append(body)
    return found


def reply_objects(text: str) -> list[Any]:
    """The JSON values a judge's reply holds: the reply itself when it is one JSON value (code
    fences tolerated), else every top-level JSON object in it, in order."""
    return _candidates(text)


def parse_judge_reply(text: str, n_assertions: int) -> tuple[float, str, list[dict[str, Any]]]:
    """Read the verdict the judge template asks for: the reply itself when it is one JSON value
    (code fences tolerated), else, among the JSON objects in the reply, the last one that is the
    whole object the template asks for, failing that the last one that holds what a verdict cannot
    do without (:func:`reply_validators`): an object quoted in the judge's reasoning before its
    answer, such as ``{"score": 1.0}``, is not the verdict.

    Returns ``(score, reason, verdicts)`` with one verdict per claim, in claim order (verdicts for
    claim numbers beyond ``n_assertions`` are ignored). Raises
    ValueError when no object matches the schema, a claim has no verdict, or one claim got two
    different verdicts.
    """
    candidates = _candidates(text or "")
    if not candidates:
        raise ValueError("judge reply holds no JSON object")
    whole, least = reply_validators(n_assertions)
    valid = [c for c in candidates if whole.is_valid(c)] or [c for c in candidates if least.is_valid(c)]
    if not valid:
        error = best_match(least.iter_errors(candidates[-1]))
        where = error.json_path if error is not None else "$"
        why = error.message if error is not None else "not a verdict"
        raise ValueError(f"judge reply does not match the verdict schema: {where}: {why}")
    body = valid[-1]
    verdicts: dict[int, dict[str, Any]] = {}
    for item in body.get("nl_assertion_verdicts") or []:
        index = item["index"]
        if index > n_assertions:
            continue
        if index in verdicts and verdicts[index]["passed"] != item["passed"]:
            raise ValueError(f"judge gave claim {index} two different verdicts")
        verdicts[index] = {"passed": item["passed"], "reason": str(item.get("reason", ""))}
    missing = [i for i in range(1, n_assertions + 1) if i not in verdicts]
    if missing:
        raise ValueError(f"judge gave no verdict for claim(s) {missing}")
    ordered = [{"index": i, **verdicts[i]} for i in range(1, n_assertions + 1)]
    return float(body["score"]), str(body.get("reason", "")), ordered


#: Request parameters an endpoint may refuse (HTTP 400 naming them): each is dropped once and the
#: request sent again without it. Keys: the parameter; values: words that name it in the error.
OPTIONAL_PARAMETERS: dict[str, tuple[str, ...]] = {
    "temperature": ("temperature",),
    "response_format": ("response_format", "json_schema", "structured output"),
}


class Judge:
    """The judge of one run: one client (one connection pool) for every session, and the request
    parameters the endpoint refused, left out of every later request of the run. Close with
    :meth:`aclose`."""

    def __init__(self, options: ScoringOptions):
        self.options = options
        self.model = str(options.judge_model)
        self.refused: list[str] = []
        self._client: Any = None
        self.cache: CallCache | None = None
        if options.cache_dir:
            from pathlib import Path

            self.cache = CallCache(Path(options.cache_dir))

    def client(self) -> Any:
        if self._client is None:
            from openai import AsyncOpenAI  # imported here: runs without a judge never pay for it

            self._client = AsyncOpenAI(
                base_url=self.options.judge_base_url,
                api_key=os.environ.get(self.options.judge_api_key_env) or "unused",
                timeout=self.options.judge_timeout_s,
                max_retries=0,
            )
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None
        if self.cache is not None:
            self.cache.close()

    async def complete(self, sent: dict[str, Any]) -> Any:
        """The chat completion for request ``sent``: from the model-call cache when it holds it
        (``--cache``), else asked of the endpoint (and stored when it parses as a completion)."""
        client = self.client()
        if self.cache is None:
            return await client.chat.completions.create(**sent)
        from openai.types.chat import ChatCompletion

        key = call_key(str(client.base_url), sent)
        stored = self.cache.get(key)
        if stored is not None:
            return ChatCompletion.construct(**stored)
        reply = await client.chat.completions.create(**sent)
        if not isinstance(reply, str | bytes | list | dict) and getattr(reply, "choices", None):
            dumped = reply.model_dump(mode="json", exclude_unset=True, warnings=False)
            self.cache.put(key, str(client.base_url), self.model, dumped)
        return reply

    def request(
        self, prompt: str, schema: dict[str, Any] | None = None, name: str = "judge_verdict"
    ) -> dict[str, Any]:
        """The chat-completions arguments: temperature 0 and ``schema`` (default the verdict
        schema) as the response format named ``name``, then the judge's args (``--judge-args``,
        which may override both), less what the endpoint refused."""
        kwargs: dict[str, Any] = {"model": self.model, "messages": [{"role": "user", "content": prompt}]}
        if "temperature" not in self.refused:
            kwargs["temperature"] = 0
        if "response_format" not in self.refused:
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": name, "strict": True, "schema": schema or VERDICT_SCHEMA},
            }
        kwargs.update(request_kwargs(self.options.judge_args))
        for name in self.refused:
            kwargs.pop(name, None)
        return kwargs

    def refused_parameter(self, exc: Exception, sent: dict[str, Any], retried: list[str]) -> str | None:
        """The parameter an HTTP 400 names, when it was sent and not already retried without."""
        if getattr(exc, "status_code", None) != 400:
            return None
        text = str(exc).lower()
        for name, words in OPTIONAL_PARAMETERS.items():
            if name in sent and name not in retried and any(w in text for w in words):
                return name
        return None

    async def judged_request(
        self, outcome: Any, build: Callable[[], dict[str, Any]], parse: Callable[[str], T]
    ) -> T | None:
        """Send ``build()`` with the judge's retries and return ``parse`` of the reply's text;
        None when every try failed. ``outcome`` (a :class:`JudgeOutcome` or a rubric outcome: its
        ``attempts``, ``usage``, ``raw_response`` and ``error``) records the tries, the tokens, the
        last reply and the last failure (cleared on success; one bounded line naming the endpoint).
        A failed call is retried ``judge_retries`` times; a parameter refused with HTTP 400 is
        dropped and the request sent again at once (not counted as a retry). Never raises."""
        options = self.options
        retried: list[str] = []
        attempt = 0
        while attempt <= options.judge_retries:
            attempt += 1
            outcome.attempts = attempt
            sent = build()
            try:
                reply = await self.complete(sent)
                outcome.usage["calls"] += 1
                if isinstance(reply, str | bytes | list | dict):  # the client could not parse it
                    raise ValueError(f"the reply is not a chat completion: {str(reply)[:200]!r}")
                usage = reply.usage  # odd token counts must not throw away a valid verdict
                outcome.usage["prompt_tokens"] += bounded_count(getattr(usage, "prompt_tokens", 0))
                outcome.usage["completion_tokens"] += bounded_count(getattr(usage, "completion_tokens", 0))
                outcome.raw_response = reply.choices[0].message.content if reply.choices else None
                parsed = parse(outcome.raw_response or "")
            except Exception as exc:  # transport, HTTP status, bad reply: retry, then record
                # one line, bounded, naming the endpoint (the cause first: it is what differs)
                where = f" (judge {self.model} at {self.client().base_url})"
                outcome.error = clip(f"{type(exc).__name__}: {str(exc)[:1500]}{where}")
                refused = self.refused_parameter(exc, sent, retried)
                if refused is not None:
                    retried.append(refused)
                    if refused not in self.refused:
                        self.refused.append(refused)
                    attempt -= 1  # sent again at once without it: not a retry
                    continue
                if attempt <= options.judge_retries:
                    await asyncio.sleep(options.judge_retry_delay_s * attempt)
                continue
            outcome.error = None
            return parsed
        return None

    async def ask(self, scenario: Scenario, result: SessionResult) -> JudgeOutcome:
        """Ask about one session; never raises (failures end up in ``outcome.error``). A failed
        call is retried ``judge_retries`` times; a request parameter refused with HTTP 400 is
        dropped and the request sent again once (not counted as a retry), recorded in
        ``dropped_parameters``."""
        options = self.options
        try:
            prompt = render_judge_prompt(scenario, result)
        except Exception as exc:  # a broken template is the judge's failure, never the agent's
            return JudgeOutcome(
                model=self.model,
                base_url=options.judge_base_url,
                threshold=options.judge_threshold,
                prompt="",
                prompt_sha256="",
                error=clip(f"judge prompt did not render: {exc}"),
            )
        outcome = JudgeOutcome(
            model=self.model,
            base_url=options.judge_base_url,
            threshold=options.judge_threshold,
            prompt=prompt,
            prompt_sha256=hashlib.sha256(prompt.encode("utf-8")).hexdigest(),
            usage={"model": self.model, "prompt_tokens": 0, "completion_tokens": 0, "calls": 0},
        )
        claims = list(scenario.nl_assertions)

        def build() -> dict[str, Any]:
            sent = self.request(prompt)
            outcome.dropped_parameters = [p for p in OPTIONAL_PARAMETERS if p not in sent]
            return sent

        parsed = await self.judged_request(outcome, build, lambda text: parse_judge_reply(text, len(claims)))
        if parsed is not None:
            score, reason, verdicts = parsed
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
        return outcome


async def run_judge(scenario: Scenario, result: SessionResult, options: ScoringOptions) -> JudgeOutcome:
    """Ask the judge about one session with a judge of its own (see :class:`Judge`); never raises."""
    judge = Judge(options)
    try:
        return await judge.ask(scenario, result)
    finally:
        await judge.aclose()
