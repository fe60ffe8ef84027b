"""``evalctl diff RUN_DIR [SCENARIO]``: why each failed scenario failed, field by field.

Reads only the run directory: ``metrics.json`` (failing signals), ``expected_db.json`` and
``final_db.json`` (compared by ``engine.core.dbdiff.db_diff`` — DeepDiff after the hash's own
normalisation, with the hash rules saved in ``scenario_config/metadata.json``), ``actions.json``
and the per-predicate verdicts. Old runs stay explainable without reloading any spec.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from engine.core.dbdiff import DiffLine, db_diff
from engine.core.model import HashRules
from engine.core.records.error_words import hint, origin
from engine.core.records.metrics import MetricsRecord
from engine.core.tools.arguments import ArgumentChecker
from engine.core.validation import did_you_mean
from engine.results.provenance import read_run_record
from engine.results.scoring_stage import scored_dirs
from engine.results.session_files import AGENT_HASH_KEY, METRICS, SESSION, result_files, scenario_dir
from engine.results.unreadable import records_text, watching
from engine.scoring.action_match import unmatched_reference_items
from engine.util.artifacts import read_json
from engine.util.errors import UsageError
from engine.util.untrusted import one_line


@dataclass
class ScenarioDiff:
    """One (scenario, trial) explained.

    ``failed_signals`` the whitelisted signals that failed; ``fields`` the changed DB fields (and
    list items added/removed inside a record); ``records_added`` / ``records_removed`` whole
    entries of a top-level collection (``refunds.REF-ZK3FFW-001``); ``db_note`` says why no DB
    comparison was possible; ``assertions`` failed ``db_state_assertion`` verdicts.
    """

    scenario: str
    trial: int
    is_successful: Any
    failed_signals: list[str]
    stop_reason: str | None
    stalled: bool
    agent_turns: int | None
    min_agent_turns: int | None
    error: str | None
    db_state_match: Any
    fields: list[DiffLine] = field(default_factory=list)
    records_added: list[DiffLine] = field(default_factory=list)
    records_removed: list[DiffLine] = field(default_factory=list)
    db_note: str | None = None
    actions: list[dict[str, Any]] = field(default_factory=list)
    assertions: list[dict[str, Any]] = field(default_factory=list)
    judge: dict[str, Any] | None = None
    #: When is_action_match failed: the reference items no action satisfies, as text.
    unmatched_reference: list[str] = field(default_factory=list)
    gold_path: str | None = None
    #: ``source: message`` when the verdict is ``error`` (not the agent: the caller simulator, the
    #: judge, infrastructure or evalctl, as ``error_source`` says).
    error_cause: str | None = None
    #: The agent's own DB hash line when the agent reported one (an RTVI bot), e.g.
    #: ``HEX (differs from db_hash)``; None when it reported none.
    agent_db_hash: str | None = None
    #: The turns with a model reply cut off at the token limit (``finish_reason`` ``length``).
    cut_off: list[str] = field(default_factory=list)
    #: A FAIL's most likely cause ``{cause, turn, evidence}`` (metrics version 4; None otherwise).
    attribution: dict[str, Any] | None = None
    #: The caller-fidelity findings (``{check, turn, detail, text}``), and whether they are enforced.
    caller_findings: list[dict[str, Any]] = field(default_factory=list)
    caller_enforced: bool = True
    #: The judged caller rubric (metrics version 5): why it was not answered (None: answered or
    #: not asked), and how many of its findings it dropped for citing no caller turn.
    caller_judge_error: str | None = None
    caller_dropped: int = 0
    #: The agent's tool calls that the tools refused (an error result), in call order:
    #: ``{name, arguments, turn, error}`` (``error`` as ``error_type: message``).
    refused: list[dict[str, Any]] = field(default_factory=list)
    #: The ``error_cause.source`` of an ``error`` verdict (an ``ErrorSource`` value), else None.
    error_source: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The diff as JSON: each DB line ``{path, kind, expected, actual, text}``, plus
        ``final_path`` when the entry sits elsewhere in final_db.json."""
        body = asdict(self)
        for key in ("fields", "records_added", "records_removed"):
            body[key] = [_line_json(line) for line in getattr(self, key)]
        return body


