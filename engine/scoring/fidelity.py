"""Caller fidelity: deterministic text checks that the user simulator kept to its instructions.

Four built-in checks (registered with ``@fidelity_check``, ``engine.core.fidelity``), each reading
only the scenario's own user record (name, persona, goal, decision tree, extra fields such as
``information_required``, starting utterance), its gold caller lines and the session transcript:

- ``persona_facts``: every code (``ZK3FFW``, ``O-100``; spelled out one character at a time as
  ``Z, K, three, F, F, W`` too), multi-digit number, date and self-introduced name the caller says
  is one its persona holds, one of the gold caller lines, or one the agent said before;
- ``early_hangup``: the caller did not end the call before its goal (the expected DB reached) and
  before the gold conversation's number of caller turns (two without gold caller words), unless
  its rules allow it: tau2's ``###TRANSFER###`` / ``###OUT-OF-SCOPE###`` endings, or a persona
  with a ``failure_condition`` hanging up right after the agent refused;
- ``invented_request``: the caller asks for no write action (the verb of a write tool of the
  domain: ``cancel``, ``issue``, ``rebook``...) that its persona and gold lines never mention;
- ``agent_speak``: the caller never speaks as the agent (service phrases such as "how can I help
  you", "I have cancelled your ...", a role label, tool-call text).

:func:`check_fidelity` runs every registered check and returns the ``user_fidelity`` record.
"""

from __future__ import annotations

import functools
import re
import threading
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import lru_cache
from typing import Any

from engine.core.fidelity import FidelityInputs, FidelityRegistry, fidelity_check
from engine.core.model import Scenario, SessionResult
from engine.core.records.fidelity import Finding, UserFidelity
from engine.core.render import SPOKEN_DIGITS

#: Callers whose words cannot be regenerated: the gold lines played back, the silent caller, and a
#: person (``evalctl play --as user``: hanging up early is their choice, not a failed simulator);
#: their findings are reported only.
UNENFORCED_CALLERS = frozenset({"replay", "noop", "human"})
_CLIP = 160

_CODE = re.compile(r"\b(?=[A-Za-z0-9-]*\d)(?=[A-Za-z0-9-]*[A-Za-z])[A-Za-z0-9][A-Za-z0-9-]{2,}[A-Za-z0-9]\b")
_NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?![\w])")
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_MONTHS = (
    *("january", "february", "march", "april", "may", "june"),
    *("july", "august", "september", "october", "november", "december"),
)
_TEXT_DATE = re.compile(r"\b(" + "|".join(_MONTHS) + r")\s+(\d{1,2})(?:st|nd|rd|th)?\b", re.I)
_NAME = re.compile(r"\b(?i:my name is|this is|i am|i'm)\s+([A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)")
_SPELLED_ITEM = "|".join((*SPOKEN_DIGITS, "[a-z]"))
_SPELLED = re.compile(rf"\b(?:(?:{_SPELLED_ITEM})[\s,.-]+){{3,}}(?:{_SPELLED_ITEM})\b", re.I)
_AGENT_PHRASES = (
    "how can i help you",
    "how may i help you",
    "how can i assist you",
    "how may i assist you",
    "is there anything else i can help",
    "anything else i can do for you",
    "thank you for calling",
    "thanks for calling",
    "i have cancelled your",
    "i've cancelled your",
    "i have canceled your",
    "i have processed",
    "i've processed",
    "i have issued",
    "i've issued",
    "let me look that up for you",
    "let me check that for you",
    "i can help you with that",
)
_ROLE_LABEL = re.compile(r"^\s*(?:agent|assistant|representative)\s*:", re.I)
_TOOL_TEXT = re.compile(r"\b[a-z]+_[a-z_]+\s*\(\s*\{|<tool_call>|\bfunctions\.[a-z_]+", re.I)
_REFUSAL = re.compile(r"\b(?:cannot|can't|can not|unable|not able|not possible|won't be able)\b", re.I)
_NOT_CANON = re.compile(r"[^A-Z0-9]")
_TOKEN = re.compile(r"[A-Za-z0-9_-]{3,}")
_WORD = re.compile(r"[a-z]+")
_SPELLED_SPLIT = re.compile(r"[\s,.-]+")
#: Words of write-tool names that are not the action asked for.
_NOT_VERBS = frozenset(
    {"get", "set", "do", "make", "to", "the", "for", "by", "and", "of", "end", "user", "id"}
)


