"""``--trials auto`` (issue #25 part 4) on a scripted flaky agent: the first two trials of every
scenario, then further trials only on the scenario whose verdicts disagree, up to MAX; the
summary says how many sessions were spent and why the run stopped; a resume keeps going."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from engine.core.records.intervals import STOP_MAX, STOP_TARGET
from engine.run.adaptive import parse_trials
from engine.run.runner import run
from engine.util.errors import UsageError
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR
from tests.mock_domain.flaky_agent import FlakyAgent, serving
from tests.runtime_helpers import run_options

FLAKY = "mock__late_delivery_credit"  # its even trials leave the credit out: they fail
STEADY = ("mock__cancel_order", "mock__shipped_refusal")


def _options(uri: str, out: Path, max_trials: int, width: float = 0.10, **more: object):
    return run_options(
        spec_dir=MOCK_SPEC_DIR,
        data_root=MOCK_DATA_ROOT,
        scenarios=(FLAKY, *STEADY),
        agent=uri,
        output_dir=out,
        trials=max_trials,
        adaptive_target_width=width,
        concurrency=3,
        progress=False,
        quiet=True,
        **more,
    )


def _trials(run_dir: Path) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for path in sorted(run_dir.glob("*/trial_*/metrics.json")):
        m = json.loads(path.read_text(encoding="utf-8"))
        out.setdefault(m["scenario_name"], []).append(m["trial"])
    return {name: sorted(ks) for name, ks in out.items()}


async def test_extra_trials_go_only_to_the_flaky_scenario(tmp_path: Path) -> None:
    agent = FlakyAgent({FLAKY})
    async with serving(agent) as uri:
        report = await run(_options(uri, tmp_path / "run", 5))
    assert not report.scoring_errors and not report.interrupted
    assert _trials(tmp_path / "run") == {FLAKY: [1, 2, 3, 4, 5], STEADY[0]: [1, 2], STEADY[1]: [1, 2]}
    assert sorted(agent.sessions) == sorted(
        [(FLAKY, k) for k in range(1, 6)] + [(s, k) for s in STEADY for k in (1, 2)]
    )
    body = json.loads((tmp_path / "run" / "summary.json").read_text(encoding="utf-8"))
    assert body["missing"] == []  # the trials an adaptive run did not plan are not missing
    adaptive = body["adaptive"]
    assert (adaptive["sessions"], adaptive["rounds"], adaptive["max_trials"]) == (9, 3, 5)
    assert adaptive["stopped"] == STOP_MAX and adaptive["width"] > 0.10
    assert adaptive["width"] == pytest.approx(body["overall"]["ci"]["high"] - body["overall"]["ci"]["low"])
    noise = body["noise"]
    assert noise["flaky_scenarios"] == [FLAKY] and noise["flaky"] == 1
    assert noise["per_scenario"][FLAKY] == {"passed": 3, "trials": 5, "rate": 0.6, "flaky": True}
    assert noise["per_scenario"][STEADY[0]] == {"passed": 2, "trials": 2, "rate": 1.0, "flaky": False}
    text = (tmp_path / "run" / "all_summary.txt").read_text(encoding="utf-8")
    assert "Adaptive trials: 9 sessions in 3 extra round(s), up to 5 trials per scenario" in text
    assert "Noise floor: 1/3 scenarios flaky (33.3%" in text and f"flaky: {FLAKY}" in text


async def test_a_wide_target_stops_after_the_first_two_trials(tmp_path: Path) -> None:
    agent = FlakyAgent({FLAKY})
    async with serving(agent) as uri:
        await run(_options(uri, tmp_path / "run", 6, width=1.0))
    assert _trials(tmp_path / "run") == {name: [1, 2] for name in (FLAKY, *STEADY)}
    adaptive = json.loads((tmp_path / "run" / "summary.json").read_text(encoding="utf-8"))["adaptive"]
    assert adaptive["stopped"] == STOP_TARGET and (adaptive["sessions"], adaptive["rounds"]) == (6, 0)


async def test_a_resume_completes_an_interrupted_round_and_goes_on(tmp_path: Path) -> None:
    agent = FlakyAgent({FLAKY})
    async with serving(agent) as uri:
        await run(_options(uri, tmp_path / "run", 4))
        # as if the run had been stopped during its second extra round, and a steady scenario's
        # first trials had not run either
        shutil.rmtree(tmp_path / "run" / FLAKY / "trial_3")
        shutil.rmtree(tmp_path / "run" / FLAKY / "trial_4")
        shutil.rmtree(tmp_path / "run" / STEADY[1] / "trial_2")
        agent.sessions.clear()
        report = await run(_options(uri, tmp_path / "run", 4, resume=tmp_path / "run"))
    assert sorted(agent.sessions) == [(FLAKY, 3), (FLAKY, 4), (STEADY[1], 2)]
    assert _trials(tmp_path / "run") == {FLAKY: [1, 2, 3, 4], STEADY[0]: [1, 2], STEADY[1]: [1, 2]}
    assert report.summary is not None and report.summary.adaptive is not None
    assert report.summary.adaptive.sessions == 8 and report.summary.missing == ()


@pytest.mark.parametrize(
    ("text", "parsed"), [("3", (3, False)), ("auto", (8, True)), ("AUTO:5", (5, True)), ("auto:2", (2, True))]
)
def test_trials_are_a_count_or_auto(text: str, parsed: tuple[int, bool]) -> None:
    assert parse_trials(text) == parsed


@pytest.mark.parametrize("text", ["0", "auto:1", "auto:", "two", "auto:x"])
def test_other_trials_are_one_clear_line(text: str) -> None:
    with pytest.raises(UsageError, match="give a number of trials"):
        parse_trials(text)


def test_the_cli_refuses_a_target_width_without_auto(capsys: pytest.CaptureFixture[str]) -> None:
    from cli import main

    assert main(["run", str(MOCK_SPEC_DIR), "--trials", "2", "--target-width", "0.2"]) == 2
    err = capsys.readouterr().err
    assert "--target-width goes with --trials auto" in err and "Traceback" not in err


@pytest.mark.parametrize("width", ["nan", "NaN", "inf"])
def test_a_target_width_of_nan_is_bad_input(width: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Repro 6: click's FloatRange lets NaN through every bound."""
    from cli import main

    assert main(["run", str(MOCK_SPEC_DIR), "--trials", "auto:3", "--target-width", width]) == 2
    err = capsys.readouterr().err
    assert "--target-width" in err and "Traceback" not in err