def _is_record(line: DiffLine) -> bool:
    """A whole entry of a top-level collection: ``collection.key`` (one dot, no index)."""
    return line.kind in ("added", "removed") and line.path.count(".") == 1 and "[" not in line.path


def _rules(sdir: Path) -> HashRules:
    try:
        raw = read_json(sdir / "scenario_config" / "metadata.json").get("hash_rules") or {}
    except (OSError, ValueError, AttributeError):
        raw = {}
    if not raw:
        return HashRules()
    return HashRules(tuple(raw.get("excluded_keys", ())), tuple(raw.get("unordered_lists", ())))


def _load_optional(path: Path) -> Any:
    try:
        return read_json(path)
    except (OSError, ValueError, RecursionError):
        return None


def _left_gold_path(sdir: Path) -> str | None:
    """Against the built-in replay caller (which plays the gold's lines whatever the agent does):
    where the agent's tool calls first left the gold's, and that later caller lines were out of
    step. None when the run had no replay caller or no gold (no ``gold_path.json``)."""
    gold = _load_optional(sdir / "scenario_config" / "gold_path.json")
    made = _load_optional(sdir / "tool_calls.json")
    if not isinstance(gold, dict) or not isinstance(made, list):
        return None
    ending = set(gold.get("ending_tools") or ())  # hanging up is not a step of the gold path
    ours = [
        c
        for c in made
        if isinstance(c, dict) and c.get("side", "agent") == "agent" and c.get("name") not in ending
    ]
    gold_calls = [c for c in gold["tool_calls"] if c.get("name") not in ending]
    found = gold.get("argument_rules")
    rules: dict[str, Any] = found if isinstance(found, dict) else {}
    for i, want in enumerate(gold_calls):
        got = ours[i] if i < len(ours) else None
        if (
            got is None
            or got.get("name") != want["name"]
            or not same_arguments(
                call_arguments(got.get("arguments")), want["arguments"], rules.get(want["name"])
            )
        ):
            shown = f"{got.get('name')}({_args_text(got.get('arguments'))})" if got else "no call"
            when = _turn_of(got, want)
            return (
                f"left the gold path at tool call {i + 1} ({when}): gold "
                f"{want['name']}({_args_text(want['arguments'])}), got {shown}; the replay caller's later "
                "lines were the gold's, not answers to this agent (a replay-caller run is a conformance "
                "check, not a score of a model)"
            )
    extra = ours[len(gold_calls) :]
    if extra:
        return f"followed the gold's {len(gold_calls)} tool calls, then made {len(extra)} more"
    return "followed the gold path (every gold tool call, in order)"


def _as_the_tool_takes(args: Any, rule: dict[str, Any]) -> Any:
    """``args`` as the tool's handler would see them: converted by the engine's lax rules when the
    tool uses them (arguments it refuses stay as sent), case folded on ``fold_case`` fields."""
    if not isinstance(args, dict):
        return args
    taken: dict[str, Any] = dict(args)
    if rule.get("coerce") and isinstance(rule.get("parameters"), dict):
        try:
            clean, failed = ArgumentChecker(rule["parameters"], {}).check(args)
        except Exception:  # a schema the checker cannot take: compare as sent
            clean, failed = None, {"status": "error"}
        if failed is None and clean is not None:
            taken = clean
    for name in rule.get("fold_case") or ():
        if isinstance(taken.get(name), str):
            taken[name] = taken[name].casefold()
    return taken


def same_arguments(got: Any, want: Any, rule: Any) -> bool:
    """True when the agent's call arguments ``got`` are the gold's ``want`` for the tool itself:
    equal after the tool's own conversion and case rules (``rule``: the tool's entry of
    ``gold_path.json``'s ``argument_rules``; None, from a run before them: equal as sent)."""
    if got == want:
        return True
    if not isinstance(rule, dict):
        return False
    return bool(_as_the_tool_takes(got, rule) == _as_the_tool_takes(want, rule))


