"""``evalctl compare RUN_A RUN_B``: what changed from run A to run B.

Reads only the two run directories: every complete result (``metrics.json``, as
``engine.results.scoring_stage.scored_dirs`` finds them), the summaries (``summary.json``) and the provenance
(``run.json``). Results are paired by (scenario, trial); a pair whose composite verdict went from
True to False flipped pass→fail, False to True fail→pass; a verdict to or from ``"N/A"`` or
``"error"`` is listed as another change. Two runs are *comparable* when their spec files,
templates and data-root files hash alike (``run.json``); every file that differs is listed, and
other differences (evalctl version, git commit, models, trials, scenario selection) are noted
without making the runs incomparable. A voice run (``--voice``: ``run.json`` ``settings.voice``, or
a result that was an audio session, ``metrics.json`` ``voice``) compared with a text run gets one
warning: the agent was spoken to in one run and written to in the other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.core.records.metrics import MetricsRecord
from engine.core.records.run import RunRecord
from engine.core.records.summary import SignalRate, StrictTally, SummaryRecord, Tally
from engine.results.costs import PriceTable, RunCost, money, run_costs
from engine.results.paired import (
    NoiseSplit,
    PairedRate,
    Results,
    noise_split,
    paired_rates,
    set_differences,
)
from engine.results.provenance import read_run_record, resume_command
from engine.results.scoring_stage import load_summary, scored_dirs
from engine.results.unreadable import records_text, watching
from engine.results.voice_compare import VoiceChange, voice_changes
from engine.scoring.stats import ci_text
from engine.scoring.summary import missing_text
from engine.session.settings import FLAGS
from engine.util.errors import UsageError
from engine.util.untrusted import one_line

#: run.json's hash tables that must agree for two runs to be comparable, with their names.
HASHED = (("spec_files", "spec"), ("templates", "template"), ("data_root_files", "data"))


@dataclass(frozen=True)
class Change:
    """One (scenario, trial) whose verdict differs: ``before`` / ``after`` True, False or ``"N/A"``,
    with the gating signals that failed in each run (and ``stalled``: the min-agent-turns rule)."""

    scenario: str
    trial: int
    before: bool | str
    after: bool | str
    failed_before: tuple[str, ...]
    failed_after: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "trial": self.trial,
            "before": self.before,
            "after": self.after,
            "failed_before": list(self.failed_before),
            "failed_after": list(self.failed_after),
        }


@dataclass(frozen=True)
class RateChange:
    """A rate in both runs (None where the run lacks it) and ``delta`` = after - before (None when
    either rate is None)."""

    name: str
    before: SignalRate | Tally | StrictTally | None
    after: SignalRate | Tally | StrictTally | None

    @property
    def delta(self) -> float | None:
        a = self.before.rate if self.before else None
        b = self.after.rate if self.after else None
        return None if a is None or b is None else b - a

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "before": None if self.before is None else self.before.to_json(),
            "after": None if self.after is None else self.after.to_json(),
            "delta": self.delta,
        }


@dataclass(frozen=True)
class FileDifference:
    """A hashed input that differs: ``kind`` spec / template / data, its ``path`` and ``change``
    (``changed``, ``only in A``, ``only in B``)."""

    kind: str
    path: str
    change: str

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind, "path": self.path, "change": self.change}


@dataclass(frozen=True)
class Comparison:
    """Run A against run B (see the module docstring)."""

    run_a: str
    run_b: str
    comparable: bool
    differences: tuple[FileDifference, ...]
    notes: tuple[str, ...]
    #: Differences that make the rates hard to read side by side (a voice run against a text run).
    warnings: tuple[str, ...]
    headline: tuple[RateChange, ...]
    signals: tuple[RateChange, ...]
    pass_to_fail: tuple[Change, ...]
    fail_to_pass: tuple[Change, ...]
    other_changes: tuple[Change, ...]
    unchanged_pass: int
    unchanged_fail: int
    only_in_a: tuple[str, ...]
    only_in_b: tuple[str, ...]
    cost_a: RunCost
    cost_b: RunCost
    #: Record files of each run that could not be read (warned of; their results left out).
    unreadable_a: int = 0
    unreadable_b: int = 0
    #: Per rate (overall, task, each signal) the paired difference, its interval, test and verdict.
    paired: tuple[PairedRate, ...] = ()
    #: With trials: the changed scenarios split by their own noise (``engine.results.paired``).
    noise: NoiseSplit | None = None
    #: Voice runs: latency, time to first audio, WER and entities heard, paired (``voice_compare``).
    voice: tuple[VoiceChange, ...] = ()
    #: Each voice run's caller condition (:func:`caller_condition`; None for a text run).
    condition_a: str | None = None
    condition_b: str | None = None
    #: Each run's interruption (``summary.json`` ``interrupted``) and its missing planned results.
    interrupted_a: bool = False
    interrupted_b: bool = False
    missing_a: int = 0
    missing_b: int = 0

    def to_json(self) -> dict[str, Any]:
        body = {
            "run_a": self.run_a,
            "run_b": self.run_b,
            "comparable": self.comparable,
            "unreadable_a": self.unreadable_a,
            "unreadable_b": self.unreadable_b,
            "interrupted": {"a": self.interrupted_a, "b": self.interrupted_b},
            "missing": {"a": self.missing_a, "b": self.missing_b},
            "differences": [d.to_json() for d in self.differences],
            "notes": list(self.notes),
            "warnings": list(self.warnings),
            "headline": [r.to_json() for r in self.headline],
            "signals": [r.to_json() for r in self.signals],
            "pass_to_fail": [c.to_json() for c in self.pass_to_fail],
            "fail_to_pass": [c.to_json() for c in self.fail_to_pass],
            "other_changes": [c.to_json() for c in self.other_changes],
            "unchanged_pass": self.unchanged_pass,
            "unchanged_fail": self.unchanged_fail,
            "only_in_a": list(self.only_in_a),
            "only_in_b": list(self.only_in_b),
            "usage_a": self.cost_a.to_json(),
            "usage_b": self.cost_b.to_json(),
            "paired": [p.to_json() for p in self.paired],
            "changed_by_noise": None if self.noise is None else self.noise.to_json(),
        }
        if self.voice:
            body["voice"] = [v.to_json() for v in self.voice]
        if self.condition_a is not None or self.condition_b is not None:
            body["conditions"] = {"a": self.condition_a, "b": self.condition_b}
        return body


def _results(run_dir: Path) -> tuple[dict[tuple[str, int], MetricsRecord], int]:
    """The run's results by (scenario, trial), and how many of its records did not read."""
    if not Path(run_dir).is_dir():
        raise UsageError(f"{run_dir}: no such run directory")
    with watching() as found:
        rows = {(m.scenario_name, m.trial): m for _, m in scored_dirs(Path(run_dir))}
    if not rows and len(found):
        raise UsageError(f"{run_dir}: no readable results ({records_text(len(found))}, warned above)")
    if not rows:
        raise UsageError(_no_results(Path(run_dir)))
    return rows, len(found)


