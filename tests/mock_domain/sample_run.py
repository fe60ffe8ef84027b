"""The mock shop's sample run, for the report tests (tests/unit/report/): the same kinds of results
as the eva sample run of tests/report_helpers.py, without the eva data.

:func:`sample_spec` copies the mock spec folder and adds a report group rule (by record: ``record
M1``...) and three scenario files that reuse records M1 and M2 under other names (a scenario is YAML
only). :func:`sample_run` runs it with the real runner (tests/report_helpers.py's
:func:`build_sample_run`, which builds the eva sample too):

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
from pathlib import Path

import pytest

import engine.run.runner as runner
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR
from tests.report_helpers import (  # noqa: F401 (re-exported: the report tests' shared pieces)
    AGENT_TOKENS,
    BIG_SAY,
    HOSTILE,
    HOSTILE_TOOL,
    JUDGE_TOKENS,
    PRICES_YAML,
    Sample,
    blocks,
    build_sample_run,
)
from tests.runtime_helpers import ScriptedOpenAI, Step, completion, run_options

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
JUDGE_REASON = "The agent looked an order up but never made the change the caller asked for."
MOCK_SAMPLE = Sample(
    replayed=REPLAYED,
    altered=ALTERED,
    modelled=MODELLED,
    lookup=("get_order", NOT_THEIRS),
    lines=("Let me look that order up.", "I found nothing I can change today."),
    judge_reason=JUDGE_REASON,
)
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


def sample_run(spec: Path, where: Path) -> Path:
    """Build the sample run of ``spec`` (:func:`sample_spec`) on the mock data root under ``where``;
    returns the run dir."""
    return build_sample_run(MOCK_SAMPLE, spec, MOCK_DATA_ROOT, where)


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