def _turn_of(got: dict[str, Any] | None, want: dict[str, Any]) -> str:
    """Which agent turn (counted from 1, as a reader counts) a divergence is in: the agent's own
    call's turn, or the gold's when the agent made no such call."""
    turn = got.get("turn") if got else None
    if isinstance(turn, int) and not isinstance(turn, bool):
        return f"the agent's turn {turn + 1}"
    gold = want.get("turn")
    if isinstance(gold, int) and not isinstance(gold, bool):
        return f"the gold makes it in agent turn {gold + 1}"
    return "agent turn unknown"


def call_arguments(raw: Any) -> Any:
    """A call's arguments parsed from JSON text; text that does not parse (malformed, or nested
    beyond Python's recursion limit: a side chooses what it sends) is kept as text."""
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except (ValueError, RecursionError):
            return raw
    return raw


#: Characters of a call's arguments shown in a diff line.
ARGS_SHOWN = 300


def _args_text(raw: Any) -> str:
    value = call_arguments(raw)
    try:
        text = (
            ", ".join(f"{k}={_value_text(v)}" for k, v in value.items())
            if isinstance(value, dict)
            else str(value)
        )
    except (RecursionError, ValueError):  # a value nested too deeply to print, an int too long
        text = str(raw)
    return text if len(text) <= ARGS_SHOWN else f"{text[:ARGS_SHOWN]}... ({len(text)} chars)"


def cut_off_turns(sdir: Path) -> list[str]:
    """``agent turn 3: 1 of 2 replies cut off at the token limit`` per turn of the transcript whose
    model replies include a ``finish_reason`` ``length`` (the transcript's ``finish`` entries);
    an unreadable line is skipped."""
    try:
        lines = (sdir / "transcript.jsonl").read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    out: list[str] = []
    for raw in lines:
        if '"finish"' not in raw:
            continue
        try:
            entry = json.loads(raw)
        except (ValueError, RecursionError):
            continue
        content = entry.get("content") if isinstance(entry, dict) else None
        if entry.get("type") != "finish" or not isinstance(content, dict) or not content.get("cut_off"):
            continue
        listed = content.get("reasons")
        reasons: list[Any] = listed if isinstance(listed, list) else []
        cut = len([r for r in reasons if r == "length"])
        out.append(
            f"{entry.get('role')} turn {content.get('turn')}: {cut} of {len(reasons)} model "
            f"repl{'y' if len(reasons) == 1 else 'ies'} cut off at the token limit (finish_reason length)"
        )
    return out