def _no_results(run_dir: Path) -> str:
    """Why ``run_dir`` has nothing to compare: a run interrupted before any session finished
    (``summary.json`` or the last ``run.json`` invocation says ``interrupted``), a run with no
    scored result, or a folder that is no run (no ``run.json``)."""
    if not (run_dir / "run.json").is_file():
        return f"{run_dir}: no scored scenarios (not a run directory?)"
    with watching():  # an unreadable record is the run's own trouble: the reason below still holds
        record = read_run_record(run_dir)
        try:
            interrupted = load_summary(run_dir).interrupted
        except UsageError:
            interrupted = False
    if record is not None and record.invocations and record.invocations[-1].interrupted:
        interrupted = True
    if interrupted:
        return (
            f"{run_dir}: the run has no scored results: it was interrupted before any session "
            f"finished (`{resume_command(run_dir)}` runs them)"
        )
    return f"{run_dir}: the run has no scored results"


def _file_differences(a: RunRecord, b: RunRecord) -> list[FileDifference]:
    out: list[FileDifference] = []
    for key, kind in HASHED:
        ha: Mapping[str, str] = getattr(a, key)
        hb: Mapping[str, str] = getattr(b, key)
        for path in sorted(ha.keys() | hb.keys()):
            if path not in hb:
                out.append(FileDifference(kind, path, "only in A"))
            elif path not in ha:
                out.append(FileDifference(kind, path, "only in B"))
            elif ha[path] != hb[path]:
                out.append(FileDifference(kind, path, "changed"))
    return out


