"""The mock shop's sample run, for the report tests (tests/unit/report/): the same kinds of results
as the eva sample run of tests/report_helpers.py, without the eva data.

:func:`sample_spec` copies the mock spec folder and adds a report group rule (by record: ``record
M1``...) and three scenario files that reuse records M1 and M2 under other names (a scenario is YAML
only). :func:`sample_run` runs it with the real runner:

- the built-in replay sides on four scenarios, two of them with an altered gold trace (order O-101
  cancelled instead of O-100; 25 dollars of credit instead of 15), which fail ``db_state_match``
  with the DB differences ``evalctl diff`` explains;
- a model agent (``openai:demo-agent``, a scripted OpenAI-compatible server on loopback that looks
  up an order that is not the caller's and hangs up) on two more, with a scripted judge
  (``demo-judge``): token usage for the agent and the judge, and judge verdicts.

The second run's results are moved into the first run's folder and the summary recomputed
(``finish_run``), the way a resumed run ends: one run folder with every kind of result.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

import engine.runner as runner
from engine.domains.registry import load_domain
from engine.options import ScoringOptions
from engine.results import finish_run
from engine.specs import LoadedDomain
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR
from tests.report_helpers import (  # noqa: F401 (re-exported: the report tests' shared pieces)
    BIG_SAY,
    HOSTILE,
    HOSTILE_TOOL,
    PRICES_YAML,
    blocks,
)
from tests.runtime_helpers import ScriptedOpenAI, Step, alter_gold_call, completion, run_options

#: Scenario files the sample spec adds: file name -> (scenario name, record id).
EXTRA = {
    "cancel_again.yaml": ("mock__cancel_again", "M1"),
    "cancel_by_model.yaml": ("mock__cancel_by_model", "M1"),
    "late_by_model.yaml": ("mock__late_by_model", "M2"),
}
REPLAYED = ("mock__cancel_order", "mock__late_delivery_credit", "mock__shipped_refusal", "mock__cancel_again")
#: scenario -> (tool whose first call is altered, argument changes, a line `evalctl diff` prints)
ALTERED = {
    "mock__cancel_order": (
        "cancel_order",
        {"order_id": "O-101"},
        "O-100.status: expected 'cancelled', got 'placed'",
    ),
    "mock__late_delivery_credit": ("issue_credit", {"credit_amount": 25}, "C-2.credit: expected 20"),
}
MODELLED = ("mock__cancel_by_model", "mock__late_by_model")
#: The order the scripted agent looks up: in no mock DB, so the look-up fails.
NOT_THEIRS = {"order_id": "O-999"}
AGENT_TOKENS = (1200, 80)
JUDGE_TOKENS = (3000, 150)
JUDGE_REASON = "The agent looked an order up but never made the change the caller asked for."
GROUP_RULE = "report_group:\n  pattern: '^(M\\d)'\n  label: 'record {1}'\n"


def sample_spec(where: Path) -> Path:
    """The mock spec folder with the report group rule and the EXTRA scenarios, at ``where/spec``."""
    spec = where / "spec"
    shutil.copytree(MOCK_SPEC_DIR, spec)
    with (spec / "domain.yaml").open("a", encoding="utf-8") as f:
        f.write(GROUP_RULE)
    for file, (name, record) in EXTRA.items():
        (spec / "scenarios" / file).write_text(
            "# yaml-language-server: $schema=../../../../schemas/scenario.schema.json\n"
            f"name: {name}\neva_id: {record}\ndescription: Record {record} again, for the report tests.\n",
            encoding="utf-8",
        )
    return spec


def _altered(spec: Path) -> LoadedDomain:
    loaded = load_domain(spec, MOCK_DATA_ROOT)

    def change(scenario):
        tool, args, _ = ALTERED[scenario.name]
        edit = lambda step: replace(step, arguments={**step.arguments, **args})  # noqa: E731
        return replace(scenario, gold_trace=alter_gold_call(scenario.gold_trace, tool, edit))

    scenarios = tuple(change(s) if s.name in ALTERED else s for s in loaded.scenarios)
    return LoadedDomain(loaded.domain, scenarios, loaded.prompts_rendered)


def _modelled(spec: Path, out: Path) -> runner.RunReport:
    lookup = json.dumps(NOT_THEIRS)
    turns = [
        Step(completion("Let me look that order up.", [("c1", "get_order", lookup)], AGENT_TOKENS)),
        Step(completion("I found nothing I can change today.", usage=AGENT_TOKENS)),
        Step(completion("Is there anything else I can help with?", usage=AGENT_TOKENS)),
        Step(completion("Goodbye.", [("c2", "end_conversation", "{}")], AGENT_TOKENS)),
    ]
    agent = turns * len(MODELLED)  # one scenario after the other (concurrency 1)
    verdict = json.dumps({"score": 0.25, "reason": JUDGE_REASON})
    judge_steps = [Step(completion(verdict, usage=JUDGE_TOKENS))]
    with ScriptedOpenAI(agent) as agent_server, ScriptedOpenAI(judge_steps) as judge:
        opts = run_options(
            spec_dir=spec,
            data_root=MOCK_DATA_ROOT,
            scenarios=MODELLED,
            agent="openai:demo-agent",
            base_url=agent_server.base_url,
            api_key_env="EVALCTL_TEST_KEY",
            output_dir=out,
            concurrency=1,
            quiet=True,
            scoring=ScoringOptions(
                judge_model="demo-judge",
                judge_base_url=judge.base_url,
                judge_api_key_env="EVALCTL_TEST_KEY",
                judge_retries=0,
            ),
        )
        report = runner.run_cli(opts)
    assert not report.scoring_errors, report.scoring_errors
    return report


def sample_run(spec: Path, where: Path) -> Path:
    """Build the sample run of ``spec`` (:func:`sample_spec`) under ``where``; returns the run dir."""
    run_dir, other = where / "run", where / "modelled"
    mp = pytest.MonkeyPatch()
    mp.setattr(runner, "load_domain", lambda *a, **k: _altered(spec))
    try:
        report = runner.run_cli(
            run_options(
                spec_dir=spec,
                data_root=MOCK_DATA_ROOT,
                scenarios=REPLAYED,
                output_dir=run_dir,
                concurrency=4,
                quiet=True,
            )
        )
    finally:
        mp.undo()
    assert not report.scoring_errors, report.scoring_errors
    mp = pytest.MonkeyPatch()
    mp.setenv("EVALCTL_TEST_KEY", "test")
    try:
        modelled = _modelled(spec, other)
    finally:
        mp.undo()
    for name in MODELLED:
        shutil.move(str(other / name), str(run_dir / name))
    info = {"spec_dir": str(spec), "data_root": str(MOCK_DATA_ROOT), "scenarios": [*REPLAYED, *MODELLED]}
    finish_run(run_dir, {**info, "wall_time_s": round(report.wall_s + modelled.wall_s, 3)})
    return run_dir


def hostile_run(out: Path) -> Path:
    """A real run of one mock scenario whose model agent sends markup everywhere it can: its words, an
    unknown tool's name and its arguments, and one very long utterance."""
    args = json.dumps({"q": "</script><svg onload=alert(1)>"})
    steps = [
        Step(completion(HOSTILE, [("c1", HOSTILE_TOOL, args)])),
        Step(completion(BIG_SAY)),
        Step(completion("Goodbye.", [("c2", "end_conversation", "{}")])),
    ]
    mp = pytest.MonkeyPatch()
    mp.setenv("EVALCTL_TEST_KEY", "test")
    try:
        with ScriptedOpenAI(steps) as server:
            report = runner.run_cli(
                run_options(
                    spec_dir=MOCK_SPEC_DIR,
                    data_root=MOCK_DATA_ROOT,
                    scenarios=("mock__shipped_refusal",),
                    agent="openai:<b>model</b>",
                    base_url=server.base_url,
                    api_key_env="EVALCTL_TEST_KEY",
                    output_dir=out,
                    quiet=True,
                )
            )
    finally:
        mp.undo()
    assert not report.scoring_errors, report.scoring_errors
    return out
