"""eva_airline's prompts as rendered from the real data: the agent prompt is eva's policy then our
notes, the caller's prompt comes from the record, `evalctl render` and `evalctl list` on the 50
scenarios. Moved from tests/unit/render/test_render.py, which tests the same on the mock shop."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import yaml

import cli
from engine.core.render import render_agent_prompt, render_user_prompt
from engine.spec.loader import LoadedDomain
from tests.conftest import SPEC_DIR


def test_agent_prompt_is_policy_then_notes(loaded: LoadedDomain, data_root: Path) -> None:
    config = yaml.safe_load((data_root / "eva-0.1.3/configs/agents/airline_agent.yaml").read_text())
    prompt = render_agent_prompt(loaded.scenario("eva_airline__voluntary_date_change"))
    assert prompt.startswith(config["role"] + "\n\n" + config["instructions"])
    notes = prompt.split("## Additional Notes to Follow", 1)
    assert len(notes) == 2 and config["instructions"] in notes[0]
    assert "Today's date is 2026-03-17." in notes[1]
    assert "end_conversation" in notes[1] and "R, T, four, K, P, D" in notes[1]


def test_agent_notes_and_dates_per_scenario(loaded: LoadedDomain) -> None:
    for s in loaded.scenarios:
        assert f"Today's date is {s.current_date}." in render_agent_prompt(s)
    s = loaded.scenario("eva_airline__1_1_3")
    extra = dataclasses.replace(s, agent_notes=("Mention the lounge.",))
    assert render_agent_prompt(extra).rstrip().endswith("- Mention the lounge.")


def test_user_prompt_from_record(loaded: LoadedDomain) -> None:
    s = loaded.scenario("eva_airline__irrops_cancellation")
    text = render_user_prompt(s)
    rec = s.record["user_goal"]
    for piece in (s.user.persona, rec["high_level_user_goal"], rec["starting_utterance"], s.user.name):
        assert piece in text
    for crit in rec["decision_tree"]["must_have_criteria"]:
        assert f"- {crit}" in text
    assert "### Resolution condition" in text and "### Escalation behavior" in text
    assert "end_call" in text and "- Confirmation number: FAR0UM" in text
    assert "{{" not in text and "{%" not in text


def test_cli_render_sides(data_root: Path, capsys) -> None:
    base = [
        "render",
        str(SPEC_DIR),
        "--scenario",
        "eva_airline__voluntary_date_change",
        "--data-root",
        str(data_root),
    ]
    assert cli.main(base) == 0
    out = capsys.readouterr().out
    assert "## Additional Notes to Follow" in out and "2026-03-17" in out
    assert cli.main([*base, "--side", "tools"]) == 0
    assert '"name": "rebook_flight"' in capsys.readouterr().out
    assert cli.main([*base, "--side", "user"]) == 0
    assert "Hi, I need to change my flight to March 25." in capsys.readouterr().out
    assert cli.main(["render", str(SPEC_DIR), "-s", "nope", "--data-root", str(data_root)]) == 2
    assert "no scenario named 'nope'" in capsys.readouterr().err


def test_cli_list(data_root: Path, capsys) -> None:
    assert cli.main(["list", str(SPEC_DIR), "--data-root", str(data_root)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 50
    assert lines[0].split()[:2] == ["eva_airline__voluntary_date_change", "1.1.2"]
