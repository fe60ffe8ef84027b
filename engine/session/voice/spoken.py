"""Spoken-form checks: what an agent says must still be right once it is spoken aloud.

Three checks, driven by a domain's :class:`SpokenRules` and run on every agent line of a session
(text runs and voice runs alike; the line is the agent's own text):

- **codes in canonical form**: a code the agent should spell out (a confirmation number, a flight
  number, an airport code) appears as written (``ZK3FFW``) instead of spelled (``Z, K, three, F,
  F, W``). The written form counts even next to the spelled one.
- **internal ids read aloud**: an id meant for tools only (an eva journey id such as
  ``FL_SK621_20260320``) appears, written or spelled out one character at a time.
- **tool-call text in speech**: the line holds tool-call syntax (``get_reservation({...})``,
  ``<tool_call>``, ``functions.name``, a JSON object) that a text-to-speech engine would read out.

Codes and ids are known from the scenario's DB and the session's tool results (string values
under the rule's field names), and, for ones the data does not hold, from the rule's patterns.
The checks are plain token look-ups (no per-session regular expression is compiled), so they add
little to scoring time. They are diagnostics: a domain exposes them through its plugin and they
never gate unless a spec says so.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from engine.core.render import SPOKEN_DIGITS, SPOKEN_SYMBOLS, spoken_forms


@dataclass(frozen=True)
class SpokenRules:
    """A domain's spoken-form rules.

    ``code_fields``: keys (anywhere in a DB or a tool result) whose string values are codes the
    agent must spell out; ``internal_fields``: keys whose values are internal ids never to be said;
    ``code_pattern`` / ``internal_pattern``: a whole token in canonical form matching it is a code
    / an internal id even when no DB holds it (None: known values only); ``min_code_length``:
    shorter known values (a one-letter gate) are not checked.
    """

    code_fields: frozenset[str] = frozenset()
    internal_fields: frozenset[str] = frozenset()
    code_pattern: re.Pattern[str] | None = None
    internal_pattern: re.Pattern[str] | None = None
    min_code_length: int = 2


@dataclass(frozen=True)
class LineFindings:
    """What one agent line breaks: ``index`` is its 0-based position among the lines checked;
    ``codes`` the codes said in canonical form, ``internal_ids`` the internal ids said (written or
    spelled), ``tool_text`` the tool-call fragments found; each in order of appearance."""

    index: int
    codes: tuple[str, ...] = ()
    internal_ids: tuple[str, ...] = ()
    tool_text: tuple[str, ...] = ()

    @property
    def flagged(self) -> bool:
        """True when the line breaks any rule."""
        return bool(self.codes or self.internal_ids or self.tool_text)


@dataclass(frozen=True)
class SpokenReport:
    """Findings over a session's agent lines (only lines that break a rule are listed)."""

    lines_checked: int
    findings: tuple[LineFindings, ...] = field(default_factory=tuple)

    def count(self, kind: str) -> int:
        """Lines with at least one finding of ``kind`` (``codes``, ``internal_ids``, ``tool_text``)."""
        return sum(1 for f in self.findings if getattr(f, kind))


def known_values(doc: Any, fields: frozenset[str], out: set[str] | None = None) -> set[str]:
    """Every string value under one of ``fields`` anywhere in the JSON-shaped ``doc`` (dicts and
    lists walked; a dict's keys are not values). Returns ``out`` (a new set when None)."""
    found: set[str] = set() if out is None else out
    stack = [doc]
    while stack:
        node = stack.pop()
        if type(node) is dict or isinstance(node, Mapping):
            for key, value in node.items():
                kind = type(value)
                if kind is str:
                    if key in fields:
                        found.add(value)
                elif kind is dict or kind is list or (kind not in _SCALARS and _container(value)):
                    stack.append(value)
        elif type(node) is list or isinstance(node, list | tuple):
            stack.extend(v for v in node if type(v) not in _SCALARS and _container(v))
    return found


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _container(value: Any) -> bool:
    return isinstance(value, Mapping | list | tuple)