def explain(sdir: Path, metrics: MetricsRecord) -> ScenarioDiff:
    """Build the :class:`ScenarioDiff` of one scored (scenario, trial) directory."""
    signals = metrics.signals
    out = ScenarioDiff(
        scenario=metrics.scenario_name,
        trial=metrics.trial,
        is_successful=metrics.is_successful,
        failed_signals=list(metrics.success_breakdown.failed),
        stop_reason=metrics.stop_reason,
        stalled=metrics.stalled,
        agent_turns=metrics.agent_turns,
        min_agent_turns=metrics.min_agent_turns,
        error=metrics.error,
        db_state_match=signals.db_state_match,
        actions=_load_optional(sdir / "actions.json") or [],
        assertions=[v for v in signals.db_state_assertion_verdicts if not v["passed"]],
        error_cause=str(metrics.error_cause) if metrics.error_cause is not None else None,
        error_source=metrics.error_cause.source if metrics.error_cause is not None else None,
        attribution=metrics.attribution.to_json() if metrics.attribution is not None else None,
    )
    if metrics.user_fidelity is not None:
        out.caller_findings = [f.to_json() for f in metrics.user_fidelity.findings]
        out.caller_enforced = metrics.user_fidelity.enforced
        out.caller_judge_error = metrics.user_fidelity.judge_error
        out.caller_dropped = metrics.user_fidelity.dropped
    if metrics.judge_model:
        out.judge = {
            "judge_score": signals.judge_score,
            "judge_passed": signals.judge_passed,
            "judge_error": signals.judge_error,
        }
    out.gold_path = _left_gold_path(sdir)
    out.agent_db_hash = agent_hash(sdir)
    out.cut_off = cut_off_turns(sdir)
    out.refused = refused_calls(_load_optional(sdir / "tool_calls.json"))
    if "is_action_match" in out.failed_signals:
        meta = _load_optional(sdir / "scenario_config" / "metadata.json") or {}
        reference = meta.get("reference_answer") if isinstance(meta, dict) else None
        options = meta.get("match_options") or {} if isinstance(meta, dict) else {}
        missing = unmatched_reference_items(reference, out.actions, options)
        out.unmatched_reference = [
            f"reference item {i + 1}: {_action_text(r) if isinstance(r, dict) else repr(r)}"
            for i, r in missing
        ] or ["every reference item has a matching action: the pairing or the number of actions failed"]
    expected, actual = _load_optional(sdir / "expected_db.json"), _load_optional(sdir / "final_db.json")
    damaged = [
        n
        for n, v in (("expected_db.json", expected), ("final_db.json", actual))
        if v is None and (sdir / n).exists()
    ]
    if damaged:
        out.db_note = f"{' and '.join(damaged)} unreadable (damaged file?); no DB diff"
    elif expected is None:
        out.db_note = "no expected DB for this scenario (db_state_match not applicable)"
    elif actual is None:
        out.db_note = "no final DB: the session never reached the tools (see error / stop reason)"
    else:
        for line in db_diff(expected, actual, _rules(sdir)):
            if _is_record(line):
                (out.records_added if line.kind == "added" else out.records_removed).append(line)
            else:
                out.fields.append(line)
    return out


def _not_in_run(run_dir: Path, scenario: str, names: list[str]) -> str:
    """Why ``diff RUN SCENARIO`` has nothing to show: a scenario file of the run's spec folder
    (``run.json`` ``spec_files``: ``scenarios/SCENARIO.yaml``) this run did not select, or a name
    the run does not know (with a did-you-mean among its results)."""
    record = read_run_record(run_dir)
    if record is not None and f"scenarios/{scenario}.yaml" in record.spec_files:
        ran = len(record.scenarios)
        return (
            f"{scenario!r} is a scenario of the run's spec folder (scenarios/{scenario}.yaml) that "
            f"{run_dir} did not run (it ran {ran} scenario{'' if ran == 1 else 's'})"
        )
    return f"no scenario named {scenario!r} in {run_dir}{did_you_mean(scenario, names)}"


