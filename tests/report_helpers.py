"""Runs with something to look at, for the report tests, `make screenshot` and the bench.

:func:`build_sample_run` makes one run with something to look at from a :class:`Sample` (which
scenarios, which gold traces altered, what the scripted agent looks up), on any spec folder and
data root. :func:`sample_run` is eva_airline's, on the real data:

- the built-in replay sides on ten scenarios, two of them with an altered gold trace (three bags
  instead of one; an aisle seat instead of a window), which fail ``db_state_match`` with the DB
  differences ``evalctl diff`` explains;
- a model agent (``openai:demo-agent``, a scripted OpenAI-compatible server on loopback that
  looks the booking up and hangs up) on two more scenarios, with a scripted judge (``demo-judge``)
  that gives a score and a reason: token usage for the agent and the judge, and judge verdicts.

The second run's results are moved into the first run's folder and the summary recomputed
(``finish_run``), the way a resumed run ends: one run folder with every kind of result. The mock
shop's sample (tests/mock_domain/sample_run.py) is built by the same function.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

import engine.run.runner as runner
from engine.core.options import ScoringOptions
from engine.domains.registry import plugins
from engine.results.scoring_stage import finish_run
from engine.spec.index import whole_index
from engine.spec.loader import LoadedDomain, load_domain
from tests.conftest import SPEC_DIR
from tests.runtime_helpers import ScriptedOpenAI, Step, alter_gold_call, completion, run_options

#: Tokens of each scripted agent turn and of each judge answer: (prompt, completion).
AGENT_TOKENS = (1200, 80)
JUDGE_TOKENS = (3000, 150)
PRICES_YAML = (
    "# price per million tokens\n"
    "demo-agent: {input: 2.0, output: 8.0}\n"
    "demo-judge: {input: 0.4, output: 1.6}\n"
)


@dataclass(frozen=True)
class Sample:
    """What a sample run holds (the scenarios are names of the spec folder it is built from)."""

    #: Scenarios run with the built-in replay sides.
    replayed: tuple[str, ...]
    #: scenario -> (tool whose first gold call is altered, argument changes, a line `evalctl diff` prints)
    altered: Mapping[str, tuple[str, dict[str, Any], str]]
    #: Scenarios run with the scripted model agent and judged by the scripted judge (one at a time).
    modelled: tuple[str, ...]
    #: The scripted agent's look-up: (tool, arguments); then it talks and hangs up.
    lookup: tuple[str, dict[str, Any]]
    #: What the agent says with the look-up, and after its result.
    lines: tuple[str, str]
    #: The scripted judge's reason (its score is 0.25: a failure).
    judge_reason: str


REPLAYED = (
    "eva_airline__1_1_3",
    "eva_airline__voluntary_date_change",
    "eva_airline__2_2_2",
    "eva_airline__3_1_5",
    "eva_airline__4_1_1",
    "eva_airline__5_2_5",
    "eva_airline__6_1_1",
    "eva_airline__7_2_8",
    "eva_airline__7_4_1",
    "eva_airline__escalation_edge_case",
)
ALTERED = {
    "eva_airline__1_1_3": ("add_baggage_allowance", {"num_bags": 3}, "bags_checked: expected 1, got 3"),
    "eva_airline__voluntary_date_change": ("assign_seat", {"seat_preference": "aisle"}, ".seat: expected '"),
}
MODELLED = ("eva_airline__1_2_1", "eva_airline__5_1_2")
JUDGE_REASON = "The agent looked the booking up but never made the change the caller asked for."
EVA_SAMPLE = Sample(
    replayed=REPLAYED,
    altered=ALTERED,
    modelled=MODELLED,
    lookup=("get_reservation", {"confirmation_number": "ZK3FFW", "last_name": "Doe"}),
    lines=("Let me look that booking up.", "I found the booking, but I cannot change it today."),
    judge_reason=JUDGE_REASON,
)


_BLOCK = re.compile(r'<script type="application/json" id="([^"]+)">(.*?)</script>', re.S)


def blocks(page: str) -> dict[str, Any]:
    """The JSON blocks of a report page by id (``report-index``, ``d-0``, ``d-1``...)."""
    return {m.group(1): json.loads(m.group(2)) for m in _BLOCK.finditer(page)}


def _altered(sample: Sample, spec_dir: Path, data_root: Path) -> LoadedDomain:
    loaded = load_domain(spec_dir, data_root, plugins=plugins())

    def change(scenario):
        tool, args, _ = sample.altered[scenario.name]
        edit = lambda step: replace(step, arguments={**step.arguments, **args})  # noqa: E731
        return replace(scenario, gold_trace=alter_gold_call(scenario.gold_trace, tool, edit))

    scenarios = tuple(change(s) if s.name in sample.altered else s for s in loaded.scenarios)
    return LoadedDomain(loaded.domain, scenarios, loaded.prompts_rendered)


def _modelled(sample: Sample, spec_dir: Path, data_root: Path, out: Path) -> runner.RunReport:
    tool, args = sample.lookup
    turns = [
        Step(completion(sample.lines[0], [("c1", tool, json.dumps(args))], AGENT_TOKENS)),
        Step(completion(sample.lines[1], usage=AGENT_TOKENS)),
        Step(completion("Is there anything else I can help with?", usage=AGENT_TOKENS)),
        Step(completion("Goodbye.", [("c2", "end_conversation", "{}")], AGENT_TOKENS)),
    ]
    agent = turns * len(sample.modelled)  # one scenario after the other (concurrency 1)
    verdict = json.dumps({"score": 0.25, "reason": sample.judge_reason})
    judge_steps = [Step(completion(verdict, usage=JUDGE_TOKENS))]
    with ScriptedOpenAI(agent) as agent_server, ScriptedOpenAI(judge_steps) as judge:
        opts = run_options(
            spec_dir=spec_dir,
            data_root=data_root,
            scenarios=sample.modelled,
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


def build_sample_run(sample: Sample, spec_dir: Path, data_root: Path, where: Path) -> Path:
    """Build ``sample`` from ``spec_dir`` on ``data_root`` under ``where`` (a new folder); returns the
    run directory (``where/run``)."""
    run_dir, other = where / "run", where / "modelled"
    mp = pytest.MonkeyPatch()
    mp.setattr(runner, "index_domain", lambda *a, **k: whole_index(_altered(sample, spec_dir, data_root)))
    try:
        report = runner.run_cli(
            run_options(
                spec_dir=spec_dir,
                data_root=data_root,
                scenarios=sample.replayed,
                output_dir=run_dir,
                concurrency=4,
                quiet=True,
                allow_gold_mismatch=True,  # two gold traces are altered on purpose
            )
        )
    finally:
        mp.undo()
    assert not report.scoring_errors, report.scoring_errors
    mp = pytest.MonkeyPatch()
    mp.setenv("EVALCTL_TEST_KEY", "test")
    try:
        modelled = _modelled(sample, spec_dir, data_root, other)
    finally:
        mp.undo()
    for name in sample.modelled:
        shutil.move(str(other / name), str(run_dir / name))
    scenarios = [*sample.replayed, *sample.modelled]
    info = {"spec_dir": str(spec_dir), "data_root": str(data_root), "scenarios": scenarios}
    finish_run(run_dir, {**info, "wall_time_s": round(report.wall_s + modelled.wall_s, 3)})
    return run_dir


def sample_run(data_root: Path, where: Path) -> Path:
    """Build eva_airline's sample run on ``data_root`` under ``where`` (a new folder); returns the run
    directory."""
    return build_sample_run(EVA_SAMPLE, SPEC_DIR, data_root, where)


#: What a hostile agent says (tests/mock_domain/sample_run.py's hostile_run): markup, a script end
#: tag, a line separator, a bidi override.
HOSTILE = (
    '</script><script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
    "\u2028<b>bold</b> \u202eevil"
)
HOSTILE_TOOL = "<i>tool</i>"
BIG_SAY = "a long answer " * 1500  # 21,000 characters: over the report's 8,000 per value
