"""Prompt rendering: Jinja templates in a sandboxed environment with ``StrictUndefined``.

Templates are looked up in the domain's spec directory first, then in ``templates/``. The
filter table is small and explicit (``spell``, ``humanize``) on top of Jinja's built-ins.
A template error is raised as SpecError naming the template file, its line and the scenario.
"""

from __future__ import annotations

import json
import traceback
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
from jinja2.exceptions import SecurityError
from jinja2.sandbox import SandboxedEnvironment

from engine.errors import Problem, SpecError
from engine.model import TEMPLATE_DIR, Scenario
from engine.yamlload import display_path

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


def spell(code: Any) -> str:
    """Spell a code for speech, one character at a time: ``ZK3FFW`` -> ``Z, K, three, F, F, W``.

    Letters stay letters, ASCII digits become words, symbols are named (``_`` -> underscore,
    ``-`` -> dash, see SPOKEN_SYMBOLS); anything else is kept as is.
    """
    parts = []
    for ch in str(code):
        if "0" <= ch <= "9":
            parts.append(SPOKEN_DIGITS[int(ch)])
        else:
            parts.append(SPOKEN_SYMBOLS.get(ch, ch))
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


#: Largest string or list a template may build with ``*`` (items), and largest ``**`` exponent.
MAX_REPEAT = 1_000_000
MAX_EXPONENT = 1_000


class BoundedSandbox(SandboxedEnvironment):
    """Jinja's sandbox plus bounds on ``*`` repetition and ``**`` exponents, so a template cannot
    exhaust memory or CPU (``{{ 'x' * 10**10 }}``); over the bound raises SecurityError."""

    intercepted_binops = frozenset({"*", "**"})

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if operator == "*":
            for seq, times in ((left, right), (right, left)):
                sized = isinstance(seq, str | list | tuple) and isinstance(times, int)
                if sized and len(seq) * times > MAX_REPEAT:
                    raise SecurityError(f"template repetition over {MAX_REPEAT} items")
        if operator == "**" and isinstance(right, int | float) and abs(right) > MAX_EXPONENT:
            raise SecurityError(f"template exponent over {MAX_EXPONENT}")
        return super().call_binop(context, operator, left, right)


@cache
def environment(search_path: tuple[str, ...]) -> SandboxedEnvironment:
    """The sandboxed Jinja environment for a template search path (built once per path)."""
    env = BoundedSandbox(
        loader=jinja2.FileSystemLoader(list(search_path)),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(FILTERS)
    return env


def _search_path(scenario: Scenario) -> tuple[str, ...]:
    return (str(scenario.domain.spec_dir), str(TEMPLATE_DIR))


def context(scenario: Scenario) -> dict[str, Any]:
    """Variables every template sees: scenario, domain, user, policy_role, policy_instructions,
    current_date (YYYY-MM-DD), agent_notes (list of str), tools (the ToolTable)."""
    return {
        "scenario": scenario,
        "domain": scenario.domain,
        "user": scenario.user,
        "policy_role": scenario.domain.policy_role,
        "policy_instructions": scenario.domain.policy_instructions,
        "current_date": scenario.current_date,
        "agent_notes": list(scenario.agent_notes),
        "tools": scenario.tools,
    }


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


def render(scenario: Scenario, side: str, **extra: Any) -> str:
    """Render the domain template for ``side`` (agent, user, judge...) with ``context`` + ``extra``.

    Raises SpecError (template file, line, scenario) for a missing template, a syntax error or
    an undefined variable.
    """
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
        return environment(search_path).get_template(template).render(**context(scenario), **extra)
    except jinja2.TemplateNotFound as err:
        raise SpecError(
            [
                Problem(
                    scenario.domain.source.file,
                    0,
                    f"$.templates.{side}",
                    f"template {err.name!r} not found in {', '.join(search_path)}",
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
        except jinja2.TemplateNotFound:
            problems.append(
                Problem(
                    scenario.domain.source.file,
                    0,
                    f"$.templates.{side}",
                    f"template {name!r} not found in {', '.join(search_path)}",
                )
            )
        except jinja2.TemplateSyntaxError as err:
            file = display_path(err.filename or name)
            problems.append(Problem(file, err.lineno or 0, "$", f"template error: {err.message}"))
    return problems


def check_templates(scenarios: list[Scenario]) -> tuple[list[Problem], int]:
    """Render agent and user prompts for every scenario; returns ``(problems, prompts rendered)``.

    The same template error hit by many scenarios is reported once, naming the first scenario
    and how many more hit it.
    """
    seen: dict[tuple[str, int, str], list[str]] = {}
    rendered = 0
    for scenario in scenarios:
        for side in ("agent", "user"):
            try:
                render(scenario, side)
                rendered += 1
            except SpecError as err:
                for p in err.problems:
                    seen.setdefault((p.file, p.line, f"{p.json_path}\0{p.message}"), []).append(scenario.name)
    problems = _compile_other_templates(scenarios[0]) if scenarios else []
    for (file, line, key), names in seen.items():
        json_path, message = key.split("\0", 1)
        more = f" (and {len(names) - 1} more scenario(s))" if len(names) > 1 else ""
        problems.append(Problem(file, line, json_path, message + more, names[0]))
    return problems, rendered


def render_side(scenario: Scenario, side: str) -> str:
    """What ``evalctl render`` prints for one scenario: the agent or user prompt, or (side
    ``tools``) the tool schemas as pretty-printed JSON. Raises SpecError for a template error."""
    if side == "tools":
        return json.dumps(tool_schemas(scenario), indent=2, ensure_ascii=False) + "\n"
    text = render(scenario, side)
    return text if text.endswith("\n") else text + "\n"
