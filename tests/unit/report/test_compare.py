"""`evalctl compare RUN_A RUN_B` (issue #16 §2): flipped verdicts both ways, per-signal rate
changes, and whether the runs are comparable — on real runs of the mock shop's sample spec
(tests/mock_domain/sample_run.py)."""

from __future__ import annotations

import dataclasses
import html
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from cli import main
from engine.results.compare import LISTED, compare_runs, render_text
from engine.run.runner import run_cli
from tests.conftest import MOCK_DATA_ROOT
from tests.mock_domain.sample_run import ALTERED, MODELLED, REPLAYED
from tests.runtime_helpers import run_options
from tests.stats_helpers import newcombe_by_hand

FAILING = sorted([*ALTERED, *MODELLED])


ALL = (*REPLAYED, *MODELLED)


def _replay_run(out: Path, spec_dir: Path, scenarios=ALL, **options: Any) -> Path:
    report = run_cli(
        run_options(
            spec_dir=spec_dir,
            data_root=MOCK_DATA_ROOT,
            scenarios=scenarios,
            output_dir=out,
            concurrency=4,
            quiet=True,
            **options,
        )
    )
    assert not report.scoring_errors
    return out


@pytest.fixture(scope="module")
def clean_run(mock_sample_spec: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample run's six scenarios with the gold replayed as is: every one passes."""
    return _replay_run(tmp_path_factory.mktemp("clean") / "run", mock_sample_spec)


def test_flips_both_ways_and_rate_changes(clean_run: Path, mock_sample_run_dir: Path) -> None:
    worse = compare_runs(clean_run, mock_sample_run_dir)
    assert worse.comparable, worse.differences
    assert [c.scenario for c in worse.pass_to_fail] == FAILING
    # each fails the gates of its own spec: the cancel caller's are its assertions and action list
    assert {c.scenario: c.failed_after for c in worse.pass_to_fail} == {
        "mock__cancel_by_model": ("db_state_match",),
        "mock__cancel_order": ("db_state_assertion", "is_action_match"),
        "mock__late_by_model": ("db_state_match",),
        "mock__late_delivery_credit": ("db_state_match", "is_action_match"),
    }
    n, failing = len(ALL), len(FAILING)
    assert worse.fail_to_pass == () and (worse.unchanged_pass, worse.unchanged_fail) == (n - failing, 0)
    db = next(r for r in worse.signals if r.name == "db_state_match")
    # every result's final DB is compared (O-101 cancelled instead of O-100 fails it too)
    assert (db.before.passed, db.before.total, db.after.passed, db.after.total) == (n, n, n - failing, n)
    assert db.delta == pytest.approx((n - failing) / n - 1)
    better = compare_runs(mock_sample_run_dir, clean_run)
    assert [c.scenario for c in better.fail_to_pass] == FAILING and better.pass_to_fail == ()
    text = render_text(worse)
    assert "comparable: yes (same spec, template and data hashes)" in text
    assert (
        "  db_state_match: 100.0% (6/6 scenarios) [95% CI 61.0-100.0%] -> 33.3% (2/6 scenarios) "
        "[95% CI 9.7-70.0%]  -66.7 pt"
    ) in text
    low, high = newcombe_by_hand(2, 4, 0, 0)  # 2 pass in both, 4 only in A: Newcombe's paired interval
    assert (
        f"  overall: -66.7 pt [95% CI {100 * low:+.1f} to {100 * high:+.1f} pt], exact McNemar p = 0.125 "
        "(4 vs 0 discordant): " in text
    )
    assert "pass -> fail (4):\n  mock__cancel_by_model  [db_state_match]\n" in text
    assert "fail -> pass: none" in text
    # the model agent and the judge of the sample run: tokens per role, A -> B
    assert "  judge: - -> 6000+300" in text


def test_a_changed_spec_makes_runs_incomparable_and_is_named(
    clean_run: Path, mock_sample_spec: Path, tmp_path: Path
) -> None:
    spec = tmp_path / "spec"
    shutil.copytree(mock_sample_spec, spec)
    scenario = spec / "scenarios" / "shipped.yaml"
    scenario.write_text(scenario.read_text(encoding="utf-8").replace("description:", "description: (edited)"))
    (spec / "scenarios" / "late_by_model.yaml").unlink()
    other = _replay_run(tmp_path / "run", spec, ("mock__shipped_refusal", "mock__cancel_again"))
    c = compare_runs(clean_run, other)
    assert not c.comparable
    assert [(d.kind, d.path, d.change) for d in c.differences] == [
        ("spec", "scenarios/late_by_model.yaml", "only in A"),
        ("spec", "scenarios/shipped.yaml", "changed"),
    ]
    assert len(c.only_in_a) == len(ALL) - 2 and c.only_in_b == ()
    # two selections: a WARNING with the counts (before: a note, "each rate is over its own run's results")
    (warning,) = [w for w in c.warnings if "different selections" in w]
    assert warning.startswith(
        f"the runs ran different selections: A has {len(ALL)} scenarios, B 2 scenarios, 2 shared"
    )
    assert warning.endswith("the paired comparison (the verdict changes, whether a difference is real) "
                            "is over the 2 scenarios shared only")  # fmt: skip
    assert not any("each rate is over its own run's results" in n for n in c.notes)
    assert f"WARNING: {warning}\n" in render_text(c)
    assert (
        "comparable: NO (2 input files differ)\n  spec scenarios/late_by_model.yaml: only in A"
        in render_text(c)
    )


def test_runs_with_no_scenario_in_common_say_their_deltas_mean_nothing(
    mock_sample_spec: Path, tmp_path: Path
) -> None:
    """Before: two selections (or domains) with nothing in common printed "comparable: NO" with
    the file differences, then rates and deltas like any comparison's, and every result of each
    run on one line (500 names for a 10-trial run)."""
    a = _replay_run(tmp_path / "a", mock_sample_spec, ("mock__shipped_refusal",))
    b = _replay_run(tmp_path / "b", mock_sample_spec, ("mock__cancel_again", "mock__cancel_order"))
    c = compare_runs(a, b)
    assert any(w.startswith("the runs share no scenario") for w in c.warnings)
    text = render_text(c)
    assert "WARNING: the runs share no scenario (another domain or selection?)" in text
    assert "only in B (2): mock__cancel_again, mock__cancel_order\n" in text
    assert "is the difference real?" not in text  # nothing is paired: no empty heading
    assert not any("share no scenario" in w for w in compare_runs(a, a).warnings)
    # a long list: one entry a scenario, the first LISTED of them, then how many more
    names = tuple(f"s{i}#trial_{t}" for i in range(LISTED + 5) for t in (1, 2, 3))
    text = render_text(dataclasses.replace(c, only_in_b=names))
    assert f"only in B ({len(names)}): s0 (3 trials), s1 (3 trials), " in text
    assert f"s{LISTED - 1} (3 trials) and 5 more (--json lists them all)\n" in text


def test_a_verdict_the_stall_rule_forced_says_stalled(
    clean_run: Path, mock_sample_spec: Path, tmp_path: Path
) -> None:
    """Before: the min-agent-turns rule's part in a pass -> fail was not listed (a session cut
    after one agent turn showed only its other failed signals, or none)."""
    cut = _replay_run(tmp_path / "cut", mock_sample_spec, ("mock__shipped_refusal",), max_turns=1)
    c = compare_runs(clean_run, cut)
    [change] = c.pass_to_fail
    assert change.scenario == "mock__shipped_refusal" and change.failed_after[-1] == "stalled"
    assert f"  mock__shipped_refusal  [{', '.join(change.failed_after)}]\n" in render_text(c)
    assert c.to_json()["pass_to_fail"][0]["failed_after"][-1] == "stalled"


def test_json_and_html_outputs(clean_run: Path, mock_sample_run_dir: Path, tmp_path: Path, capsys) -> None:
    assert main(["compare", str(clean_run), str(mock_sample_run_dir), "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["comparable"] is True
    assert [c["scenario"] for c in body["pass_to_fail"]] == FAILING
    assert body["usage_b"]["roles"]["judge"]["prompt_tokens"] == 6000
    out = tmp_path / "c.html"
    assert main(["compare", str(clean_run), str(mock_sample_run_dir), "--html", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    assert "<script" not in page and "script-src 'none'" in html.unescape(page)
    assert all(name in page for name in FAILING)
    assert main(["compare", str(clean_run), str(tmp_path)]) == 2
    assert "no scored scenarios" in capsys.readouterr().err


async def test_a_voice_run_against_a_text_run_is_one_warning_line(tmp_path: Path, capsys) -> None:
    """Two small runs of one mock scenario, one of them an audio session (``--voice``, the tone
    stand-in): compare says so in one WARNING line, either way round; two text runs say nothing."""
    from engine.run.runner import run
    from engine.session.voice.link import VoiceConfig
    from engine.session.voice.run import VoiceRun
    from engine.session.voice.side import VoiceStyle
    from engine.session.voice.tts import ToneVoice
    from tests.conftest import MOCK_SPEC_DIR

    async def one(out: Path, voice: bool) -> Path:
        tone = ToneVoice()
        opts = run_options(
            MOCK_SPEC_DIR, MOCK_DATA_ROOT, scenarios=("mock__shipped_refusal",), output_dir=out, quiet=True,
            progress=False, voice=voice,
        )  # fmt: skip
        report = await run(opts, VoiceRun(VoiceConfig(tone), VoiceStyle(tone)) if voice else None)
        assert report.summary is not None and not report.scoring_errors
        return out

    text, text2, voice = (
        await one(tmp_path / "t", False),
        await one(tmp_path / "t2", False),
        await one(tmp_path / "v", True),
    )
    c = compare_runs(text, voice)
    assert c.comparable and c.warnings == (
        "run B is a voice run (--voice) and run A a text run: the agent heard speech in one and read "
        "text in the other, so a rate change may come from that alone",
    )
    warned = [line for line in render_text(c).splitlines() if "WARNING" in line or "voice run" in line]
    assert warned == [f"WARNING: {c.warnings[0]}"]
    assert compare_runs(voice, text).warnings[0].startswith("run A is a voice run (--voice) and run B a text")
    assert compare_runs(text, text2).warnings == () and compare_runs(voice, voice).warnings == ()
    assert "WARNING" not in render_text(compare_runs(text, text2))
    assert main(["compare", str(text), str(voice), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["warnings"] == list(c.warnings)
    assert main(["compare", str(text), str(voice), "--html", str(tmp_path / "c.html")]) == 0
    assert c.warnings[0] in html.unescape((tmp_path / "c.html").read_text(encoding="utf-8"))
    # a run.json without the setting (older): the results' audio sessions still tell
    older = shutil.copytree(voice, tmp_path / "older")
    record = json.loads((older / "run.json").read_text(encoding="utf-8"))
    del record["settings"]["voice"]
    (older / "run.json").write_text(json.dumps(record), encoding="utf-8")
    assert compare_runs(text, older).warnings == c.warnings


def test_runs_with_other_limits_or_scoring_rules_say_so(tmp_path: Path) -> None:
    """A run with another --max-turns (or scoring rule) is noted, setting by setting; two runs with
    the same settings note nothing."""
    from tests.conftest import MOCK_SPEC_DIR

    def one(out: Path, **extra) -> Path:
        report = run_cli(
            run_options(
                MOCK_SPEC_DIR, MOCK_DATA_ROOT, scenarios=("mock__shipped_refusal",), output_dir=out,
                quiet=True, progress=False, **extra,
            )
        )  # fmt: skip
        assert report.summary is not None
        return out

    plain, plain2, short = one(tmp_path / "a"), one(tmp_path / "b"), one(tmp_path / "c", max_turns=2)
    assert compare_runs(plain, plain2).notes == ()
    notes = compare_runs(plain, short).notes
    assert notes == ("--max-turns: A not set, B 2",)  # the option's name, not run.json's key and None
    assert "note: --max-turns: A not set, B 2" in render_text(compare_runs(plain, short))


def test_judge_settings_are_compared_only_where_a_judge_ran(tmp_path: Path) -> None:
    """Before: two runs without a judge noted ``--judge-base-url: A http://127.0.0.1:8011/v1, B not
    set``, a setting in effect in neither run. With a judge in both, it is still noted."""
    from engine.core.options import ScoringOptions
    from tests.conftest import MOCK_SPEC_DIR

    def one(out: Path, **scoring) -> Path:
        report = run_cli(
            run_options(
                MOCK_SPEC_DIR, MOCK_DATA_ROOT, scenarios=("mock__shipped_refusal",), output_dir=out,
                quiet=True, progress=False, scoring=ScoringOptions(**scoring),
            )
        )  # fmt: skip
        assert report.summary is not None
        return out

    url = "http://127.0.0.1:8011/v1"
    assert compare_runs(one(tmp_path / "a", judge_base_url=url), one(tmp_path / "b")).notes == ()
    from engine.results.compare import in_effect

    judged = {"scoring": {"judge_model": "j1", "judge_base_url": url}}
    other = {"scoring": {"judge_model": "j1", "judge_base_url": None}}
    assert in_effect("scoring.judge_base_url", judged, other)
    assert not in_effect("scoring.judge_base_url", judged, {"scoring": {"judge_model": None}})
    assert in_effect("scoring.judge_model", {}, {}) and in_effect("max_turns", {}, {})


def test_sizes_read_in_their_unit() -> None:
    """Found by a new user: `compare --html` said "(0.0 MB)" for a 13 KB page."""
    from engine.commands.console import size_text

    assert [size_text(n) for n in (820, 13_400, 4_200_000)] == ["820 bytes", "13 KB", "4.2 MB"]


def test_html_without_a_path_is_written_beside_run_b_and_said(
    clean_run: Path, mock_sample_run_dir: Path, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: ``--html`` alone wrote ``compare.html`` into the current directory."""
    run_b = tmp_path / "b"
    shutil.copytree(mock_sample_run_dir, run_b)
    here = tmp_path / "elsewhere"
    here.mkdir()
    monkeypatch.chdir(here)
    assert main(["compare", str(clean_run), str(run_b), "--html"]) == 0
    page = run_b / f"compare-{clean_run.name}.html"
    assert capsys.readouterr().out.startswith(f"compare: {page} (")
    assert all(name in page.read_text(encoding="utf-8") for name in FAILING)
    assert list(here.iterdir()) == []


def _interrupted_copy(run: Path, out: Path, keep: int) -> Path:
    """``run`` as an interrupted run leaves it (Ctrl-C, SIGTERM): ``keep`` of its results, the
    others gone and listed missing in summary.json, both records saying ``interrupted``."""
    copy = shutil.copytree(run, out)
    names = sorted(p.parent.name for p in copy.glob("*/metrics.json"))  # one trial: NAME/metrics.json
    for name in names[keep:]:
        shutil.rmtree(copy / name)
    summary = json.loads((copy / "summary.json").read_text(encoding="utf-8"))
    summary.update(interrupted=True, missing=names[keep:], results=keep)
    (copy / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    record = json.loads((copy / "run.json").read_text(encoding="utf-8"))
    record["invocations"][-1]["interrupted"] = True
    (copy / "run.json").write_text(json.dumps(record), encoding="utf-8")
    return copy


def test_an_interrupted_run_is_one_warning_line(clean_run: Path, tmp_path: Path, capsys) -> None:
    """Before: compare of an interrupted run (INCOMPLETE, results missing) warned of nothing."""
    cut = _interrupted_copy(clean_run, tmp_path / "cut", keep=len(ALL) - 2)
    said = (
        f"run B was interrupted: 2 results missing of its {len(ALL)} planned; "
        "the comparison covers only the results it has"
    )
    assert main(["compare", str(clean_run), str(cut)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert f"WARNING: {said}" in lines and not any("is incomplete" in line for line in lines)
    assert main(["compare", str(cut), str(clean_run), "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["interrupted"] == {"a": True, "b": False} and body["missing"] == {"a": 2, "b": 0}
    assert said.replace("run B", "run A") in body["warnings"]
    page = tmp_path / "c.html"
    assert main(["compare", str(clean_run), str(cut), "--html", str(page)]) == 0
    assert said in html.unescape(page.read_text(encoding="utf-8"))
    capsys.readouterr()
    assert main(["compare", str(clean_run), str(clean_run), "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["interrupted"] == {"a": False, "b": False} and not body["warnings"]


def test_a_run_interrupted_before_any_result_says_so(clean_run: Path, tmp_path: Path, capsys) -> None:
    """Before: ``no scored scenarios (not a run directory?)`` for a run folder with run.json and
    summary.json whose every session was cut."""
    cut = _interrupted_copy(clean_run, tmp_path / "cut", keep=0)
    assert main(["compare", str(clean_run), str(cut)]) == 2
    err = capsys.readouterr().err
    assert f"{cut}: the run has no scored results: it was interrupted before any session finished" in err, err
    assert "not a run directory" not in err
    summary = json.loads((cut / "summary.json").read_text(encoding="utf-8"))
    summary["interrupted"] = False
    (cut / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    record = json.loads((cut / "run.json").read_text(encoding="utf-8"))
    record["invocations"][-1]["interrupted"] = False
    (cut / "run.json").write_text(json.dumps(record), encoding="utf-8")
    assert main(["compare", str(clean_run), str(cut)]) == 2
    err = capsys.readouterr().err
    assert f"{cut}: the run has no scored results" in err and "was interrupted" not in err, err