def _models(run: RunRecord) -> str:
    named = sorted((role, model) for role, model in (run.models or {}).items() if model is not None)
    return ", ".join(f"{role}: {model}" for role, model in named) or "none"


def _notes(a: RunRecord, b: RunRecord, sa: SummaryRecord, sb: SummaryRecord) -> list[str]:
    notes = []
    pairs: list[tuple[str, Any, Any]] = [
        ("evalctl version", a.evalctl_version, b.evalctl_version),
        ("git commit", a.git.commit if a.git else None, b.git.commit if b.git else None),
        ("agent", a.settings.get("agent"), b.settings.get("agent")),
        ("user simulator", a.settings.get("user"), b.settings.get("user")),
        ("models", _models(a), _models(b)),
        ("trials", sa.trials, sb.trials),
    ]
    changed = [c for c in _setting_changes(a.settings, b.settings) if in_effect(c[0], a.settings, b.settings)]
    pairs += [(FLAGS.get(key, key), _unset(va), _unset(vb)) for key, va, vb in changed]
    for what, va, vb in pairs:
        if va != vb:
            notes.append(one_line(f"{what}: A {va}, B {vb}", 400))
    for which, s in (("A", sa), ("B", sb)):
        if s.missing and not s.interrupted:  # an interrupted run's is a warning (_interrupted)
            notes.append(f"run {which} is incomplete: {missing_text(len(s.missing))}")
    return notes


def _interrupted(sa: SummaryRecord, sb: SummaryRecord) -> list[str]:
    """A warning for each run that was interrupted (Ctrl-C, SIGTERM: ``summary.json``
    ``interrupted``): how many of its planned results are missing, and that the comparison is of
    the results it has. Before, compare said nothing of it."""
    out = []
    for which, s in (("A", sa), ("B", sb)):
        if s.interrupted:
            planned = s.results + len(s.missing)
            out.append(
                f"run {which} was interrupted: {missing_text(len(s.missing))} of its {planned} planned; "
                "the comparison covers only the results it has"
            )
    return out


#: Settings in run.json said elsewhere (models, trials, the voice warning) or that cannot change a
#: verdict (where the key is read from, the shard of a merged run).
_SAID_ELSEWHERE = frozenset(
    {"agent", "user", "trials", "voice", "api_key_env", "shard", "judge_api_key_env", "user_api_key_env"}
    | {"perturb", "caller_voices"}  # the runs' caller conditions, on their A / B lines
)


def in_effect(key: str, *settings: Mapping[str, Any]) -> bool:
    """Whether the run setting ``key`` (``scoring.judge_base_url``, ``max_turns``...) could change a
    verdict in every one of the runs whose ``run.json`` settings are given: a judge setting other
    than ``scoring.judge_model`` only where a judge was configured (``scoring.judge_model`` set;
    two runs without a judge differ in no judge setting, and a judge in one run only is said by
    ``--judge-model`` itself); every other setting always."""
    if not key.startswith("scoring.judge_") or key == "scoring.judge_model":
        return True
    return all(isinstance(s.get("scoring"), Mapping) and s["scoring"].get("judge_model") for s in settings)


