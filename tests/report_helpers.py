"""A real run with something to look at, for the report tests, `make screenshot` and the bench.

:func:`sample_run` runs eva_airline scenarios with the real runner on the real data:

- the built-in replay sides on ten scenarios, two of them with an altered gold trace (three bags
  instead of one; an aisle seat instead of a window), which fail ``db_state_match`` with the DB
  differences ``evalctl diff`` explains;
- a model agent (``openai:demo-agent``, a scripted OpenAI-compatible server on loopback that
  looks the booking up and hangs up) on two more scenarios, with a scripted judge (``demo-judge``)
  that gives a score and a reason: token usage for the agent and the judge, and judge verdicts.

The second run's results are moved into the first run's folder and the summary recomputed
(``finish_run``), the way a resumed run ends: one run folder with every kind of result.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import engine.runner as runner
from engine.domains.registry import load_domain
from engine.options import ScoringOptions
from engine.results import finish_run
from engine.specs import LoadedDomain
from tests.conftest import SPEC_DIR
from tests.runtime_helpers import ScriptedOpenAI, Step, alter_gold_call, completion, run_options

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
#: scenario -> (tool whose first call is altered, argument changes, a line `evalctl diff` prints)
ALTERED = {
    "eva_airline__1_1_3": ("add_baggage_allowance", {"num_bags": 3}, "bags_checked: expected 1, got 3"),
    "eva_airline__voluntary_date_change": ("assign_seat", {"seat_preference": "aisle"}, ".seat: expected '"),
}
MODELLED = ("eva_airline__1_2_1", "eva_airline__5_1_2")
#: What the scripted agent sends: a look-up (a tool call shown in the transcript), then goodbye.
AGENT_TOKENS = (1200, 80)
JUDGE_TOKENS = (3000, 150)
JUDGE_REASON = "The agent looked the booking up but never made the change the caller asked for."
PRICES_YAML = (
    "# price per million tokens\n"
    "demo-agent: {input: 2.0, output: 8.0}\n"
    "demo-judge: {input: 0.4, output: 1.6}\n"
)


_BLOCK = re.compile(r'<script type="application/json" id="([^"]+)">(.*?)</script>', re.S)


def blocks(page: str) -> dict[str, Any]:
    """The JSON blocks of a report page by id (``report-index``, ``d-0``, ``d-1``...)."""
    return {m.group(1): json.loads(m.group(2)) for m in _BLOCK.finditer(page)}


def _altered(data_root: Path) -> LoadedDomain:
    loaded = load_domain(SPEC_DIR, data_root)

    def change(scenario):
        tool, args, _ = ALTERED[scenario.name]
        edit = lambda step: replace(step, arguments={**step.arguments, **args})  # noqa: E731
        return replace(scenario, gold_trace=alter_gold_call(scenario.gold_trace, tool, edit))

    scenarios = tuple(change(s) if s.name in ALTERED else s for s in loaded.scenarios)
    return LoadedDomain(loaded.domain, scenarios, loaded.prompts_rendered)


def _modelled(data_root: Path, out: Path) -> runner.RunReport:
    lookup = '{"confirmation_number": "ZK3FFW", "last_name": "Doe"}'
    turns = [
        Step(completion("Let me look that booking up.", [("c1", "get_reservation", lookup)], AGENT_TOKENS)),
        Step(completion("I found the booking, but I cannot change it today.", usage=AGENT_TOKENS)),
        Step(completion("Is there anything else I can help with?", usage=AGENT_TOKENS)),
        Step(completion("Goodbye.", [("c2", "end_conversation", "{}")], AGENT_TOKENS)),
    ]
    agent = turns * len(MODELLED)  # one scenario after the other (concurrency 1)
    verdict = json.dumps({"score": 0.25, "reason": JUDGE_REASON})
    judge_steps = [Step(completion(verdict, usage=JUDGE_TOKENS))]
    with ScriptedOpenAI(agent) as agent_server, ScriptedOpenAI(judge_steps) as judge:
        opts = run_options(
            spec_dir=SPEC_DIR,
            data_root=data_root,
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


def sample_run(data_root: Path, where: Path) -> Path:
    """Build the sample run under ``where`` (a new folder); returns the run directory."""
    run_dir, other = where / "run", where / "modelled"
    mp = pytest.MonkeyPatch()
    mp.setattr(runner, "load_domain", lambda *a, **k: _altered(data_root))
    try:
        report = runner.run_cli(
            run_options(
                spec_dir=SPEC_DIR,
                data_root=data_root,
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
        modelled = _modelled(data_root, other)
    finally:
        mp.undo()
    for name in MODELLED:
        shutil.move(str(other / name), str(run_dir / name))
    info = {"spec_dir": str(SPEC_DIR), "data_root": str(data_root), "scenarios": [*REPLAYED, *MODELLED]}
    finish_run(run_dir, {**info, "wall_time_s": round(report.wall_s + modelled.wall_s, 3)})
    return run_dir


#: What a hostile agent says (tests/mock_domain/sample_run.py's hostile_run): markup, a script end
#: tag, a line separator, a bidi override.
HOSTILE = (
    '</script><script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
    "\u2028<b>bold</b> \u202eevil"
)
HOSTILE_TOOL = "<i>tool</i>"
BIG_SAY = "a long answer " * 1500  # 21,000 characters: over the report's 8,000 per value