def _strings(value: Any) -> Iterator[str]:
    """Every string (keys included) in a nested JSON-like value."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield str(value)


def _canon(token: str) -> str:
    return _NOT_CANON.sub("", token.upper())


def _spelled(text: str) -> list[str]:
    """Codes spelled one character at a time (``Z, K, three, F``) as written (``ZK3F``)."""
    out = []
    for match in _SPELLED.finditer(text):
        items = _SPELLED_SPLIT.split(match.group(0).strip())
        chars = [
            str(SPOKEN_DIGITS.index(i.lower())) if i.lower() in SPOKEN_DIGITS else i.upper() for i in items
        ]
        if any(c.isdigit() for c in chars) or len(chars) >= 5:
            out.append("".join(chars))
    return out


def _numbers(text: str) -> set[float]:
    found = set()
    for raw in _NUMBER.findall(text):
        try:
            found.add(float(raw.replace(",", "")))
        except ValueError:
            continue
    return found


def _dates(text: str) -> set[tuple[int, int]]:
    found = {(int(m), int(d)) for _, m, d in _ISO_DATE.findall(text)}
    found |= {(_MONTHS.index(m.lower()) + 1, int(d)) for m, d in _TEXT_DATE.findall(text)}
    return found


class _Facts:
    """What the caller may say: codes (canonical), numbers, dates and words of allowed texts."""

    def __init__(self, texts: Iterable[str]) -> None:
        self.codes: set[str] = set()
        self.numbers: set[float] = set()
        self.dates: set[tuple[int, int]] = set()
        self.words: set[str] = set()
        self.blob = ""
        self.add(texts)

    def add(self, texts: Iterable[str]) -> None:
        for text in texts:
            self.codes |= {_canon(c) for c in _CODE.findall(text)} | set(_spelled(text))
            self.codes |= {_canon(t) for t in _TOKEN.findall(text)}
            self.numbers |= _numbers(text)
            self.dates |= _dates(text)
            self.words |= set(_WORD.findall(text.lower()))
            self.blob += " " + _canon(text)

    def copy(self) -> _Facts:
        """An independent copy (to :meth:`add` to without changing this one)."""
        other = _Facts(())
        other.codes, other.numbers, other.dates = set(self.codes), set(self.numbers), set(self.dates)
        other.words, other.blob = set(self.words), self.blob
        return other

    def knows_code(self, code: str) -> bool:
        return code in self.codes or (len(code) >= 4 and code in self.blob)


def _persona_texts(scenario: Scenario) -> tuple[str, ...]:
    """The texts a persona's facts come from (:func:`_texts_of`), made once per scenario: every
    trial and both checks that read them ask again."""
    key = id(scenario)
    with _TEXTS_LOCK:
        hit = _TEXTS.get(key)
    if hit is not None and hit[0]() is scenario:
        return hit[1]
    texts = _texts_of(scenario)
    with _TEXTS_LOCK:
        if len(_TEXTS) >= _TEXTS_KEPT:
            _TEXTS.clear()
        _TEXTS[key] = (weakref.ref(scenario, functools.partial(_forget_texts, key)), texts)
    return texts


def _forget_texts(key: int, ref: weakref.ref[Scenario]) -> None:
    with _TEXTS_LOCK:
        hit = _TEXTS.get(key)
        if hit is not None and hit[0] is ref:
            del _TEXTS[key]


#: id(scenario) -> (weak reference to the scenario, its persona texts): dropped with the scenario.
_TEXTS: dict[int, tuple[weakref.ref[Scenario], tuple[str, ...]]] = {}
_TEXTS_KEPT = 256
_TEXTS_LOCK = threading.RLock()  # re-entrant: a drop may come from the garbage collector meanwhile


def _texts_of(scenario: Scenario) -> tuple[str, ...]:
    user = scenario.user
    texts = [user.name, user.persona, user.goal, user.starting_utterance]
    texts += list(_strings(user.decision_tree)) + list(_strings(user.extra))
    if scenario.gold_trace is not None:
        texts += list(scenario.gold_trace.lines("user"))
    return tuple(t for t in texts if t)


@lru_cache(maxsize=256)
def _persona_base(texts: tuple[str, ...]) -> _Facts:
    """The facts of a persona's texts (:func:`_persona_texts`), built once per scenario (every
    trial, both checks that read them) and shared: **read-only** (``copy()`` to add to it)."""
    return _Facts(texts)


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _CLIP else text[: _CLIP - 3] + "..."


@fidelity_check("persona_facts", order=10)
def persona_facts(inp: FidelityInputs) -> list[Finding] | None:
    """Codes, numbers, dates and names the caller says are its persona's (or said by the agent)."""
    if not inp.caller_lines:
        return None
    return list(_persona_findings(_persona_texts(inp.scenario), inp.caller_lines, inp.agent_lines))


