"""Prompt rendering: Jinja templates in a sandboxed environment with ``StrictUndefined``.

Templates are looked up in the domain's spec directory first, then in ``templates/``, and see
plain data only (the sandbox policy is in ``engine.util.sandbox``). The filter table is small and
explicit (``spell``, ``humanize``, ``outline``) on top of Jinja's harmless built-ins.
A template error is raised as SpecError naming the template file, its line and the scenario.
"""

from __future__ import annotations

import re
import threading
import traceback
import weakref
from collections import OrderedDict
from functools import cache, partial
from pathlib import Path
from typing import Any

import jinja2

from engine.core.model import TEMPLATE_DIR, Scenario
from engine.util.errors import Problem, SpecError
from engine.util.sandbox import ContainedLoader, TemplateSandbox, UnsafeTemplateError, plain, plain_record
from engine.util.yamlload import display_path

#: How each non-alphanumeric character is said when a code is spelled out.
SPOKEN_SYMBOLS: dict[str, str] = {
    "_": "underscore",
    "-": "dash",
    "@": "at",
    ".": "dot",
    "#": "hash",
    "*": "star",
    "/": "slash",
    "+": "plus",
    "&": "and",
    ":": "colon",
    ",": "comma",
    " ": "space",
}
SPOKEN_DIGITS: tuple[str, ...] = (
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
)


#: The digit words and symbol names of other languages than English, by primary language subtag
#: (``fr`` serves ``fr`` and ``fr-CA``): how a code is spelled out when the caller speaks it.
SPOKEN_FORMS: dict[str, tuple[tuple[str, ...], dict[str, str]]] = {
    "en": (SPOKEN_DIGITS, SPOKEN_SYMBOLS),
    "fr": (
        ("zéro", "un", "deux", "trois", "quatre", "cinq", "six", "sept", "huit", "neuf"),
        {
            "_": "tiret bas",
            "-": "tiret",
            "@": "arobase",
            ".": "point",
            "#": "dièse",
            "*": "étoile",
            "/": "barre oblique",
            "+": "plus",
            "&": "et",
            ":": "deux-points",
            ",": "virgule",
            " ": "espace",
        },
    ),
}


def spoken_forms(language: str = "en") -> tuple[tuple[str, ...], dict[str, str]]:
    """``(digit words 0-9, symbol -> name)`` of ``language`` (a BCP 47 code; its primary subtag is
    looked up in :data:`SPOKEN_FORMS`, English when absent)."""
    return SPOKEN_FORMS.get(language.split("-")[0].lower(), SPOKEN_FORMS["en"])


def spell(code: Any, language: str = "en") -> str:
    """Spell a code for speech, one character at a time: ``ZK3FFW`` -> ``Z, K, three, F, F, W``
    (``language`` ``fr``: ``Z, K, trois, F, F, W``).

    Letters stay letters, ASCII digits become words, symbols are named (``_`` -> underscore,
    ``-`` -> dash, see SPOKEN_SYMBOLS; :func:`spoken_forms` for other languages); anything else
    is kept as is.
    """
    digits, symbols = spoken_forms(language)
    parts = []
    for ch in str(code):
        if "0" <= ch <= "9":
            parts.append(digits[int(ch)])
        else:
            parts.append(symbols.get(ch, ch))
    return ", ".join(parts)


def humanize(key: Any) -> str:
    """A record key as a heading: ``must_have_criteria`` -> ``Must have criteria``."""
    text = str(key).replace("_", " ").strip()
    return text[:1].upper() + text[1:]


