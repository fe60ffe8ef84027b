"""Prompts and tool schemas rendered from the mock shop's spec and data, the spell filter, the
sandbox, and template runtime errors reported as spec problems. eva's prompts from the real data:
tests/domains/eva_airline/test_prompts_eva.py."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

import cli
from engine.core.render import outline, render, render_agent_prompt, render_user_prompt, spell, tool_schemas
from engine.domains.registry import plugins
from engine.spec.loader import LoadedDomain, load_domain
from engine.util.errors import SpecError
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR


def test_agent_prompt_is_policy_then_notes(loaded: LoadedDomain) -> None:
    s = loaded.scenario("mock__cancel_order")
    prompt = render_agent_prompt(s)
    policy = loaded.domain.policy_role + "\n\n" + loaded.domain.policy_instructions
    assert loaded.domain.policy_role and loaded.domain.policy_instructions
    assert prompt.startswith(policy)
    assert f"Today is {s.current_date}." in prompt[len(policy) :]
    assert s.agent_notes and prompt.rstrip().endswith("\n".join(f"- {n}" for n in s.agent_notes))


def test_agent_notes_and_dates_per_scenario(loaded: LoadedDomain) -> None:
    for s in loaded.scenarios:
        assert f"Today is {s.current_date}." in render_agent_prompt(s)
    s = loaded.scenario("mock__shipped_refusal")
    assert not s.agent_notes
    extra = dataclasses.replace(s, agent_notes=("Mention the returns page.",))
    assert render_agent_prompt(extra).rstrip().endswith("- Mention the returns page.")


def test_user_prompt_from_record(loaded: LoadedDomain) -> None:
    s = loaded.scenario("mock__late_delivery_credit")
    text = render_user_prompt(s)
    rec = s.record["caller"]
    for piece in (rec["persona"], rec["goal"], rec["opening"], rec["name"], s.user.name):
        assert piece in text
    for crit in rec["decision_tree"]["must_have_criteria"]:
        assert f"- {crit}" in text
    assert "Resolution condition:\n" + rec["decision_tree"]["resolution_condition"] in text
    assert "end_call" in text and f"- Order id: {rec['information_required']['order_id']}" in text
    assert "{{" not in text and "{%" not in text


def test_tool_schemas_are_openai_functions(loaded: LoadedDomain) -> None:
    schemas = tool_schemas(loaded.scenarios[0])
    assert [t["function"]["name"] for t in schemas] == list(loaded.domain.tools.names)
    for t in schemas:
        assert t["type"] == "function" and t["function"]["parameters"]["type"] == "object"
        assert t["function"]["description"]
    end = schemas[-1]["function"]
    assert end["name"] == "end_conversation" and end["parameters"]["properties"] == {}


def test_spell_filter() -> None:
    assert spell("ZK3FFW") == "Z, K, three, F, F, W"
    assert spell("FL_SK621") == "F, L, underscore, S, K, six, two, one"
    assert spell("a-b.c@d#1*") == "a, dash, b, dot, c, at, d, hash, one, star"
    assert spell(42) == "four, two"


def test_outline_filter() -> None:
    assert outline({"must_have": ["a", "b"], "note": "x", "none": []}) == (
        "- Must have:\n  - a\n  - b\n- Note: x\n- None: (none)"
    )
    assert outline([{"origin": "AUS", "date": "2026-03-20"}]) == "- Origin: AUS; Date: 2026-03-20"


def _with_template(loaded: LoadedDomain, tmp_path: Path, body: str):
    (tmp_path / "probe.j2").write_text(body, encoding="utf-8")
    domain = dataclasses.replace(loaded.domain, spec_dir=tmp_path, templates={"agent": "probe.j2"})
    return dataclasses.replace(loaded.scenarios[0], domain=domain)


def test_undefined_variable_names_template_line_and_scenario(loaded: LoadedDomain, tmp_path: Path) -> None:
    scenario = _with_template(loaded, tmp_path, "line one\n{{ current_date }}\n{{ nope }}\n")
    with pytest.raises(SpecError) as info:
        render(scenario, "agent")
    (problem,) = info.value.problems
    assert problem.file.endswith("probe.j2") and problem.line == 3
    assert "'nope' is undefined" in problem.message and problem.subject == scenario.name


def test_sandbox_blocks_unsafe_attribute_access(loaded: LoadedDomain, tmp_path: Path) -> None:
    scenario = _with_template(loaded, tmp_path, "{{ scenario.__class__.__mro__ }}\n")
    with pytest.raises(SpecError, match="template error"):
        render(scenario, "agent")


def test_cli_render_sides(capsys) -> None:
    s = load_domain(MOCK_SPEC_DIR, MOCK_DATA_ROOT, plugins=plugins()).scenario("mock__cancel_order")
    base = ["render", str(MOCK_SPEC_DIR), "--scenario", s.name, "--data-root", str(MOCK_DATA_ROOT)]
    assert cli.main(base) == 0
    out = capsys.readouterr().out
    assert out.rstrip().endswith(f"- {s.agent_notes[-1]}") and s.current_date in out
    assert cli.main([*base, "--side", "tools"]) == 0
    assert '"name": "cancel_order"' in capsys.readouterr().out
    assert cli.main([*base, "--side", "user"]) == 0
    assert f'Open with: "{s.user.starting_utterance}"' in capsys.readouterr().out
    assert cli.main(["render", str(MOCK_SPEC_DIR), "-s", "nope", "--data-root", str(MOCK_DATA_ROOT)]) == 2
    assert "no scenario named 'nope'" in capsys.readouterr().err


def test_cli_list(capsys) -> None:
    assert cli.main(["list", str(MOCK_SPEC_DIR), "--data-root", str(MOCK_DATA_ROOT)]) == 0
    lines = capsys.readouterr().out.splitlines()
    scenarios = load_domain(MOCK_SPEC_DIR, MOCK_DATA_ROOT, plugins=plugins()).scenarios
    assert [line.split()[:2] for line in lines] == [[s.name, s.record_id] for s in scenarios]


def test_cli_help_shows_examples() -> None:
    from click.testing import CliRunner

    for verb in ("list", "validate", "render"):
        result = CliRunner().invoke(cli.group, [verb, "--help"])
        assert result.exit_code == 0 and "Example:" in result.output and "--data-root" in result.output


def _spec_copy(tmp_path: Path) -> Path:
    target = tmp_path / "spec"
    shutil.copytree(MOCK_SPEC_DIR, target)
    return target


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("{% for i in range(10**9) %}{% endfor %}", "Range too big"),
        ("{{ 1 // 0 }}", "by zero"),
        ("{{ {}['missing_key'].x }}", "no attribute 'missing_key'"),
        ("{{ ''.__class__.__mro__ }}", "unsafe"),
        ("{{ 'x' * 10**10 }}", "repetition over"),
        ("{{ [1, 2] * 10**9 }}", "repetition over"),
        ("{{ 7 ** 100000000 }}", "exponent over"),
    ],
    ids=[
        "huge_range",
        "zero_division",
        "missing_key",
        "sandbox_escape",
        "string_bomb",
        "list_bomb",
        "power_bomb",
    ],
)
def test_template_runtime_error_is_a_spec_problem(tmp_path: Path, line: str, expected: str) -> None:
    spec = _spec_copy(tmp_path)
    template = (spec / "mock_agent.md.j2").read_text(encoding="utf-8")
    (spec / "mock_agent.md.j2").write_text(template + line + "\n", encoding="utf-8")
    with pytest.raises(SpecError) as info:
        load_domain(spec, MOCK_DATA_ROOT, plugins=plugins())
    lines = [str(p) for p in info.value.problems]
    assert any("agent.md.j2:" in s and expected in s for s in lines), lines


def test_a_prompt_is_rendered_once_per_scenario(loaded: LoadedDomain, monkeypatch) -> None:
    """A run asks for each prompt when it checks its specs, for its sessions and for every result
    folder: the template runs once per (scenario, side); extra variables always render anew."""
    from engine.core import render as render_module

    calls: list[str] = []
    real = render_module._render

    def counting(scenario, side, extra):
        calls.append(side)
        return real(scenario, side, extra)

    monkeypatch.setattr(render_module, "_render", counting)
    monkeypatch.setattr(render_module, "_RENDERED", type(render_module._RENDERED)())
    monkeypatch.setattr(render_module, "_rendered_chars", 0)
    s = loaded.scenario("mock__cancel_order")
    first = render_agent_prompt(s)
    assert render_agent_prompt(s) == render(s, "agent") == first and calls == ["agent"]
    render_user_prompt(s)
    render_user_prompt(s)
    assert calls == ["agent", "user"]
    copy = dataclasses.replace(s, agent_notes=("Say hello first.",))  # another scenario object
    assert render_agent_prompt(copy).rstrip().endswith("- Say hello first.") and calls[-1] == "agent"
    assert len(calls) == 3


def test_kept_prompts_stay_within_their_budget(loaded: LoadedDomain, monkeypatch) -> None:
    from engine.core import render as render_module

    monkeypatch.setattr(render_module, "_RENDERED", type(render_module._RENDERED)())
    monkeypatch.setattr(render_module, "_rendered_chars", 0)
    one = len(render_agent_prompt(loaded.scenario("mock__cancel_order")))
    monkeypatch.setattr(render_module, "_RENDERED_BUDGET", one + 1)  # room for one prompt
    for s in loaded.scenarios:
        render_agent_prompt(s)
    kept = list(render_module._RENDERED.values())
    assert len(kept) == 1 and render_module._rendered_chars == len(kept[0][1])  # the newest one


def test_kept_prompts_go_with_their_scenario(monkeypatch) -> None:
    import gc
    import weakref

    from engine.core import render as render_module

    monkeypatch.setattr(render_module, "_RENDERED", type(render_module._RENDERED)())
    monkeypatch.setattr(render_module, "_rendered_chars", 0)
    scenario = load_domain(MOCK_SPEC_DIR, MOCK_DATA_ROOT, plugins=plugins()).scenario("mock__cancel_order")
    render_agent_prompt(scenario)
    assert len(render_module._RENDERED) >= 1
    gone = weakref.ref(scenario)
    del scenario
    gc.collect()
    assert gone() is None
    assert not render_module._RENDERED and render_module._rendered_chars == 0