def diff_run(run_dir: Path, scenario: str | None = None) -> list[ScenarioDiff]:
    """Explain every failed (scenario, trial) of ``run_dir``, or every trial of ``scenario``.

    Raises UsageError when ``run_dir`` holds no scored results (none that read: say so, their
    files are noted by ``engine.results.unreadable``) or ``scenario`` is not in it.
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise UsageError(f"{run_dir}: no such run directory")
    with watching() as found:
        rows = scored_dirs(run_dir)
    if not rows and len(found):
        raise UsageError(f"{run_dir}: no readable results ({records_text(len(found))}, warned above)")
    if not rows and (unscored := unscored_results(run_dir)):
        raise UsageError(
            f"{run_dir}: no scored results: {len(unscored)} stored session"
            f"{'s have' if len(unscored) != 1 else ' has'} no metrics.json; {RESCORE_HINT.format(run_dir)}"
        )
    if not rows:
        raise UsageError(f"{run_dir}: no scored scenarios (not a run directory?)")
    if scenario is not None:
        chosen = [(d, m) for d, m in rows if m.scenario_name == scenario]
        if not chosen:  # a record id (eva: ``1.1.2``), as run --scenarios takes it
            chosen = [(d, m) for d, m in rows if m.record_id == scenario]
        if not chosen and (gone := [u for u in unscored_results(run_dir) if scenario in u.names(run_dir)]):
            raise UsageError(
                f"{gone[0].label()} ran but has no metrics.json (not scored); {RESCORE_HINT.format(run_dir)}"
            )
        if not chosen:
            names = sorted({m.scenario_name for _, m in rows} | {m.record_id for _, m in rows if m.record_id})
            raise UsageError(_not_in_run(run_dir, scenario, names))
    else:
        chosen = [
            (d, m)
            for d, m in rows
            if m.is_successful is False or m.is_error or "differs" in (agent_hash(d) or "")
        ]
    return [explain(d, m) for d, m in chosen]


def passing_off_gold(run_dir: Path) -> list[str]:
    """The passing results of ``run_dir`` whose agent left the gold path (:func:`_left_gold_path`:
    a replay-caller run), as ``NAME`` or ``NAME#TRIAL`` in a run with trials: a pass the verdict's
    signals allow (eva's gate is the final DB and the call's end) that a conformance check would
    not (a skipped read, a write that changed nothing)."""
    rows = scored_dirs(Path(run_dir))
    trials = any(m.trial != 1 for _, m in rows)
    found = []
    for sdir, metrics in rows:
        if metrics.is_successful is True and (_left_gold_path(sdir) or "").startswith("left the gold path"):
            found.append(metrics.scenario_name + (f"#{metrics.trial}" if trials else ""))
    return found


def agent_hash_lines(d: ScenarioDiff) -> list[str]:
    """The line ``the agent's own DB hash differs from the engine's: ...`` when the agent reported
    a DB hash of its own (an RTVI bot's) that differs from the engine's; else none. Printed by
    ``evalctl diff`` after the DB differences, and shown with them by ``evalctl report --html``."""
    if d.agent_db_hash and "differs" in d.agent_db_hash:
        return [f"the agent's own DB hash differs from the engine's: {d.agent_db_hash}"]
    return []


def agent_hash(sdir: Path) -> str | None:
    """The ``agent_db_hash`` of a result's ``final_scenario_db_hash.txt`` (the agent's own DB hash
    and whether it matches the engine's), None when there is none."""
    try:
        text = (sdir / "final_scenario_db_hash.txt").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(": ")
        if key == AGENT_HASH_KEY:
            return value.strip()[:300]
    return None


#: How a stored session without its ``metrics.json`` is scored (``{0}``: the run folder; README,
#: "Reading results and triage": ``--resume`` also scores what was stored but not scored).
RESCORE_HINT = "`evalctl rescore {0}` (or `evalctl run ... --resume {0}`) scores what was stored"


@dataclass(frozen=True)
class Unscored:
    """A result folder holding a stored session (``session.json``) but no ``metrics.json`` (deleted,
    or never written: the run was stopped while scoring it): not scored, so in no verdict."""

    scenario: str
    trial: int
    folder: Path
    trials: bool  # the run's results are per trial (``<name>/trial_<k>/``)

    def label(self) -> str:
        """``NAME`` or ``NAME trial K``."""
        return f"{self.scenario} trial {self.trial}" if self.trials else self.scenario

    def names(self, run_dir: Path) -> tuple[str, ...]:
        """The names ``diff RUN SCENARIO`` finds it by: the scenario's, and its record id (eva:
        ``1.1.3``) from the ``scenario_config/metadata.json`` the run stored, when it reads."""
        meta = _load_optional(Path(run_dir) / self.scenario / "scenario_config" / "metadata.json")
        record_id = meta.get("record_id") if isinstance(meta, dict) else None
        return (self.scenario, record_id) if isinstance(record_id, str) else (self.scenario,)

    def warning(self) -> str:
        """The one-line warning ``evalctl diff`` prints for it."""
        return f"warning: {self.folder}: {self.label()} has no metrics.json: not scored, left out"


def unscored_results(run_dir: Path) -> list[Unscored]:
    """Every result folder of ``run_dir`` with a ``session.json`` and no ``metrics.json`` (not even
    one that does not read: that one is unreadable), sorted by name then trial."""
    out = []
    for path in result_files(Path(run_dir), SESSION):
        folder = path.parent
        if os.path.lexists(folder / METRICS) or folder.name.startswith("."):
            continue
        nested = folder.parent != Path(run_dir)
        if nested and not folder.name.removeprefix("trial_").isdigit():
            continue
        name = folder.parent.name if nested else folder.name
        out.append(Unscored(name, int(folder.name.removeprefix("trial_")) if nested else 1, folder, nested))
    return sorted(out, key=lambda u: (u.scenario, u.trial))


def missing_results(run_dir: Path) -> int:
    """How many (scenario, trial) results the run planned (``run.json``: its scenarios times its
    trials) hold no ``metrics.json`` at all and no stored session either: the run was interrupted
    or killed before them (one that does not read is unreadable, not missing; a stored session
    without its metrics is :func:`unscored_results`'). 0 when ``run.json`` is missing or unreadable."""
    record = read_run_record(Path(run_dir))
    if record is None or not record.scenarios:
        return 0
    trials = max(1, record.trials or 1)
    done = {(m.scenario_name, m.trial) for _, m in scored_dirs(Path(run_dir))}
    return sum(
        1
        for n in record.scenarios
        for t in range(1, trials + 1)
        if (n, t) not in done
        and not any(
            os.path.lexists(scenario_dir(Path(run_dir), n, t, trials) / f) for f in (METRICS, SESSION)
        )
    )


def refused_calls(tool_calls: Any) -> list[dict[str, Any]]:
    """The agent's refused calls in a ``tool_calls.json`` list: those whose result has
    ``status: error``, as ``{name, arguments, turn, error}``; ``[]`` for anything else."""
    out: list[dict[str, Any]] = []
    for call in tool_calls if isinstance(tool_calls, list) else []:
        result = call.get("result") if isinstance(call, dict) else None
        if (
            not isinstance(result, dict)
            or result.get("status") != "error"
            or call.get("side", "agent") != "agent"
        ):
            continue
        kind, message = result.get("error_type"), result.get("message")
        error = ": ".join(one_line(x, 300) for x in (kind, message) if x) or "refused"
        out.append(
            {
                "name": call.get("name"),
                "arguments": call.get("arguments"),
                "turn": call.get("turn"),
                "error": error,
            }
        )
    return out


def _action_text(action: dict[str, Any]) -> str:
    name = action.get("action_type") or action.get("name") or "?"
    args = ", ".join(f"{k}={_value_text(v)}" for k, v in action.items() if k != "action_type")
    return f"{name}({args})"


def _value_text(value: Any) -> str:
    """An argument's value as every line of ``diff`` shows it: JSON (``"aisle"``, ``false``)."""
    return json.dumps(value, ensure_ascii=False, default=str)


def db_lines(d: ScenarioDiff) -> list[str]:
    """What ``evalctl diff`` says about the DB of one result, line by line: why there is no
    comparison, that the DBs match, or ``DB differences (n):`` then one indented line per changed
    field and record added or removed; then one line per failed ``db_state_assertion``. Lines
    are not yet made one-line safe (see :func:`render_text`)."""
    out: list[str] = []
    if d.db_note:
        out.append(f"DB: {d.db_note}")
    elif not (d.fields or d.records_added or d.records_removed):
        out.append("DB: final DB matches the expected DB")
    else:
        n = len(d.fields) + len(d.records_added) + len(d.records_removed)
        out.append(f"DB differences ({n}):")
        out.extend(f"  {line}" for line in d.fields)
        out.extend(f"  + record {line.path} (not expected)" for line in d.records_added)
        out.extend(f"  - record {line.path} (expected, missing)" for line in d.records_removed)
    for v in d.assertions:
        err = f" error: {v['error']}" if v.get("error") else ""
        out.append(
            f"assertion {v['func_name']}({v.get('arguments')}) [{v.get('side')}]: "
            f"expected {v.get('assert_value')!r}, got {v.get('actual')!r}{err}"
        )
    return out


def error_line(d: ScenarioDiff) -> str:
    """The no-verdict line of an ``error`` result: its cause, who failed and what helps, e.g.
    ``no verdict: user_simulator: caller fidelity: ... (the caller simulator, not the agent; fix or
    change the caller model ...)``."""
    return f"no verdict: {d.error_cause} ({origin(d.error_source)}, not the agent; {hint(d.error_source)})"


def caller_lines(d: ScenarioDiff) -> list[str]:
    """The caller-fidelity findings, one line each (none when the caller held), then what the
    judged rubric could not add (it failed, or dropped findings citing no caller turn)."""
    lines = []
    if d.caller_findings:
        note = "" if d.caller_enforced else " (a replay, noop or human caller: reported, not an error)"
        lines.append(f"caller fidelity ({len(d.caller_findings)} finding(s)){note}:")
        for f in d.caller_findings:
            lines.append(f"  caller turn {f['turn'] + 1}: {f['check']}: {f['detail']}: {f['text']!r}")
    if d.caller_judge_error:
        lines.append(f"caller rubric not answered (text checks only): {d.caller_judge_error}")
    if d.caller_dropped:
        lines.append(f"caller rubric: {d.caller_dropped} finding(s) dropped (cited no caller turn)")
    return lines


def render_text(diffs: list[ScenarioDiff], run_dir: Path) -> str:
    """Readable report: per scenario the failing signals, the DB difference, then the actions."""
    if not diffs:
        return f"{run_dir}: no failed scenarios.\n"
    out: list[str] = []
    for d in diffs:
        trial = f" (trial {d.trial})" if d.trial != 1 or any(x.trial != 1 for x in diffs) else ""
        verdict = {True: "PASS", False: "FAIL"}.get(d.is_successful, str(d.is_successful).upper())
        out.append(f"== {d.scenario}{trial}: {verdict}")
        if d.attribution:
            at = d.attribution.get("turn")
            where = f" (transcript event {at})" if at is not None else ""
            out.append(f"cause: {d.attribution['cause']}: {d.attribution['evidence']}{where}")
        if d.error_cause:
            out.append(error_line(d))
        why = ", ".join(d.failed_signals) or "none"
        stall = (
            f"  [stalled: {d.agent_turns} agent turn{'' if d.agent_turns == 1 else 's'}, "
            f"fewer than {d.min_agent_turns}]"
            if d.stalled
            else ""
        )
        # an error result has no verdict: what its signals say is not held against the agent
        label = "signals not met (not a verdict)" if d.error_cause else "failing signals"
        out.append(f"{label}: {why}{stall}")
        out.append(f"stop reason: {d.stop_reason}" + (f"; error: {d.error}" if d.error else ""))
        if d.gold_path and not d.error_cause:  # a session cut short by infrastructure left no path
            out.append(f"conversation: {d.gold_path}")
        if d.cut_off:
            out.append(f"cut-off replies ({len(d.cut_off)}; raise max_tokens in --agent-args / --user-args):")
            out.extend(f"  {line}" for line in d.cut_off)
        out.extend(caller_lines(d))
        out.extend(db_lines(d))
        out.extend(agent_hash_lines(d))
        if d.judge:
            out.append(
                f"judge: score {d.judge.get('judge_score')}, passed {d.judge.get('judge_passed')}"
                + (f", error {d.judge['judge_error']}" if d.judge.get("judge_error") else "")
            )
        if d.unmatched_reference:
            out.append("is_action_match: no action matches")
            out.extend(f"  {line}" for line in d.unmatched_reference)
        out.append(f"actions ({len(d.actions)}):" if d.actions else "actions: none")
        out.extend(f"  {i}. {_action_text(a)}" for i, a in enumerate(d.actions, 1))
        if d.refused:  # what the agent tried that the tools refused, and why
            out.append(f"refused tool calls ({len(d.refused)}):")
            out.extend(
                f"  {i}. {r['name']}({_args_text(r['arguments'])}) -> {r['error']}"
                for i, r in enumerate(d.refused, 1)
            )
        out.append("")
    # argument values and errors come from the sides: each entry stays one visible line
    return "\n".join(one_line(line, None) for line in out)


def _line_json(line: DiffLine) -> dict[str, Any]:
    body = {k: v for k, v in asdict(line).items() if k != "final_path" or v is not None}
    return {**body, "text": str(line)}