#: ``(transcript event index, text)`` of one side's spoken turns.
Lines = tuple[tuple[int, str], ...]


@lru_cache(maxsize=256)
def _persona_findings(texts: tuple[str, ...], caller_lines: Lines, agent_lines: Lines) -> tuple[Finding, ...]:
    """:func:`persona_facts`'s findings: a function of the persona's texts and the spoken lines
    alone, so the same lines (every trial of a replayed scenario) are checked once."""
    facts = _persona_base(texts).copy()
    agent = iter(agent_lines)
    pending = next(agent, None)
    findings: list[Finding] = []
    for turn, (index, text) in enumerate(caller_lines):
        while pending is not None and pending[0] < index:
            facts.add([pending[1]])
            pending = next(agent, None)
        wrong = [c for c in _CODE.findall(text) if not facts.knows_code(_canon(c))]
        wrong += [c for c in _spelled(text) if not facts.knows_code(c)]
        wrong += [
            f"{n:g}" for n in _numbers(text) if n not in facts.numbers and n >= 10 and not _in_code(n, text)
        ]
        wrong += [f"{_MONTHS[m - 1]} {d}" for m, d in _dates(text) if (m, d) not in facts.dates]
        names = [n for n in _NAME.findall(text) if not set(n.lower().split()) <= facts.words]
        wrong += names
        if wrong:
            said = ", ".join(dict.fromkeys(wrong))
            findings.append(Finding("persona_facts", turn, f"says {said}: not in its persona", _clip(text)))
    return tuple(findings)


def _in_code(number: float, text: str) -> bool:
    """The number is part of a code token (``O-100`` holds 100), checked as the code instead."""
    return any(f"{number:g}" in c for c in _CODE.findall(text))


@fidelity_check("early_hangup", order=20)
def early_hangup(inp: FidelityInputs) -> list[Finding] | None:
    """The caller does not end the call before its goal unless its rules say so."""
    hangups = [e for e in inp.result.transcript if e.get("role") == "user" and e.get("type") == "hangup"]
    if not hangups or inp.goal_met:
        return [] if inp.caller_lines else None
    reason = (hangups[0].get("content") or {}).get("reason")
    if reason in ("transfer", "out_of_scope"):
        return []
    gold = inp.scenario.gold_trace
    needed = len(gold.lines("user")) if gold is not None and gold.lines("user") else 2
    turns = len(inp.caller_lines)
    if turns >= needed:
        return []
    last_agent = inp.agent_lines[-1][1] if inp.agent_lines else ""
    if inp.scenario.user.decision_tree.get("failure_condition") and _REFUSAL.search(last_agent):
        return []
    text = inp.caller_lines[-1][1] if inp.caller_lines else ""
    detail = f"ended the call after {turns} of the {needed} caller turns its goal takes, goal not reached"
    return [Finding("early_hangup", max(turns - 1, 0), detail, _clip(text))]


@lru_cache(maxsize=256)
def _persona_stems(texts: tuple[str, ...]) -> frozenset[str]:
    """The first 5 letters of each word of a persona's texts (the verbs it may ask for), made once
    per persona: every trial of a scenario asked for them (about 80 us a session for eva)."""
    return frozenset(w[:5] for w in _persona_base(texts).words)


def _write_verbs(scenario: Scenario) -> dict[str, str]:
    """Stem (first 5 letters) -> verb of the first word of each write tool's name."""
    verbs: dict[str, str] = {}
    for tool in scenario.domain.tools.tools:
        if tool.kind != "write":
            continue
        word = tool.name.split("_")[0].lower()
        if word and word not in _NOT_VERBS:
            verbs[word[:5]] = word
    return verbs


@fidelity_check("invented_request", order=30)
def invented_request(inp: FidelityInputs) -> list[Finding] | None:
    """The caller asks for no write action its persona and gold lines never mention."""
    if not inp.caller_lines:
        return None
    verbs = _write_verbs(inp.scenario)
    allowed = _persona_stems(_persona_texts(inp.scenario))
    findings = []
    for turn, (_, text) in enumerate(inp.caller_lines):
        asked = sorted({verbs[w[:5]] for w in _WORD.findall(text.lower()) if w[:5] in verbs})
        invented = [v for v in asked if v[:5] not in allowed]
        if invented:
            detail = f"asks to {', '.join(invented)}: not in its goal"
            findings.append(Finding("invented_request", turn, detail, _clip(text)))
    return findings