_TOKEN = re.compile(r"[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)*")
_SPELL_TOKEN = re.compile(r"[A-Za-z]+|\d+|[^\sA-Za-z0-9]")
_DIGIT_WORDS = {word: str(i) for i, word in enumerate(SPOKEN_DIGITS)} | {"oh": "0"}
_SYMBOL_WORDS = {name: ch for ch, name in SPOKEN_SYMBOLS.items() if ch != " "} | {"hyphen": "-"}
_SPELL_SEPARATORS = frozenset(", ")


#: Tokens of a line in a language other than English: words of any script (``zéro``), digit
#: runs, one symbol each.
_ANY_SPELL_TOKEN = re.compile(r"[^\W\d_]+|\d+|[^\w\s]|_")


@lru_cache(maxsize=8)
def _spoken_words(
    language: str,
) -> tuple[re.Pattern[str], dict[str, str], dict[str, str], re.Pattern[str] | None]:
    """``(token pattern, digit word -> digit, symbol name -> symbol, several-word names)`` of
    ``language``; English's words always count too (codes are often spelled in English in another
    language's call). The last pattern finds the symbol names of several words (``tiret bas``,
    ``deux-points``)."""
    if language.split("-")[0].lower() == "en":
        return _SPELL_TOKEN, _DIGIT_WORDS, _SYMBOL_WORDS, None
    digits, symbols = spoken_forms(language)
    own_digits = {word: str(i) for i, word in enumerate(digits)}
    own_symbols = {name: ch for ch, name in symbols.items() if ch != " "}
    long = sorted((n for n in own_symbols if not n.isalpha()), key=len, reverse=True)
    several = re.compile("|".join(re.escape(n) for n in long), re.I) if long else None
    return _ANY_SPELL_TOKEN, _DIGIT_WORDS | own_digits, _SYMBOL_WORDS | own_symbols, several


def spelled_runs(text: str, language: str = "en") -> list[str]:
    """The character sequences ``text`` spells out: ``"F, L, underscore, S K six two one"`` ->
    ``["FL_SK621"]``. A run is a stretch of single letters (upper-cased), digits, digit words
    (``oh`` is zero) and symbol names, commas and spaces between them ignored; any other word ends it.
    ``language``: its digit words and symbol names count too (``fr``: ``S K six deux un``)."""
    tokens, digit_words, symbol_words, several = _spoken_words(language)
    if several is not None:  # a name of several words is one symbol
        text = several.sub(lambda m: f" {SPOKEN_SYMBOLS[symbol_words[m.group(0).lower()]]} ", text)
    runs: list[str] = []
    current: list[str] = []
    for tok in tokens.findall(text):
        low = tok.lower()
        if len(tok) == 1 and tok.isalpha():
            current.append(tok.upper())
        elif tok.isdigit():
            current.append(tok)
        elif low in digit_words:
            current.append(digit_words[low])
        elif low in symbol_words:
            current.append(symbol_words[low])
        elif tok in _SPELL_SEPARATORS:
            continue
        else:
            if len(current) > 1:
                runs.append("".join(current))
            current = []
    if len(current) > 1:
        runs.append("".join(current))
    return runs


@lru_cache(maxsize=64)
def tool_text_pattern(tool_names: tuple[str, ...]) -> re.Pattern[str]:
    """The regular expression of tool-call text for these tool names: ``name(`` or ``name {``
    (also across a line break), ``functions.name``, ``<tool_call>`` / ``</tool_call>``, and a
    JSON object opening with a quoted key."""
    names = "|".join(re.escape(n) for n in sorted(set(tool_names), key=len, reverse=True) if n)
    parts = [r"</?tool_call>", r"\bfunctions\.[A-Za-z_]\w*", r"\{\s*\"[^\"\n]{1,80}\"\s*:"]
    if names:
        parts.insert(0, rf"\b(?:{names})\s*[({{]")
    return re.compile("|".join(parts))