def outline(value: Any, depth: int = 0) -> str:
    """Nested dicts/lists as an indented bullet outline (keys humanized); a scalar as its text.

    A list item that is a flat dict becomes one line ``- Key: v; Other: w``.

    ``{"a_b": 1, "c": [2, 3]}`` -> ``- A b: 1`` / ``- C:`` / ``  - 2`` / ``  - 3``;
    an empty list is ``- (none)``.
    """
    pad = "  " * depth
    if isinstance(value, dict):
        lines = []
        for key, item in value.items():
            if isinstance(item, dict | list) and item:
                lines.append(f"{pad}- {humanize(key)}:")
                lines.append(outline(item, depth + 1))
            else:
                lines.append(f"{pad}- {humanize(key)}: {outline(item) if item != [] else '(none)'}")
        return "\n".join(lines)
    if isinstance(value, list):
        if not value:
            return f"{pad}- (none)"
        lines = []
        for item in value:
            if isinstance(item, dict) and not any(isinstance(v, dict | list) for v in item.values()):
                lines.append(f"{pad}- " + "; ".join(f"{humanize(k)}: {outline(v)}" for k, v in item.items()))
            elif isinstance(item, dict | list) and item:
                lines.append(f"{pad}-")
                lines.append(outline(item, depth + 1))
            else:
                lines.append(f"{pad}- {outline(item)}")
        return "\n".join(lines)
    return "" if value is None else str(value)


FILTERS: dict[str, Any] = {"spell": spell, "humanize": humanize, "outline": outline}


#: The sandbox of every prompt template (judge.py builds its own from it); see engine.util.sandbox.
BoundedSandbox = TemplateSandbox