def _unset(value: Any) -> Any:
    """A setting as a note shows it: ``not set`` for one left unset (not ``None``)."""
    return "not set" if value is None else value


def _setting_changes(
    a: Mapping[str, Any], b: Mapping[str, Any], prefix: str = ""
) -> list[tuple[str, Any, Any]]:
    """``(key, value in A, value in B)`` of every run setting that differs (``scoring.`` ones by their
    own key: ``scoring.min_agent_turns``), e.g. ``--max-turns``, a turn timeout, a judge threshold."""
    out: list[tuple[str, Any, Any]] = []
    for key in sorted(set(a) | set(b)):
        if key in _SAID_ELSEWHERE:
            continue
        va, vb = a.get(key), b.get(key)
        va, vb = (None if v == {} else v for v in (va, vb))  # no args given = args not recorded
        if isinstance(va, Mapping) and isinstance(vb, Mapping):
            out += _setting_changes(va, vb, f"{prefix}{key}.")
        elif va != vb:
            out.append((f"{prefix}{key}", va, vb))
    return out


def _is_voice(record: RunRecord | None, results: Mapping[tuple[str, int], MetricsRecord]) -> bool:
    """True for a voice run: its ``run.json`` settings say ``voice``, or one of its results was an
    audio session (a run.json that is missing or predates the setting)."""
    said = record.settings.get("voice") if record is not None else None  # free-form settings
    return said is True or any(m.voice_run for m in results.values())


def caller_condition(record: RunRecord | None, voice: bool) -> str | None:
    """A voice run's caller condition from its ``run.json`` settings: its ``--perturb`` (``clean``
    when unset) and its ``--caller-voice`` list when given, e.g. ``telephone,snr=5; voices
    en-us+f3,en-gb``. None for a text run. A scenario's own ``caller:`` block is the spec's (the
    same in both runs when the specs are)."""
    if not voice:
        return None
    settings = record.settings if record is not None else {}
    text = str(settings.get("perturb") or "clean")
    voices = settings.get("caller_voices") or []
    if isinstance(voices, list) and voices:
        text += f"; voices {','.join(map(str, voices))}"
    return text


def _voice_warning(voice_a: bool, voice_b: bool) -> list[str]:
    if voice_a == voice_b:
        return []
    which = ("A", "B") if voice_a else ("B", "A")
    return [
        f"run {which[0]} is a voice run (--voice) and run {which[1]} a text run: the agent heard "
        "speech in one and read text in the other, so a rate change may come from that alone"
    ]


def _verdict_changes(
    ra: Mapping[tuple[str, int], MetricsRecord], rb: Mapping[tuple[str, int], MetricsRecord]
) -> tuple[list[Change], list[Change], list[Change], int, int]:
    down: list[Change] = []
    up: list[Change] = []
    other: list[Change] = []
    same_pass = same_fail = 0
    for key in sorted(ra.keys() & rb.keys()):
        a, b = ra[key], rb[key]
        before, after = a.is_successful, b.is_successful
        if before == after:
            same_pass += before is True
            same_fail += before is False
            continue
        change = Change(*key, before, after, _why_failed(a), _why_failed(b))
        if before is True and after is False:
            down.append(change)
        elif before is False and after is True:
            up.append(change)
        else:
            other.append(change)
    return down, up, other, same_pass, same_fail


def _why_failed(m: MetricsRecord) -> tuple[str, ...]:
    """The gating signals that failed in ``m``, and ``stalled`` when the min-agent-turns rule
    forced the verdict (its signals may all have passed: a session the agent barely took part in)."""
    return (*m.success_breakdown.failed, *(("stalled",) if m.stalled else ()))


def _no_shared(ra: Results, rb: Results) -> list[str]:
    """A warning when the runs have no scenario in common (two domains, two selections): their
    rates are of different scenarios, and no verdict can be compared."""
    if not ra or not rb or {n for n, _ in ra} & {n for n, _ in rb}:
        return []
    return [
        "the runs share no scenario (another domain or selection?): no verdict is compared, and "
        "each rate below is of its own run's scenarios, so the deltas say nothing of a change"
    ]