@dataclass(frozen=True)
class SpokenCheck:
    """The rules bound to one session: the codes and internal ids it knows of and its tool names.
    Build it with :func:`session_check`; call :meth:`line` / :meth:`report`."""

    rules: SpokenRules
    codes: frozenset[str]
    internal_ids: frozenset[str]
    tool_pattern: re.Pattern[str]
    language: str = "en"

    def line(self, index: int, text: str) -> LineFindings:
        """The findings of one line."""
        rules = self.rules
        codes: list[str] = []
        internal: list[str] = []
        for tok in _TOKEN.findall(text):
            if tok.isalpha() and (tok.islower() or tok.istitle()):
                continue  # an ordinary word: no code or id is written so
            if tok in self.internal_ids or (rules.internal_pattern and rules.internal_pattern.fullmatch(tok)):
                internal.append(tok)
            elif tok in self.codes or (rules.code_pattern and rules.code_pattern.fullmatch(tok)):
                codes.append(tok)
        if self.internal_ids or rules.internal_pattern:
            for run in spelled_runs(text, self.language):
                for known in self.internal_ids:
                    if known.upper() in run and known not in internal:
                        internal.append(known)
                if rules.internal_pattern:
                    internal.extend(
                        m.group(0) for m in rules.internal_pattern.finditer(run) if m.group(0) not in internal
                    )
        tool = tuple(m.group(0).strip() for m in self.tool_pattern.finditer(text))
        return LineFindings(index, tuple(codes), tuple(internal), tool)

    def report(self, lines: Sequence[str]) -> SpokenReport:
        """Check every line; only lines that break a rule are kept in the report. The same check
        of the same lines (every trial of a replayed scenario) is answered from a small cache."""
        return _report(self, tuple(lines))


@lru_cache(maxsize=256)
def _report(check: SpokenCheck, lines: tuple[str, ...]) -> SpokenReport:
    found = (check.line(i, text) for i, text in enumerate(lines))
    return SpokenReport(len(lines), tuple(f for f in found if f.flagged))


def session_check(
    rules: SpokenRules,
    sources: Iterable[Any],
    tool_names: Iterable[str],
    base: tuple[frozenset[str], frozenset[str]] | None = None,
    language: str = "en",
) -> SpokenCheck:
    """Bind ``rules`` to a session: codes and internal ids are collected from ``sources`` (DBs,
    tool results: any JSON-shaped values) on top of ``base`` (codes, ids) already collected, e.g.
    from the scenario's initial DB once per scenario (:func:`collect`); ids spelled out are read
    in ``language`` too (:func:`spelled_runs`)."""
    codes, internal = (set(base[0]), set(base[1])) if base else (set(), set())
    for doc in sources:
        known_values(doc, rules.code_fields, codes)
        known_values(doc, rules.internal_fields, internal)
    codes = {c for c in codes if len(c) >= rules.min_code_length} - internal
    pattern = tool_text_pattern(tuple(tool_names))
    return SpokenCheck(rules, frozenset(codes), frozenset(internal), pattern, language)


def collect(rules: SpokenRules, doc: Any) -> tuple[frozenset[str], frozenset[str]]:
    """``(codes, internal ids)`` held by ``doc`` under the rules' field names."""
    codes = known_values(doc, rules.code_fields)
    return frozenset(codes), frozenset(known_values(doc, rules.internal_fields))


def agent_lines(transcript: Iterable[Mapping[str, Any]]) -> list[str]:
    """The agent's spoken lines of a session transcript (``role`` agent, ``type`` utterance),
    empty ones left out."""
    return [
        e["content"]
        for e in transcript
        if e.get("role") == "agent"
        and e.get("type") == "utterance"
        and isinstance(e.get("content"), str)
        and e["content"].strip()
    ]