@fidelity_check("agent_speak", order=40)
def agent_speak(inp: FidelityInputs) -> list[Finding] | None:
    """The caller never speaks as the agent (service phrases, a role label, tool-call text)."""
    if not inp.caller_lines:
        return None
    findings = []
    for turn, (_, text) in enumerate(inp.caller_lines):
        hit = _agent_words(text)
        if hit is not None:
            findings.append(Finding("agent_speak", turn, f"speaks as the agent ({hit!r})", _clip(text)))
    return findings


@lru_cache(maxsize=4096)
def _agent_words(text: str) -> str | None:
    """What in a caller's line is the agent's (a service phrase, ``a role label``, ``tool-call
    text``), or None; remembered per line, since every trial of a replayed scenario says the same."""
    low = " ".join(text.lower().replace("\u2019", "'").split())
    hit = next((p for p in _AGENT_PHRASES if p in low), None)
    if hit is None and _ROLE_LABEL.search(text):
        hit = "a role label"
    if hit is None and _TOOL_TEXT.search(text):
        hit = "tool-call text"
    return hit


#: The built-in checks, in display order.
BUILTIN = (persona_facts, early_hangup, invented_request, agent_speak)
BUILTIN_REGISTRY = FidelityRegistry(BUILTIN)


def spoken_lines(result: SessionResult, role: str) -> tuple[tuple[int, str], ...]:
    """``(transcript event index, text)`` of ``role``'s non-empty utterances."""
    return tuple(
        (i, str(e.get("content") or ""))
        for i, e in enumerate(result.transcript)
        if e.get("role") == role and e.get("type") == "utterance" and str(e.get("content") or "").strip()
    )


def check_fidelity(
    scenario: Scenario,
    result: SessionResult,
    goal_met: bool | None = None,
    registry: FidelityRegistry | None = None,
    attempt: int = 0,
    replaced: tuple[str, ...] = (),
) -> UserFidelity:
    """Run every check of ``registry`` (default the built-in ones) on one session; returns its
    ``user_fidelity`` record (findings in turn order). ``goal_met``: the session reached the
    expected DB (None: unknown). A check that raises is recorded None (not applicable): it never
    breaks scoring. ``enforced`` is False for the replay, noop and human callers."""
    registry = BUILTIN_REGISTRY if registry is None else registry
    inp = FidelityInputs(
        scenario, result, spoken_lines(result, "user"), spoken_lines(result, "agent"), goal_met
    )
    checks: dict[str, bool | None] = {}
    findings: list[Finding] = []
    for name, definition in registry.items():
        try:
            found = definition(inp)
        except Exception:  # a check's bug never breaks scoring
            found = None
        checks[name] = None if found is None else not found
        findings += found or []
    findings.sort(key=lambda f: f.turn)
    backend = result.user_backend.split(":")[0]
    return UserFidelity(
        checks=checks,
        findings=tuple(findings),
        turns=len(inp.caller_lines),
        enforced=backend not in UNENFORCED_CALLERS,
        attempt=attempt,
        replaced=replaced,
    )


def caller_note(user: str, scenarios: Sequence[Scenario]) -> str | None:
    """One line when the run's caller (the ``--user`` spec) cannot test the agent, None else: the
    replay caller on scenarios whose gold holds no caller words (it ends the call at once) or whose
    spec overrides the dataset's caller (the gold lines are not that caller's); any other replay
    run is said to be a conformance check."""
    if user.strip() != "replay" or not scenarios:
        return None
    mute = sum(1 for s in scenarios if s.gold_trace is None or not s.gold_trace.lines("user"))
    return replay_note(len(scenarios), mute, sum(1 for s in scenarios if s.user_override))


def replay_note(total: int, mute: int, override: int = 0) -> str:
    """The replay caller's note for ``total`` scenarios, ``mute`` of them without gold caller
    words and ``override`` of them with a spec-given persona (see :func:`caller_note`)."""
    advice = "use --user openai:MODEL to score an agent"
    if mute:
        return (
            f"the replay caller cannot test the agent on {mute} of {total} scenario(s): their "
            "gold holds no caller words, so it ends the call at once: an agent that waits to be "
            "asked scores the do-nothing floor there (the replay agent passes only because it plays "
            f"the gold calls unasked); {advice}"
        )
    if override:
        return (
            f"the replay caller plays the dataset's gold lines, but {override} of {total} "
            f"scenario(s) override the caller's persona: the lines are not that caller's; {advice}"
        )
    return (
        "replay caller: this run is a conformance check (does the agent follow the gold path?), "
        f"not a score of a model; {advice}"
    )