async def test_a_resume_killed_during_an_extra_round_finishes_the_cut_round_and_goes_on(
    tmp_path: Path,
) -> None:
    """Repro 5: SIGKILLed during an extra round (every first trial done), the resume ran 0
    sessions, wrote adaptive.json with zeros and exited 0."""
    agent = FlakyAgent({FLAKY})
    run_dir = tmp_path / "run"
    async with serving(agent) as uri:
        await run(_options(uri, run_dir, 4))
        # as if killed during the first extra round: its trial not stored, adaptive.json as
        # that round's decision wrote it
        shutil.rmtree(run_dir / FLAKY / "trial_3")
        shutil.rmtree(run_dir / FLAKY / "trial_4")
        cut = {"sessions": 6, "rounds": 1, "max_trials": 4, "target_width": 0.1, "width": 0.5}
        (run_dir / "adaptive.json").write_text(json.dumps({**cut, "stopped": "interrupted"}))
        (run_dir / "summary.json").unlink()
        agent.sessions.clear()
        report = await run(_options(uri, run_dir, 4, resume=run_dir))
    assert sorted(agent.sessions) == [(FLAKY, 3), (FLAKY, 4)]
    assert _trials(run_dir)[FLAKY] == [1, 2, 3, 4]
    adaptive = json.loads((run_dir / "adaptive.json").read_text(encoding="utf-8"))
    assert (adaptive["sessions"], adaptive["rounds"], adaptive["stopped"]) == (8, 2, STOP_MAX)
    assert report.summary is not None and report.summary.missing == ()