@cache
def environment(search_path: tuple[str, ...]) -> TemplateSandbox:
    """The sandboxed Jinja environment for a template search path (built once per path). Templates
    load only from inside those folders (engine.util.sandbox.ContainedLoader)."""
    env = TemplateSandbox(
        loader=ContainedLoader(search_path),
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.add_filters(FILTERS)
    return env


def _search_path(scenario: Scenario) -> tuple[str, ...]:
    dirs = (scenario.domain.spec_dir, *scenario.domain.parent_dirs)
    return (*(str(d) for d in dirs), str(TEMPLATE_DIR))


def context(scenario: Scenario) -> dict[str, Any]:
    """Variables every template sees, as plain data (engine.util.sandbox.plain: records become dicts,
    paths their text): scenario, domain, user, policy_role, policy_instructions, current_date
    (YYYY-MM-DD), agent_notes (list of str), tools (``{tools: [...], names: [...]}``)."""
    record = plain_record(scenario)
    return {
        "scenario": record,
        "domain": record["domain"],
        "user": record["user"],
        "policy_role": scenario.domain.policy_role,
        "policy_instructions": scenario.domain.policy_instructions,
        "current_date": scenario.current_date,
        "agent_notes": list(scenario.agent_notes),
        "tools": record["tools"],
    }


def _not_found(err: jinja2.TemplateNotFound, search_path: tuple[str, ...]) -> str:
    if isinstance(err, UnsafeTemplateError):
        return str(err.message)
    return f"template {err.name!r} not found in {', '.join(search_path)}"


def template_problem(
    err: Exception, template: str, scenario_name: str, search_path: tuple[str, ...]
) -> Problem:
    """A Problem naming the template file and line (from the Jinja traceback) and the scenario."""
    line = getattr(err, "lineno", None) or 0
    file = template
    name = getattr(err, "filename", None) or getattr(err, "name", None)
    if name:
        file = name
    if not line:
        for frame in reversed(traceback.extract_tb(err.__traceback__)):
            if frame.filename.endswith(".j2") or frame.filename.endswith(template):
                file, line = frame.filename, frame.lineno or 0
                break
    if not Path(file).is_absolute():
        for folder in search_path:
            if (Path(folder) / file).is_file():
                file = str(Path(folder) / file)
                break
    message = getattr(err, "message", None) or str(err)
    return Problem(display_path(file), line, "$", f"template error: {message}", scenario_name)


#: Prompts rendered without extra variables, by (id(scenario), side) -> (weak reference to the
#: scenario, text), oldest first: a run renders each scenario's prompts when it checks its specs,
#: then for its sessions and for every result folder. Dropped with their scenario, and bounded by
#: characters (``_RENDERED_BUDGET``); thread-safe (re-entrant: a drop may come from the garbage
#: collector while the lock is held).
_RENDERED: OrderedDict[tuple[int, str], tuple[weakref.ref[Scenario], str]] = OrderedDict()
_RENDERED_BUDGET = 16 << 20
_rendered_chars = 0
_RENDERED_LOCK = threading.RLock()


def render(scenario: Scenario, side: str, **extra: Any) -> str:
    """Render the domain template for ``side`` (agent, user, judge...) with ``context``, the
    scenario's own variables for that side (``template_variables``) and ``extra``. Without
    ``extra``, a scenario's prompt is rendered once and then answered from memory.

    Raises SpecError (template file, line, scenario) for a missing template, a syntax error or
    an undefined variable (every time: failures are not kept).
    """
    if extra:
        return _render(scenario, side, extra)
    key = (id(scenario), side)
    with _RENDERED_LOCK:
        hit = _RENDERED.get(key)
    if hit is not None and hit[0]() is scenario:
        return hit[1]
    text = _render(scenario, side, extra)
    _keep(key, weakref.ref(scenario, partial(_forget, key)), text)
    return text


def _keep(key: tuple[int, str], ref: weakref.ref[Scenario], text: str) -> None:
    global _rendered_chars
    with _RENDERED_LOCK:
        old = _RENDERED.pop(key, None)
        _rendered_chars -= len(old[1]) if old else 0
        _RENDERED[key] = (ref, text)
        _rendered_chars += len(text)
        while _rendered_chars > _RENDERED_BUDGET and len(_RENDERED) > 1:
            _, (_, dropped) = _RENDERED.popitem(last=False)
            _rendered_chars -= len(dropped)


def _forget(key: tuple[int, str], ref: weakref.ref[Scenario]) -> None:
    """The scenario of ``key`` is gone: drop its prompt (unless a newer scenario took the key)."""
    global _rendered_chars
    with _RENDERED_LOCK:
        hit = _RENDERED.get(key)
        if hit is not None and hit[0] is ref:
            del _RENDERED[key]
            _rendered_chars -= len(hit[1])


def _render(scenario: Scenario, side: str, extra: dict[str, Any]) -> str:
    template = scenario.domain.templates.get(side)
    if not template:
        raise SpecError(
            [
                Problem(
                    scenario.domain.source.file,
                    0,
                    "$.templates",
                    f"no {side!r} template declared",
                    scenario.name,
                )
            ]
        )
    search_path = _search_path(scenario)
    try:
        own = scenario.template_variables.get(side) or {}
        variables = {**context(scenario), **plain(own), **{k: plain(v) for k, v in extra.items()}}
        return environment(search_path).get_template(template).render(**variables)
    except jinja2.TemplateNotFound as err:
        raise SpecError(
            [
                Problem(
                    scenario.domain.source.file,
                    0,
                    f"$.templates.{side}",
                    _not_found(err, search_path),
                    scenario.name,
                )
            ]
        ) from None
    except Exception as err:  # a template is spec code: any failure in it is a spec problem
        raise SpecError([template_problem(err, template, scenario.name, search_path)]) from None


def render_agent_prompt(scenario: Scenario) -> str:
    """The agent system prompt: upstream policy, then ``## Additional Notes to Follow``."""
    return render(scenario, "agent")


def render_user_prompt(scenario: Scenario) -> str:
    """The user-simulator system prompt built from the dataset record."""
    return render(scenario, "user")


def tool_schemas(scenario: Scenario) -> list[dict[str, Any]]:
    """The OpenAI chat-completions ``tools`` list, exactly what the agent model sees."""
    return scenario.tools.openai_schemas()


def _compile_other_templates(scenario: Scenario) -> list[Problem]:
    """Syntax-check the templates other than agent/user (e.g. judge), which need run-time variables."""
    problems = []
    search_path = _search_path(scenario)
    for side, name in scenario.domain.templates.items():
        if side in ("agent", "user"):
            continue
        try:
            environment(search_path).get_template(name)
        except jinja2.TemplateNotFound as err:
            problems.append(
                Problem(scenario.domain.source.file, 0, f"$.templates.{side}", _not_found(err, search_path))
            )
        except jinja2.TemplateSyntaxError as err:
            file = display_path(err.filename or name)
            problems.append(Problem(file, err.lineno or 0, "$", f"template error: {err.message}"))
    return problems


#: Variables only the judge template sees (engine.scoring.judge.render_judge_prompt).
JUDGE_VARIABLES = frozenset(
    {"scenario_name", "description", "user_goal", "reference", "actions", "transcript", "nl_assertions"}
)
_SINGLE_BRACE = re.compile(r"(?<!\{)\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}(?!\})")


def single_brace_problems(scenario: Scenario) -> list[Problem]:
    """``{name}`` in a template's text where ``name`` is a variable the template sees: Jinja
    renders it literally (``Today is {current_date}``). Text that names no variable (a JSON example
    in a prompt) is left alone. One problem per occurrence, at its template line."""
    names = set(context(scenario)) | JUDGE_VARIABLES
    env = environment(_search_path(scenario))
    problems: list[Problem] = []
    for template in dict.fromkeys(scenario.domain.templates.values()):
        try:
            source, filename, _ = env.loader.get_source(env, template)  # type: ignore[union-attr]
            tokens = list(env.lex(source))
        except (jinja2.TemplateError, OSError):
            continue  # reported by rendering
        for lineno, kind, value in tokens:
            if kind != "data":
                continue
            for match in _SINGLE_BRACE.finditer(value):
                if match.group(1) in names:
                    line = lineno + value.count("\n", 0, match.start())
                    name = match.group(1)
                    message = (
                        f"{match.group(0)!r} is a single-brace placeholder, rendered literally; "
                        f"write '{{{{ {name} }}}}' for the variable"
                    )
                    problems.append(Problem(display_path(filename or template), line, "$", message))
    return problems


def check_templates(scenarios: list[Scenario]) -> tuple[list[Problem], int]:
    """Render agent and user prompts for every scenario; returns ``(problems, prompts rendered)``.

    The same template error hit by many scenarios is reported once, naming the first scenario
    and how many more hit it (:class:`TemplateCheck`, which takes them one at a time).
    """
    check = TemplateCheck()
    for scenario in scenarios:
        check.add(scenario)
    return check.problems(), check.rendered


class TemplateCheck:
    """:func:`check_templates` fed one scenario at a time (a streaming spec check keeps none of
    them): :meth:`add` each, then :meth:`problems`; ``rendered`` counts the prompts rendered."""

    def __init__(self) -> None:
        self.seen: dict[tuple[str, int, str], list[str]] = {}
        self.rendered = 0
        self.first: list[Problem] | None = None  # the domain-wide checks, made on the first scenario

    def add(self, scenario: Scenario) -> None:
        for side in ("agent", "user"):
            try:
                render(scenario, side)
                self.rendered += 1
            except SpecError as err:
                for p in err.problems:
                    key = (p.file, p.line, f"{p.json_path}\0{p.message}")
                    self.seen.setdefault(key, []).append(scenario.name)
        if self.first is None:
            self.first = _compile_other_templates(scenario) + single_brace_problems(scenario)

    def problems(self) -> list[Problem]:
        problems = list(self.first or [])
        for (file, line, key), names in self.seen.items():
            json_path, message = key.split("\0", 1)
            more = f" (and {len(names) - 1} more scenario(s))" if len(names) > 1 else ""
            problems.append(Problem(file, line, json_path, message + more, names[0]))
        return problems
