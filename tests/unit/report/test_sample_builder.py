"""The one builder behind both report sample runs (tests/report_helpers.py ``build_sample_run``): it
takes the spec folder and the data root as arguments and makes the run a :class:`Sample` describes.
The eva sample (tests/domains/eva_airline/test_report_eva.py) and the mock sample (the other report
tests) are two such descriptions."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from engine.results.scoring_stage import load_run_metrics
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR
from tests.mock_domain.sample_run import ALTERED, MOCK_SAMPLE, NOT_THEIRS
from tests.report_helpers import AGENT_TOKENS, JUDGE_TOKENS, Sample, build_sample_run


def test_the_builder_runs_what_the_sample_describes_from_any_spec_folder(tmp_path: Path) -> None:
    spec = shutil.copytree(MOCK_SPEC_DIR, tmp_path / "elsewhere" / "spec")
    sample = Sample(
        replayed=("mock__late_delivery_credit", "mock__shipped_refusal"),
        altered={"mock__late_delivery_credit": ALTERED["mock__late_delivery_credit"]},
        modelled=("mock__cancel_order",),
        lookup=MOCK_SAMPLE.lookup,
        lines=MOCK_SAMPLE.lines,
        judge_reason="a reason of this test",
    )
    run_dir = build_sample_run(sample, spec, MOCK_DATA_ROOT, tmp_path / "built")
    assert run_dir == tmp_path / "built" / "run"
    rows = {m.scenario_name: m for m in load_run_metrics(run_dir)}
    assert set(rows) == {"mock__late_delivery_credit", "mock__shipped_refusal", "mock__cancel_order"}
    altered, kept, modelled = (
        rows["mock__late_delivery_credit"],
        rows["mock__shipped_refusal"],
        rows["mock__cancel_order"],
    )
    assert altered.is_successful is False and altered.signals.db_state_match is False
    assert kept.is_successful is True and kept.agent_backend == "replay"
    assert modelled.agent_backend == "openai:demo-agent" and modelled.judge_model == "demo-judge"
    assert modelled.signals.judge_passed is False and modelled.signals.judge_score == 0.25
    agent, judge = modelled.usage["agent"], modelled.usage["judge"]
    assert (agent.prompt_tokens, agent.completion_tokens) == (4 * AGENT_TOKENS[0], 4 * AGENT_TOKENS[1])
    assert (judge.prompt_tokens, judge.completion_tokens) == JUDGE_TOKENS
    calls = json.loads((run_dir / "mock__cancel_order" / "tool_calls.json").read_text(encoding="utf-8"))
    assert MOCK_SAMPLE.lookup == ("get_order", NOT_THEIRS)
    assert [(c["name"], json.loads(c["arguments"])) for c in calls][:1] == [MOCK_SAMPLE.lookup], calls
