"""Template variables of the agent and user prompts of the NeMo small domains.

Upstream builds each side's prompt from four parts of the scenario: a persona (role, name,
background, personality, optional language and accent), a task (goal, optional background),
actions (numbered instructions and bulleted guidelines) and resources (documents and reference
lines). :func:`prompt_variables` hands exactly those parts to the domain templates
(``templates/<domain>/{agent,user}.md.j2``); the framing around them (headings, lead-in sentences
and the spoken-output rules) is evalctl's own wording, in ``templates/nemo_common/``.

One scenario differs: upstream replaces both prompts of ``simple_qa_3`` in code with a short
script (a greeting line for the agent, two sentences to say for the caller) that no structured
field holds. For it, ``script`` carries those lines, read from the record's
``reference_rendered_prompts`` with upstream's spoken-output paragraph cut off (found as the
longest text the two sides end with); the templates then print the script and our own rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

Side = Literal["agent", "user"]

#: Scenarios whose prompts upstream writes by hand instead of rendering the structured fields.
SCRIPTED_PROMPTS: frozenset[str] = frozenset({"simple_qa_3"})

#: The spoken-output paragraph both sides of a scripted scenario end with is at least this long;
#: a shorter common ending means the record is not what this module expects.
_MIN_SHARED_ENDING = 200


def _common_suffix(a: str, b: str) -> str:
    n = 0
    while n < min(len(a), len(b)) and a[-1 - n] == b[-1 - n]:
        n += 1
    return a[len(a) - n :] if n else ""


def script_lines(record: Mapping[str, Any], side: Side) -> list[str]:
    """The hand-written prompt lines of a scripted scenario for ``side`` (stripped, non-empty,
    in order), without upstream's spoken-output paragraph; ``[]`` for every other scenario.

    Raises ValueError when a scripted record's two prompts do not share a long common ending.
    """
    if record["name"] not in SCRIPTED_PROMPTS:
        return []
    rendered = record["reference_rendered_prompts"]
    shared = _common_suffix(rendered["agent"], rendered["user"]).lstrip()
    if len(shared) < _MIN_SHARED_ENDING:
        raise ValueError(f"{record['name']}: the scripted prompts share no spoken-output paragraph")
    text = rendered[side]
    own = text[: len(text) - len(shared)]
    return [line.strip() for line in own.splitlines() if line.strip()]


def prompt_variables(record: Mapping[str, Any], side: Side) -> dict[str, Any]:
    """The variables of one side's prompt template.

    Returns ``{persona: {role, name, background, personality, language, accent},
    task: {goal, background}, steps: [str], guidelines: [str],
    resources: {information: [str], documents: {name: path}}, script: [str]}``. Missing text is
    ``""`` (``None`` for language and accent), lists keep upstream order. ``script`` is non-empty
    only for the scripted scenarios (:data:`SCRIPTED_PROMPTS`), whose templates print it instead
    of the structured parts. Raises KeyError when the record lacks one of the four parts.
    """
    persona = record[f"{side}_persona"]
    task = record[f"{side}_task"]
    actions = record[f"{side}_actions"]
    resources = record[f"{side}_resources"]
    return {
        "persona": {
            "role": persona.get("role") or "",
            "name": persona.get("name") or "",
            "background": persona.get("background") or "",
            "personality": persona.get("personality") or "",
            "language": persona.get("language"),
            "accent": persona.get("accent"),
        },
        "task": {"goal": task.get("goal") or "", "background": task.get("background") or ""},
        "steps": list(actions.get("instructions") or []),
        "guidelines": list(actions.get("guidelines") or []),
        "resources": {
            "information": list(resources.get("information") or []),
            "documents": dict(resources.get("documents") or {}),
        },
        "script": script_lines(record, side),
    }
