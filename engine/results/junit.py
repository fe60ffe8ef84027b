"""A run as JUnit XML, for CI systems (``evalctl run ... --junit FILE``, ``evalctl report RUN --junit``).

The layout is the one pytest writes (``--junitxml``, family ``xunit2``) and JUnit consumers read:
one ``<testsuites>`` holding one ``<testsuite name=SPEC>`` with one ``<testcase>`` per (scenario,
trial): ``classname`` is the domain, ``name`` the scenario (with ``[trial N]`` when the run has
trials), ``time`` the session's wall time in seconds. A result that is not successful has a
``<failure>`` whose ``message`` is the first cause ``evalctl diff`` gives (:func:`first_cause`) and
whose text is the whole diff; a result with the verdict ``error`` has an ``<error>`` (infrastructure,
not the agent); one not applicable (``N/A``, e.g. a judge-only domain run without a judge) and each
planned result that is missing is ``<skipped>``. The counts on the suite are those of its cases.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from engine.core.records.error_words import origin
from engine.core.records.metrics import MetricsRecord
from engine.results.diff import ScenarioDiff, db_lines, explain, render_text
from engine.results.provenance import read_run_record
from engine.results.scoring_stage import scored_dirs
from engine.results.session_files import scenario_dir
from engine.util.errors import OutputError, UsageError
from engine.util.untrusted import one_line

#: The longest failure message written (the whole explanation is the element's text).
MESSAGE_CHARS = 300


@dataclass(frozen=True)
class JUnitCounts:
    """What :func:`write_junit` wrote: test cases, and how many failed, errored and were skipped."""

    path: Path
    tests: int
    failures: int
    errors: int
    skipped: int


def first_cause(d: ScenarioDiff) -> str:
    """The first reason ``evalctl diff`` gives for a result that is not successful, one line of at
    most :data:`MESSAGE_CHARS` characters: the cause of an ``error`` verdict (who failed, then its
    message), else the failing signals (and ``stalled``) then the first DB difference, failed
    assertion, unmatched reference item, or the stop reason with the session's error."""
    if d.error_cause:
        text = f"no verdict, {origin(d.error_source)} failed: {d.error_cause}"
    else:
        parts = ", ".join(d.failed_signals) or "not successful"
        if d.stalled:
            turns = f"{d.agent_turns} agent turn{'' if d.agent_turns == 1 else 's'}"
            parts += f" (stalled: {turns}, fewer than {d.min_agent_turns})"
        detail = [line.strip() for line in db_lines(d) if not line.startswith(("DB: ", "DB differences"))]
        detail += d.unmatched_reference
        if d.error:
            detail.append(f"stop {d.stop_reason}: {d.error}")
        elif d.stop_reason not in (None, "exit", "transfer"):
            detail.append(f"stop {d.stop_reason}")
        text = f"{parts}: {detail[0]}" if detail else parts
    text = one_line(text, None)
    return text if len(text) <= MESSAGE_CHARS else text[: MESSAGE_CHARS - 3] + "..."


def _case_name(m: MetricsRecord, trials: int) -> str:
    return m.scenario_name + (f" [trial {m.trial}]" if trials > 1 else "")


def write_junit(run_dir: Path, out: Path) -> JUnitCounts:
    """Write the JUnit XML of the scored results of ``run_dir`` (and its missing ones, skipped) to
    ``out`` (UTF-8). Returns the counts written. Raises UsageError when ``run_dir`` holds no scored
    result, OutputError (one line, exit 2) when ``out`` cannot be written."""
    run_dir = Path(run_dir)
    rows = scored_dirs(run_dir) if run_dir.is_dir() else []
    if not rows:
        raise UsageError(f"{run_dir}: no scored scenarios to write as JUnit (not a run directory?)")
    record = read_run_record(run_dir)
    trials = max([1, *(m.trial for _, m in rows), *([record.trials or 1] if record else [])])
    spec = Path(record.spec_dir).name if record is not None and record.spec_dir else run_dir.name
    suites = ET.Element("testsuites")
    suite = ET.SubElement(suites, "testsuite", name=spec)
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    total_time = 0.0
    done: set[tuple[str, int]] = set()
    for sdir, m in sorted(rows, key=lambda r: (r[1].scenario_name, r[1].trial)):
        done.add((m.scenario_name, m.trial))
        case = ET.SubElement(
            suite,
            "testcase",
            classname=m.domain,
            name=_case_name(m, trials),
            time=f"{m.duration_s:.3f}",
        )
        total_time += m.duration_s
        counts["tests"] += 1
        if m.is_successful is True:
            continue
        if m.is_error or m.is_successful is False:
            d = explain(sdir, m)
            tag = "error" if m.is_error else "failure"
            kind = str(m.error_cause.source) if m.is_error and m.error_cause else "not successful"
            el = ET.SubElement(case, tag, message=first_cause(d), type=kind)
            el.text = render_text([d], run_dir)
            counts["errors" if m.is_error else "failures"] += 1
        else:  # N/A: nothing applicable was measured
            ET.SubElement(case, "skipped", message=f"verdict {m.is_successful}: no gating signal applied")
            counts["skipped"] += 1
    if record is not None:
        for name in record.scenarios or ():
            for t in range(1, trials + 1):
                if (name, t) in done or scenario_dir(run_dir, name, t, trials).joinpath(
                    "metrics.json"
                ).exists():
                    continue
                case = ET.SubElement(
                    suite, "testcase", classname=spec, name=name + (f" [trial {t}]" if trials > 1 else "")
                )
                case.set("time", "0.000")
                ET.SubElement(case, "skipped", message="missing: never run (the run did not finish)")
                counts["tests"] += 1
                counts["skipped"] += 1
    for el in (suites, suite):
        for key, value in counts.items():
            el.set(key, str(value))
        el.set("time", f"{total_time:.3f}")
    ET.indent(suites)
    out = Path(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(ET.tostring(suites, encoding="utf-8", xml_declaration=True) + b"\n")
    except OSError as err:
        raise OutputError(f"cannot write {out}: {err.strerror or err}") from None
    return JUnitCounts(out, **counts)