def _other_selection(ra: Results, rb: Results) -> list[str]:
    """A warning when the runs share some scenarios but not all (two selections: 50 scenarios
    against 6): each headline rate is over its own run's scenarios, and only the shared ones are
    paired."""
    na, nb = {n for n, _ in ra}, {n for n, _ in rb}
    shared = na & nb
    if not shared or na == nb:
        return []

    def count(n: int) -> str:
        return f"{n} scenario{'' if n == 1 else 's'}"

    return [
        f"the runs ran different selections: A has {count(len(na))}, B {count(len(nb))}, "
        f"{len(shared)} shared: each rate below is over its own run's results (the deltas are not "
        f"of the same scenarios); the paired comparison (the verdict changes, whether a difference "
        f"is real) is over the {count(len(shared))} shared only"
    ]


def _names(keys: set[tuple[str, int]], trials: int) -> tuple[str, ...]:
    return tuple(n if trials == 1 else f"{n}#trial_{t}" for n, t in sorted(keys))


def compare_runs(run_a: Path, run_b: Path, prices: PriceTable | None = None) -> Comparison:
    """Compare run B with run A. Raises UsageError when either is not a finished run directory
    (no (readable) scored results or no readable ``summary.json``). A record of either run that
    does not read is noted (``engine.results.unreadable``), counted and named in the notes."""
    (ra, bad_a), (rb, bad_b) = _results(run_a), _results(run_b)
    sa, sb = load_summary(run_a), load_summary(run_b)
    with watching() as found:
        pa, pb = read_run_record(run_a), read_run_record(run_b)
    bad_a += found.under(Path(run_a))
    bad_b += found.under(Path(run_b))
    if pa is None or pb is None:
        missing = " and ".join(str(r) for r, p in ((run_a, pa), (run_b, pb)) if p is None)
        differences: list[FileDifference] = []
        notes = [f"no readable run.json in {missing}: inputs unknown"]
        comparable = False
    else:
        differences = _file_differences(pa, pb)
        notes = _notes(pa, pb, sa, sb)
        comparable = not differences
    down, up, other, same_pass, same_fail = _verdict_changes(ra, rb)
    if ra.keys() != rb.keys() and not _other_selection(ra, rb):  # the same scenarios, other trials
        notes.append(
            f"the runs hold different results ({len(ra.keys() - rb.keys())} only in A, "
            f"{len(rb.keys() - ra.keys())} only in B): each rate is over its own run's results"
        )
    for which, bad in (("A", bad_a), ("B", bad_b)):
        if bad:
            notes.append(
                f"run {which} has {records_text(bad)} (warned above): left out of the verdicts compared; "
                "the rates are its summary.json's"
            )
    headline = (
        RateChange("overall", sa.overall, sb.overall),
        RateChange("strict (errors count as failures)", sa.strict_tally, sb.strict_tally),
        RateChange("task (excl. clean_exit)", sa.task, sb.task),
    )
    if sa.errors != sb.errors:
        notes.append(
            f"the runs left out different numbers of error results (A {sa.errors}, B {sb.errors}): "
            "the overall rates are over different results; the strict rates count them as failures"
        )
    names = list(dict.fromkeys([*sa.signals, *sb.signals]))
    signals = tuple(RateChange(n, sa.signals.get(n), sb.signals.get(n)) for n in names)
    trials = max(sa.trials, sb.trials)
    voice_a, voice_b = _is_voice(pa, ra), _is_voice(pb, rb)
    warnings = [
        *_interrupted(sa, sb),
        *_no_shared(ra, rb),
        *_other_selection(ra, rb),
        *_voice_warning(voice_a, voice_b),
        *set_differences(ra, rb, trials),
    ]
    return Comparison(
        run_a=str(run_a),
        run_b=str(run_b),
        comparable=comparable,
        differences=tuple(differences),
        notes=tuple(notes),
        warnings=tuple(warnings),
        headline=headline,
        signals=signals,
        pass_to_fail=tuple(down),
        fail_to_pass=tuple(up),
        other_changes=tuple(other),
        unchanged_pass=same_pass,
        unchanged_fail=same_fail,
        only_in_a=_names(ra.keys() - rb.keys(), trials),
        only_in_b=_names(rb.keys() - ra.keys(), trials),
        cost_a=run_costs(list(ra.values()), prices),
        cost_b=run_costs(list(rb.values()), prices),
        unreadable_a=bad_a,
        unreadable_b=bad_b,
        paired=paired_rates(ra, rb, names),
        noise=noise_split(ra, rb),
        voice=voice_changes(ra, rb),
        condition_a=caller_condition(pa, voice_a),
        condition_b=caller_condition(pb, voice_b),
        interrupted_a=sa.interrupted,
        interrupted_b=sb.interrupted,
        missing_a=len(sa.missing),
        missing_b=len(sb.missing),
    )


