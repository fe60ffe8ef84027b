"""The prompts the engine renders carry the same content as upstream's rendered prompts.

Each prompt, rendered through the real loader (``specs/<domain>``, the registry plugin deriving
the template variables from the record, ``engine.core.render``), is compared with the record's
``reference_rendered_prompts`` after whitespace normalisation: every piece of scenario content
(persona, task, steps, guidelines, documents, reference lines; the script lines of a scripted
scenario) must appear in both, in the same order, and what is left once those pieces are cut out
(the framing) must be one and the same text for every scenario of a side and shape, upstream and
ours alike, so no scenario carries content the other rendering lacks. The framing itself differs
on purpose; see DELIBERATE_DIFFERENCES.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import jinja2
import pytest
from jinja2.sandbox import ImmutableSandboxedEnvironment

from engine.core.model import TEMPLATE_DIR
from engine.core.render import render_agent_prompt, render_user_prompt
from engine.domains.nemo_common import SCRIPTED_PROMPTS, domain_of, evalctl_name, prompt_variables
from tests.domains.nemo.helpers import loaded, names, release_records

#: Where evalctl's prompts deliberately differ from upstream's text.
DELIBERATE_DIFFERENCES = (
    "The framing around the scenario content (identity sentence, headings, lead-in lines before "
    "the steps, guidelines and reference lines) is evalctl's own wording, not upstream's.",
    "The spoken-output rules (no Markdown, lists in prose, identifiers read out, no invented facts) "
    "are evalctl's own, shorter paragraph, in the agent and the user prompt alike.",
    "simple_qa_3: upstream's hand-written script lines are kept; its spoken-output paragraph is "
    "replaced by evalctl's like everywhere else.",
    "Agent prompts list the scenario's agent_notes under 'Additional notes' when it has any "
    "(no upstream scenario has them).",
)

SIDES = ("agent", "user")
ENV = ImmutableSandboxedEnvironment(
    loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)),
    undefined=jinja2.StrictUndefined,
    autoescape=False,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)


def _norm(text: str) -> str:
    return " ".join(text.split())


def _render(record: dict[str, Any], side: str, notes: tuple[str, ...] = ()) -> str:
    """The prompt the engine sends: the scenario loaded from its spec folder by the real loader
    (registry plugin, template variables derived from the record), rendered by engine.core.render."""
    scenario = loaded(domain_of(record)).scenario(evalctl_name(record))
    if notes:
        scenario = replace(scenario, agent_notes=notes)
    return render_agent_prompt(scenario) if side == "agent" else render_user_prompt(scenario)


def _render_directly(record: dict[str, Any], side: str) -> str:
    """The domain template rendered straight from prompt_variables in a plain sandbox."""
    template = ENV.get_template(f"{domain_of(record)}/{side}.md.j2")
    return template.render(**prompt_variables(record, side), agent_notes=[])


def _fragments(record: dict[str, Any], side: str) -> list[str]:
    """The scenario content of one side's prompt, in rendering order."""
    v = prompt_variables(record, side)
    if v["script"]:
        return [_norm(line) for line in v["script"]]
    persona, task, resources = v["persona"], v["task"], v["resources"]
    pieces = [
        persona["role"],
        persona["name"],
        persona["background"],
        persona["personality"],
        persona["language"],
        persona["accent"],
        task["background"],
        task["goal"],
        *v["steps"],
        *v["guidelines"],
        *(f"{name}: {path}" for name, path in resources["documents"].items()),
        *resources["information"],
    ]
    return [_norm(p) for p in pieces if p]


def _framing(text: str, fragments: list[str]) -> str:
    """``text`` (normalised) with the fragments cut out in order, step numbers and list separators
    dropped: what remains is the framing. AssertionError naming a fragment that is missing."""
    body, cursor, gaps = _norm(text), 0, []
    for fragment in fragments:
        at = body.find(fragment, cursor)
        assert at >= 0, f"content missing or out of order: {fragment[:80]!r}"
        gaps.append(body[cursor:at])
        cursor = at + len(fragment)
    gaps.append(body[cursor:])
    kept = [re.sub(r"Step \d+:", "Step #:", gap).strip() for gap in gaps]
    return " | ".join(gap for gap in kept if gap not in ("", "-", "Step #:"))


