"""``evalctl validate``: load a spec directory (schemas, cross-checks, every prompt rendered), render
the judge's prompt of every scenario, then replay every gold trace, compare the end state with the
expected DB and check the scenario's db_state_assertions on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from engine.core.model import Scenario, SessionResult
from engine.core.options import TaskSelection
from engine.core.plugin import Plugins
from engine.scoring.judge import JUDGE_TEMPLATE, judge_gates, render_judge_prompt
from engine.scoring.rubric import RUBRIC_TEMPLATE, render_rubric_prompt
from engine.spec.gold_replay import replay_gold
from engine.spec.loader import load_domain
from engine.spec.rtvi_map import tool_map_problems
from engine.spec.selection import select_scenarios, select_tasks
from engine.util.errors import Problem, SpecError


@dataclass
class ValidationReport:
    """Outcome of ``validate_specs``.

    ``problems``: every spec finding; ``scenarios``: scenario count loaded; ``prompts``: prompts
    rendered (agent + user per scenario); ``judge_prompts``: judge prompts rendered (one per
    scenario, for a session with and one without tool calls); ``judged``: the scenarios whose
    verdict the judge decides (``engine.scoring.judge.judge_gates``; 0: the domain is scored
    without a judge); ``replay``: one object per replayed
    scenario (``.ok``, ``.scenario_name``, ``.lines``); ``replay_note``: why replay did not run,
    if it did not; ``assertions`` / ``assertions_held``: the scenarios' db_state_assertions
    evaluated on the gold replays' end DBs, and how many held.
    """

    spec_dir: str
    problems: list[Problem] = field(default_factory=list)
    scenarios: int = 0
    prompts: int = 0
    judge_prompts: int = 0
    judged: int = 0
    replay: list[Any] = field(default_factory=list)
    replay_note: str | None = None
    sources: dict[str, str] = field(default_factory=dict)  # scenario name -> "file:line"

    @property
    def assertions(self) -> int:
        return sum(r.assertions for r in self.replay)

    @property
    def assertions_held(self) -> int:
        return sum(r.assertions_held for r in self.replay)

    @property
    def replay_failures(self) -> list[Any]:
        return [r for r in self.replay if not r.ok]

    @property
    def warnings(self) -> list[str]:
        """One line per declared gold failure that happened (``known_gold_errors``): a known data
        issue upstream, reported but never a failure."""
        out = []
        for r in self.replay:
            for f in r.known_failures:
                k = f.known
                where = f"{k.source.file}:{k.source.line}" if k.source.line else k.source.file
                note = f" ({k.note})" if k.note else ""
                tail = (
                    "; no gold write succeeds, so the expected DB is the initial DB"
                    if f.initial_end_state
                    else ""
                )
                out.append(
                    f"{where}: warning: known gold error: call {k.call} ({k.tool}) fails as declared: "
                    f"{f.message}{note}{tail} [{r.scenario_name}]"
                )
        return out

    @property
    def ok(self) -> bool:
        return not self.problems and not self.replay_failures

    def lines(self) -> list[str]:
        """Every finding as one printable line, then the summary line."""
        out = [str(p) for p in self.problems] + self.warnings
        for r in self.replay_failures:
            where = self.sources.get(r.scenario_name, self.spec_dir)
            problem = (
                "gold replay failed, its end state does not satisfy the scenario's references"
                if r.against == "references"
                else "gold replay failed, the final DB differs from the expected one"
                if r.actual_hash != r.expected_hash
                else "gold replay failed its own checks"
            )
            out.append(f"{where}: $: {problem} [{r.scenario_name}]")
            if r.error:
                out.append(f"  {r.error}")
            out.extend(f"  {line}" for line in r.lines)
        out.append(self.summary())
        return out

    def summary(self) -> str:
        if self.problems:
            return f"{self.spec_dir}: {len(self.problems)} problem(s) found; specs not valid"
        if self.replay_note:
            replay = f"gold replay skipped ({self.replay_note})"
        else:
            replay = f"gold replay {len(self.replay) - len(self.replay_failures)}/{len(self.replay)}"
            if self.assertions:
                replay += f", {self.assertions_held}/{self.assertions} assertions hold on the gold"
            known = sum(len(r.known_failures) for r in self.replay)
            if known:
                tasks = sum(1 for r in self.replay if r.known_failures)
                replay += f" ({known} known gold error(s) in {tasks} scenario(s), warnings above)"
        judge = f" and {self.judge_prompts} judge prompts" if self.judge_prompts and self.judged else ""
        unjudged = " (scored without a judge)" if self.judge_prompts and not self.judged else ""
        return (
            f"validated {self.scenarios} scenario{'' if self.scenarios == 1 else 's'} in {self.spec_dir}: "
            "schemas ok, cross-checks ok, "
            f"{self.prompts} prompts{judge} rendered{unjudged}, {replay}"
        )


def validate_specs(
    spec_dir: str | Path,
    data_root: str | Path | None = None,
    *,
    replay: bool = True,
    plugins: Plugins,
    tasks: TaskSelection | None = None,
    language: str | None = None,
    scenarios: tuple[str, ...] = (),
    domain_prefix: str | None = None,
) -> ValidationReport:
    """Load and check a spec directory; never raises for spec problems (they go in the report).

    Runs the schemas, every cross-check and both templates for every scenario (via
    ``engine.spec.loader.load_domain``), renders each scenario's judge prompt (:func:`judge_prompt_problems`),
    then replays each scenario's gold trace with
    ``engine.spec.gold_replay.replay_gold`` unless ``replay`` is False. Raises DataRootError for a missing
    data root. ``scenarios`` (names or record ids) / ``domain_prefix``, then ``tasks``, narrow the
    scenarios checked after loading (UsageError for a bad selection,
    ``engine.spec.selection.select_scenarios`` / ``select_tasks``). ``language``: the domain in one
    of its languages (``engine.spec.languages.in_language``; UsageError for one it lacks).
    """
    report = ValidationReport(spec_dir=str(spec_dir))
    try:
        loaded = load_domain(spec_dir, data_root, plugins=plugins, language=language)
    except SpecError as err:
        report.problems = err.problems
        return report
    ids = {s.record_id for s in loaded.scenarios}
    every = loaded.scenarios
    if scenarios or domain_prefix:
        chosen = select_scenarios(loaded.scenarios, scenarios, domain_prefix)
        loaded = replace(loaded, scenarios=tuple(chosen))
    if tasks:
        loaded = replace(loaded, scenarios=tuple(select_tasks(loaded.scenarios, loaded, tasks, every)))
    report.scenarios = len(loaded.scenarios)
    report.prompts = loaded.prompts_rendered
    report.problems = [p for s in loaded.scenarios for p in judge_prompt_problems(s)]
    report.problems.extend(tool_map_problems(loaded.domain))
    if report.problems:
        return report
    report.judge_prompts = len(loaded.scenarios)
    report.judged = sum(1 for s in loaded.scenarios if judge_gates(s))
    if not replay:
        report.replay_note = "--no-replay"
        return report
    for scenario in loaded.scenarios:
        report.sources[scenario.name] = f"{scenario.source.file}:{scenario.source.line}"
        if scenario.gold_trace is not None:
            report.replay.append(replay_gold(scenario))
    report.problems.extend(loaded.shared_db_problems())  # the audit cannot see writes into shared records
    for i, known in enumerate(loaded.domain.known_gold_errors):
        if known.record_id not in ids:
            report.problems.append(
                Problem(
                    known.source.file,
                    known.source.line,
                    f"$.known_gold_errors[{i}].id",
                    f"no scenario has record id {known.record_id!r}",
                )
            )
    return report


def judge_prompt_problems(scenario: Scenario) -> list[Problem]:
    """Render the judge's prompt of ``scenario`` (its domain's judge template, else the repository's)
    under StrictUndefined, for a session with tool calls, actions and spoken turns and for one
    without: every branch of the template that a run can reach. Returns one problem naming the
    template and the scenario when it does not render (a run would have judged nothing). The
    caller rubric (``engine.scoring.rubric``) is rendered the same way."""
    template = scenario.domain.templates.get("judge") or JUDGE_TEMPLATE
    tool = scenario.tools.tools[0].name if scenario.tools.tools else "tool"
    busy = SessionResult(
        scenario.name,
        1,
        "exit",
        actions=[{"action_type": tool}],
        tool_calls=[{"name": tool, "arguments": "{}", "result": {"status": "success"}, "turn": 0}],
        transcript=[
            {"role": "user", "type": "utterance", "content": "Hello.", "t": 0.0},
            {"role": "agent", "type": "utterance", "content": "Hello, how can I help?", "t": 0.1},
        ],
    )
    quiet = SessionResult(scenario.name, 1, "error")
    for session in (busy, quiet):
        try:
            render_judge_prompt(scenario, session)
        except SpecError as err:  # a domain's own template: the problem names its file and line
            return [replace(p, message=f"judge prompt: {p.message}") for p in err.problems]
        except Exception as err:
            message = f"the judge prompt ({template}) does not render: {type(err).__name__}: {err}"
            return [Problem(scenario.source.file, scenario.source.line, "$", message, scenario.name)]
        try:
            render_rubric_prompt(scenario, session)
        except Exception as err:  # the repository's template with this scenario's caller record
            message = f"the caller rubric ({RUBRIC_TEMPLATE}) does not render: {type(err).__name__}: {err}"
            return [Problem(scenario.source.file, scenario.source.line, "$", message, scenario.name)]
    return []