def _pct(rate: float | None) -> str:
    return "n/a" if rate is None else f"{100 * rate:.1f}%"


def rate_text(r: SignalRate | Tally | StrictTally | None) -> str:
    """``72.0% (36/50 scenarios) [95% CI 58.3-82.5%]``, with the ``error`` results beside it: the
    composite rates always (``72.0% (36/50; 0 errors)``, ``75.0% (36/48; 2 errors left out)``; the
    strict rate counts them: ``(36/50; 2 errors)``), a signal's when it left some out; ``-`` when the run
    lacks the rate."""
    if r is None:
        return "-"
    unit = f" {r.unit}" if isinstance(r, SignalRate) else ""
    errors = r.errors_left_out if isinstance(r, SignalRate) else r.errors
    plural = "" if errors == 1 else "s"
    if isinstance(r, StrictTally) or (isinstance(r, Tally) and not errors):
        out = f"; {errors} error{plural}"
    else:
        out = f"; {errors} error{plural} left out" if errors else ""
    return f"{_pct(r.rate)} ({r.passed}/{r.total}{unit}{out}){ci_text(getattr(r, 'ci', None))}"


def delta_text(delta: float | None) -> str:
    """``+4.0 pt`` / ``-2.5 pt`` / ``0.0 pt``; ``n/a`` without both rates."""
    return "n/a" if delta is None else f"{100 * delta:+.1f} pt"


def _label(c: Change, trials: bool) -> str:
    return f"{c.scenario}{f' trial {c.trial}' if trials else ''}"


def _verdict(v: bool | str) -> str:
    if isinstance(v, bool):
        return "pass" if v else "fail"
    return str(v)


def _by_scenario(names: tuple[str, ...]) -> list[str]:
    """Result names (``NAME`` or ``NAME#trial_K``) as one entry a scenario, in their order:
    ``NAME``, ``NAME (trial 2)`` or ``NAME (3 trials)``."""
    trials: dict[str, list[str]] = {}
    for name in names:
        scenario, _, trial = name.partition("#trial_")
        trials.setdefault(scenario, []).append(trial)
    out = []
    for scenario, ks in trials.items():
        ks = [k for k in ks if k]
        if not ks:
            out.append(scenario)
        elif len(ks) == 1:
            out.append(f"{scenario} (trial {ks[0]})")
        else:
            out.append(f"{scenario} ({len(ks)} trials)")
    return out


#: Input files and result names the text lists before "and N more" (the JSON lists them all).
LISTED = 10