def _shape(record: dict[str, Any], side: str) -> tuple[str, bool, bool, bool]:
    """Which optional parts a prompt has (each changes where the framing is cut)."""
    v = prompt_variables(record, side)
    return (
        side,
        bool(v["task"]["background"]),
        bool(v["resources"]["information"]),
        bool(v["resources"]["documents"]),
    )


def _regular() -> list[str]:
    return [n for n in names() if n not in SCRIPTED_PROMPTS]


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("name", names())
def test_prompt_carries_the_upstream_content_in_order(name: str, side: str) -> None:
    record = release_records()[name]
    fragments = _fragments(record, side)
    assert fragments
    _framing(record["reference_rendered_prompts"][side], fragments)  # the content is what upstream renders
    _framing(_render(record, side), fragments)  # and ours carries all of it, in the same order


@pytest.mark.parametrize("side", SIDES)
def test_nothing_but_framing_is_left_on_either_side(side: str) -> None:
    upstream: dict[tuple[str, bool, bool, bool], set[str]] = {}
    ours: dict[tuple[str, bool, bool, bool], set[str]] = {}
    for name in _regular():
        record = release_records()[name]
        fragments = _fragments(record, side)
        shape = _shape(record, side)
        upstream.setdefault(shape, set()).add(_framing(record["reference_rendered_prompts"][side], fragments))
        ours.setdefault(shape, set()).add(_framing(_render(record, side), fragments))
    assert len(upstream) >= 3  # with and without a task background, with and without reference lines
    for shape in upstream:
        assert len(upstream[shape]) == 1, f"upstream carries scenario content we do not: {shape}"
        assert len(ours[shape]) == 1, f"our framing varies: {shape}"
        assert upstream[shape] != ours[shape]  # the framing is reworded (DELIBERATE_DIFFERENCES[0:2])


@pytest.mark.parametrize("side", SIDES)
def test_the_scripted_prompt_keeps_the_script_and_only_swaps_the_spoken_rules(side: str) -> None:
    (name,) = SCRIPTED_PROMPTS
    record = release_records()[name]
    fragments = _fragments(record, side)
    upstream_left = _framing(record["reference_rendered_prompts"][side], fragments)
    regular = release_records()[_regular()[0]]
    regular_framing = _framing(regular["reference_rendered_prompts"][side], _fragments(regular, side))
    assert (
        len(upstream_left) > 200 and upstream_left in regular_framing
    )  # only upstream's spoken rules remain
    ours_left = _framing(_render(record, side), fragments)
    assert ours_left in _framing(_render(regular, side), _fragments(regular, side))


def test_agent_notes_are_appended_to_the_agent_prompt_only() -> None:
    record = release_records()["customer_service__billing_dispute"]
    plain = _render(record, "agent")
    noted = _render(record, "agent", notes=("Read the refund amount back.",))
    assert "Additional notes" not in plain
    assert noted.startswith(plain.rstrip("\n")) and noted.rstrip().endswith("- Read the refund amount back.")


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize(
    "name", ["restaurant__pizza_pepperoni", "customer_service__plan_upgrade", "simple_qa_3"]
)
def test_the_loader_renders_what_the_template_makes_of_the_record(name: str, side: str) -> None:
    record = release_records()[name]
    assert _render(record, side) == _render_directly(record, side)


def test_templates_are_strict_about_missing_variables() -> None:
    record = release_records()["qa__capital_france"]
    variables = prompt_variables(record, "user")
    del variables["guidelines"]
    with pytest.raises(jinja2.UndefinedError):
        ENV.get_template("qa/user.md.j2").render(**variables)
    with pytest.raises(jinja2.UndefinedError):
        ENV.get_template("qa/agent.md.j2").render(**prompt_variables(record, "agent"))  # no agent_notes


def test_exactly_the_scripted_scenarios_ignore_their_structured_fields() -> None:
    """SCRIPTED_PROMPTS is right: upstream renders every other record's persona, not theirs."""
    for name, record in release_records().items():
        rendered = _norm(record["reference_rendered_prompts"]["user"])
        uses_fields = _norm(record["user_persona"]["background"]) in rendered
        assert uses_fields is (name not in SCRIPTED_PROMPTS), name