def render_text(c: Comparison) -> str:
    """The comparison as readable text, one item per line; the differing input files and the
    results only in one run are listed up to :data:`LISTED` each."""
    trials = any(ch.trial != 1 for ch in (*c.pass_to_fail, *c.fail_to_pass, *c.other_changes))
    out = [
        f"A: {c.run_a}" + (f" (caller: {c.condition_a})" if c.condition_a else ""),
        f"B: {c.run_b}" + (f" (caller: {c.condition_b})" if c.condition_b else ""),
    ]
    if c.comparable:
        out.append("comparable: yes (same spec, template and data hashes)")
    else:
        out.append(
            f"comparable: NO ({len(c.differences)} input files differ)" if c.differences else "comparable: NO"
        )
        out.extend(f"  {d.kind} {d.path}: {d.change}" for d in c.differences[:LISTED])
        if len(c.differences) > LISTED:
            out.append(f"  and {len(c.differences) - LISTED} more (--json lists them all)")
    out.extend(f"WARNING: {w}" for w in c.warnings)
    out.extend(f"note: {n}" for n in c.notes)
    out.append("rates (A -> B):")
    for r in (*c.headline, *c.signals):
        out.append(f"  {r.name}: {rate_text(r.before)} -> {rate_text(r.after)}  {delta_text(r.delta)}")
    if any(p.scenarios for p in c.paired):
        out.append("is the difference real? (paired over the scenarios with a verdict in both runs)")
        out.extend(f"  {p.name}: {p.text()}" for p in c.paired if p.scenarios)
    if c.voice:
        label = (
            f" ({c.condition_a} -> {c.condition_b})"
            if c.condition_a and c.condition_a != c.condition_b
            else ""
        )
        out.append(f"voice{label} (paired over the scenarios both runs measured):")
        out.extend(f"  {v.text()}" for v in c.voice)
    if c.noise is not None:
        out.append(
            f"changed scenarios: {len(c.noise.consistent)} consistent across trials, "
            f"{len(c.noise.within_noise)} within their own noise (verdicts disagree across trials)"
        )
        for what, names in (("consistent", c.noise.consistent), ("within noise", c.noise.within_noise)):
            if names:
                out.append(f"  {what}: {', '.join(names)}")
    for title, changes in (("pass -> fail", c.pass_to_fail), ("fail -> pass", c.fail_to_pass)):
        out.append(f"{title} ({len(changes)}):" if changes else f"{title}: none")
        for ch in changes:
            failed = ch.failed_after if ch.after is False else ch.failed_before
            out.append(f"  {_label(ch, trials)}" + (f"  [{', '.join(failed)}]" if failed else ""))
    if c.other_changes:
        out.append(f"other verdict changes ({len(c.other_changes)}):")
        out.extend(
            f"  {_label(ch, trials)}: {_verdict(ch.before)} -> {_verdict(ch.after)}" for ch in c.other_changes
        )
    out.append(f"unchanged: {c.unchanged_pass} passing, {c.unchanged_fail} failing")
    for which, names in (("A", c.only_in_a), ("B", c.only_in_b)):
        if names:
            shown = _by_scenario(names)
            more = f" and {len(shown) - LISTED} more (--json lists them all)" if len(shown) > LISTED else ""
            out.append(f"only in {which} ({len(names)}): {', '.join(shown[:LISTED])}{more}")
    if c.cost_a.roles or c.cost_b.roles:
        out.append("tokens (A -> B):")
        for role in dict.fromkeys([*c.cost_a.roles, *c.cost_b.roles]):
            parts = []
            for cost in (c.cost_a, c.cost_b):
                rc = cost.roles.get(role)
                if rc is None:
                    parts.append("-")
                    continue
                priced = f", {money(rc.cost)}" if cost.priced else ""
                parts.append(f"{rc.tokens_text()}{priced}")
            out.append(f"  {role}: {parts[0]} -> {parts[1]}")
        if c.cost_a.priced:
            out.append(f"  total cost: {money(c.cost_a.cost)} -> {money(c.cost_b.cost)}")
    # names and messages come from the runs: each entry stays one visible line
    return "\n".join(one_line(line, None) for line in out) + "\n"
